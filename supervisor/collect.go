package supervisor

import "runtime"

// largeSpec is the size from which a job spec's copies are collected as
// soon as they die rather than left to the garbage collector's pace.
//
// The daemon runs with GOGC=400 (cmd/cyber-supervisor, tuneGC): its live
// heap is a few MB, and collecting at five times it saves CPU on every
// small job. A verify job's spec carries its artifact inline (up to 48
// MiB of base64), and its copies are live together for a moment (the
// request, the decoded artifact, the canonical form, the store's write):
// a collection that runs then sets the next one at five times all of
// that, and every later job's garbage piles up to it. So the copies of a
// large spec are collected when they die: after admission (the request's
// bytes), after the store's write, and when its attempt ends (the spec,
// the artifact, the send to the worker, the verification). A collection
// of the daemon's small heap costs a few milliseconds; a large spec
// costs tens to hundreds of milliseconds to parse, store and send.
const largeSpec = 1 << 20

// collectLarge collects the garbage when size, that of a job spec whose
// copies just died, is largeSpec or more.
func collectLarge(size int) {
	if size >= largeSpec {
		runtime.GC()
	}
}
