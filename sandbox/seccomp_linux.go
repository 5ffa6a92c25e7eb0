package sandbox

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/sandbox/gate"
)

// workerSyscalls is the allowlist: what nox-worker was seen to call in
// its jail over the test corpus (scripts/seccomp-trace.sh), plus the
// init's own last steps (its status write and the execve of the worker)
// and the vDSO fallbacks of the clock. Every other syscall fails with
// EPERM. docs/sandbox.md gives the reason for each entry; names missing on
// the running architecture are skipped.
var workerSyscalls = []string{
	// the init's last steps, then the worker's exit
	"execve", "exit", "exit_group",
	// Go runtime: memory, threads, signals, scheduling
	"mmap", "munmap", "madvise", "futex", "nanosleep", "sched_yield", "sched_getaffinity",
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack", "restart_syscall",
	"getpid", "gettid", "tgkill", "arch_prctl", "prlimit64", "getrandom",
	// clocks: the vDSO answers these without a syscall unless the host's
	// clock source cannot be read from user space
	"clock_gettime", "clock_getres", "gettimeofday", "time",
	// netpoller and descriptors
	"epoll_create1", "epoll_ctl", "epoll_pwait", "eventfd2", "read", "write", "close", "fcntl",
	// files: the runtime's /proc and /sys reads at start, the work dir and
	// the artifact's publication (temp file, fsync, no-replace rename)
	"openat", "fstat", "newfstatat", "fsync", "renameat2", "unlinkat",
	// go-plugin's unix socket: the worker listens, the supervisor connects
	"bind", "listen", "accept4", "getsockname", "setsockopt",
}

// cloneNamespaceFlags are the CLONE_NEW* bits clone(2) accepts in its first
// argument (CLONE_NEWTIME shares its bit with CSIGNAL and is clone3-only).
const cloneNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// seccompPrograms are compiled once per supervisor and per extra set (see
// Config.SeccompAllow) and shipped to every init ready to load, so that
// neither init carries a policy compiler.
var (
	seccompMu    sync.Mutex
	seccompCache = map[string][]gate.BPF{}
)

func seccompPrograms(extra []string) ([]gate.BPF, error) {
	key := strings.Join(extra, ",")
	seccompMu.Lock()
	defer seccompMu.Unlock()
	if p, ok := seccompCache[key]; ok {
		return p, nil
	}
	p, err := compileSeccomp(extra)
	if err != nil {
		return nil, err
	}
	seccompCache[key] = p
	return p, nil
}

// seccompArgChecks are the syscalls allowed only with a given first
// argument: socket for AF_UNIX, clone without namespace flags, prctl for
// PR_SET_VMA (the runtime names its memory; nothing else).
var seccompArgChecks = [...]struct {
	name  string
	op    argOp
	value uint64
}{
	{"socket", argEqual, unix.AF_UNIX},
	{"clone", argBitsClear, cloneNamespaceFlags},
	{"prctl", argEqual, unix.PR_SET_VMA},
}

// seccompUnimplemented are answered ENOSYS: clone3 passes its flags in
// memory, out of the filter's reach, and runtimes that see ENOSYS fall
// back to clone, whose flags the filter checks.
var seccompUnimplemented = [...]string{"clone3"}

// errSeccompArch is the error of compileSeccomp on an architecture
// without a syscall table (seccomp_table_linux_other.go).
var errSeccompArch = errors.New("seccomp: unsupported architecture")

// compileSeccomp returns the two programs, in load order. The first
// refuses every syscall made through a foreign ABI (i386 int 0x80 on
// amd64) with ENOSYS. The second is the policy itself (seccompPolicy):
// the allowlist above (and extra, names unknown on this architecture
// skipped), the argument checks, clone3 reported as unimplemented, and
// seccompDenied for the rest.
func compileSeccomp(extra []string) ([]gate.BPF, error) {
	if seccompAuditArch == 0 {
		return nil, errSeccompArch
	}
	var allowed []uint32
	for _, n := range slices.Concat(workerSyscalls, extra) {
		if nr, ok := syscallNumber(n); ok && !slices.Contains(allowed, nr) {
			allowed = append(allowed, nr)
		}
	}
	var checks []argCheck
	for _, c := range seccompArgChecks {
		nr, ok := syscallNumber(c.name)
		if !ok {
			return nil, fmt.Errorf("%w: no %s", errSeccompArch, c.name)
		}
		checks = append(checks, argCheck{nr: nr, arg: 0, op: c.op, value: c.value})
	}
	var enosys []uint32
	for _, n := range seccompUnimplemented {
		nr, ok := syscallNumber(n)
		if !ok {
			return nil, fmt.Errorf("%w: no %s", errSeccompArch, n)
		}
		enosys = append(enosys, nr)
	}
	prog, err := seccompPolicy(allowed, checks, enosys)
	if err != nil {
		return nil, fmt.Errorf("seccomp: assemble policy: %w", err)
	}
	guard, err := archGuard(seccompAuditArch)
	if err != nil {
		return nil, fmt.Errorf("seccomp: assemble arch guard: %w", err)
	}
	return []gate.BPF{guard, prog}, nil
}

// archGuard answers ENOSYS to any syscall whose audit arch is not native.
func archGuard(native uint32) (gate.BPF, error) {
	var a bpfAsm
	requireArch(&a, native, seccompENOSYS)
	a.ret(seccompAllow)
	return a.assemble()
}
