package sandbox

import (
	"slices"
	"strings"
)

// The per-architecture files seccomp_table_linux_*.go hold syscallTable,
// seccompAuditArch and x32SyscallBit. They are generated from
// go-seccomp-bpf's arch tables by a test, which also fails when they are
// stale; the supervisor does not link go-seccomp-bpf, whose arch package
// built maps of every architecture at every start.
//
//go:generate go test -run ^TestSyscallTablesGenerated$ . -args -update

// syscallEntry is one row of syscallTable: a name and its number on the
// running architecture. The table is a sorted array literal, laid out by
// the linker, so a lookup costs nothing at start.
type syscallEntry struct {
	name string
	nr   uint32
}

// syscallNumber returns the number of the syscall name on the running
// architecture.
func syscallNumber(name string) (uint32, bool) {
	i, ok := slices.BinarySearchFunc(syscallTable[:], name, func(e syscallEntry, n string) int {
		return strings.Compare(e.name, n)
	})
	if !ok {
		return 0, false
	}
	return syscallTable[i].nr, true
}

// knownSyscall reports whether name is a syscall of the running
// architecture (for validating Config.SeccompAllow).
func knownSyscall(name string) bool {
	_, ok := syscallNumber(name)
	return ok
}
