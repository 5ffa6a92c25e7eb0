package sandbox

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
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

// seccompDenied is the action for everything outside the allowlist. A
// build with the seccomptrace tag logs and allows instead, which is how
// the allowlist is derived (scripts/seccomp-trace.sh); production builds
// cannot switch it.
var seccompDenied = seccomp.ActionErrno // go-seccomp-bpf adds EPERM to a bare ActionErrno

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

// knownSyscall reports whether name is a syscall of the running
// architecture (for validating Config.SeccompAllow).
func knownSyscall(name string) bool {
	info, err := arch.GetInfo("")
	if err != nil {
		return false
	}
	_, ok := info.SyscallNames[name]
	return ok
}

// compileSeccomp returns the two programs, in load order. The first
// refuses every syscall made through a foreign ABI (i386 int 0x80 on
// amd64): go-seccomp-bpf sends those to the policy's default action. The
// second is the policy itself: the allowlist above (and extra), socket
// only for AF_UNIX, clone only without namespace flags, prctl only for
// PR_SET_VMA (the runtime names its memory; nothing else), clone3 reported
// as unimplemented so that runtimes fall back to the filterable clone, and
// EPERM for the rest, so that a worker reports a clean error instead of
// dying.
func compileSeccomp(extra []string) ([]gate.BPF, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	var names []string
	for _, n := range slices.Concat(workerSyscalls, extra) {
		if _, ok := info.SyscallNames[n]; ok && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	policy := seccomp.Policy{
		DefaultAction: seccompDenied,
		Syscalls: []seccomp.SyscallGroup{
			{Names: names, Action: seccomp.ActionAllow},
			{
				NamesWithCondtions: []seccomp.NameWithConditions{
					{Name: "socket", Conditions: seccomp.ArgumentConditions{
						{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_UNIX},
					}},
					{Name: "clone", Conditions: seccomp.ArgumentConditions{
						{Argument: 0, Operation: seccomp.BitsNotSet, Value: cloneNamespaceFlags},
					}},
					{Name: "prctl", Conditions: seccomp.ArgumentConditions{
						{Argument: 0, Operation: seccomp.Equal, Value: unix.PR_SET_VMA},
					}},
				},
				Action: seccomp.ActionAllow,
			},
			{Names: []string{"clone3"}, Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)},
		},
	}
	insts, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp: assemble policy: %w", err)
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("seccomp: assemble BPF: %w", err)
	}
	prog := make(gate.BPF, len(raw))
	for i, r := range raw {
		prog[i] = gate.Instruction{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return []gate.BPF{archGuard(uint32(info.ID)), prog}, nil
}

// archGuard answers ENOSYS to any syscall whose audit arch is not native.
func archGuard(native uint32) gate.BPF {
	const archOffset = 4 // offsetof(struct seccomp_data, arch)
	return gate.BPF{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: archOffset},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 1, Jf: 0, K: native},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
}
