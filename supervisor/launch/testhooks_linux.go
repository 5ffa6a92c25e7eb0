package launch

// WidenSeccompForTests adds syscalls to the allowlist of the workers
// launched after it. Tests only: it lets a test reach a defense that sits
// behind the allowlist (the socket pinning) with an attack the allowlist
// would stop first. Nothing outside tests calls it.
func (l *ProcessLauncher) WidenSeccompForTests(syscalls ...string) {
	l.seccompExtra = append(l.seccompExtra, syscalls...)
}

// ReplaceWorkerForTests makes the launches after it start the binary at
// path, without describing it: tests only, for a hostile worker behind
// the description of an honest one (what a worker binary replaced under
// a running launcher would be).
func (l *ProcessLauncher) ReplaceWorkerForTests(path string) {
	l.cfg.WorkerPath = path
}
