package limits

import (
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// A probe child is the supervisor's own binary re-executed through
// /proc/self/exe. It is recognised here, in an init function, rather than by
// a call the host program must remember to make: if the check were missing,
// the re-exec would start a second supervisor. Both the argv[0] marker and
// the environment variable must match, so nothing else triggers it.
const (
	probeArg0 = "cyber-limits-probe"
	probeEnv  = "CYBER_LIMITS_PROBE_CHILD"
)

// Probe child modes.
const (
	childExit  = "exit"  // exit 0 at once (namespace probes)
	childAlloc = "alloc" // after the gate, touch probeAllocBytes
	childFork  = "fork"  // after the gate, fork until the kernel refuses
	childHang  = "hang"  // block on the gate until killed
)

// Exit codes of probe children.
const (
	childOK          = 0
	childForkRefused = 10
	childGateClosed  = 111 // the parent closed the gate without releasing
)

// probeAllocBytes is what the alloc child touches: eight times the probe
// group's limit, so a working limit kills it within a few milliseconds.
const probeAllocBytes = 64 << 20

// gateFD is the read end of the gate pipe (the first ExtraFiles entry).
const gateFD = 3

func init() {
	if len(os.Args) == 0 || os.Args[0] != probeArg0 {
		return
	}
	if mode := os.Getenv(probeEnv); mode != "" {
		os.Exit(runProbeChild(mode))
	}
}

func runProbeChild(mode string) int {
	if mode == childExit {
		return childOK
	}
	// The gate: block until the parent has placed us in every group.
	gate := os.NewFile(gateFD, "gate")
	var b [1]byte
	if n, _ := gate.Read(b[:]); n != 1 {
		return childGateClosed
	}
	switch mode {
	case childAlloc:
		buf := make([]byte, probeAllocBytes)
		for i := 0; i < len(buf); i += 4096 {
			buf[i] = 1
		}
		runtime.KeepAlive(buf)
		return childOK
	case childFork:
		return forkUntilRefused()
	}
	return 2
}

// probeForks bounds the fork loop: the probe group's pids.max
// (probePidsLimit) must stop it well before.
const probeForks = 4 * probePidsLimit

// forkUntilRefused forks children that wait forever until the kernel
// refuses a fork, then kills and reaps them, so no orphan outlives the
// probe. Only raw syscalls are used: the Go runtime's own thread creation
// fails at the limit too, and it retries for about a second, so the child
// must never give the scheduler a reason to start a thread.
func forkUntilRefused() int {
	var pids [probeForks]uintptr
	n, code := 0, childOK
	for ; n < len(pids); n++ {
		pid, errno := rawForkPaused()
		if errno != 0 {
			code = childForkRefused
			break
		}
		pids[n] = pid
	}
	for i := 0; i < n; i++ {
		unix.RawSyscall(unix.SYS_KILL, pids[i], uintptr(unix.SIGKILL), 0)
		unix.RawSyscall6(unix.SYS_WAIT4, pids[i], 0, 0, 0, 0, 0)
	}
	return code
}

// rawForkPaused forks with a bare clone(SIGCHLD); the child only waits in
// ppoll until it is killed. os/exec is not used because it needs runtime
// threads, which the pids limit refuses. The child runs nothing but raw
// system calls, which is why this function must not be instrumented or
// grow its stack.
//
//go:norace
//go:nosplit
func rawForkPaused() (uintptr, unix.Errno) {
	pid, _, errno := unix.RawSyscall6(unix.SYS_CLONE, uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
	if errno == 0 && pid == 0 {
		for {
			unix.RawSyscall6(unix.SYS_PPOLL, 0, 0, 0, 0, 0, 0)
		}
	}
	return pid, errno
}
