package sandbox

import (
	"fmt"
	"sync"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/sandbox/gate"
)

// deniedSyscalls fail with EPERM. The worker is a Go program that computes
// and talks to its host over one unix socket: it has no business with the
// mount table, other processes, the kernel's global state, or identities.
// Names missing on the running architecture are skipped.
var deniedSyscalls = []string{
	// mount table and namespaces
	"mount", "umount", "umount2", "pivot_root", "chroot", "setns", "unshare",
	"fsopen", "fsconfig", "fsmount", "fspick", "open_tree", "move_mount", "mount_setattr",
	// other processes and kernel memory
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
	"userfaultfd", "perf_event_open", "bpf",
	// kernel modules, kexec, reboot, swap
	"init_module", "finit_module", "delete_module", "create_module",
	"kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff",
	// keys
	"keyctl", "add_key", "request_key",
	// file handles bypass path permissions
	"open_by_handle_at", "name_to_handle_at",
	// global knobs
	"acct", "quotactl", "quotactl_fd", "syslog", "settimeofday", "clock_settime",
	"clock_adjtime", "adjtimex", "sethostname", "setdomainname", "iopl", "ioperm",
	"lookup_dcookie", "vhangup", "uselib", "fanotify_init", "nfsservctl",
	"mknod", "mknodat",
	// io_uring can open sockets and files without the syscalls filtered here
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	// identities
	"setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid",
	"setgroups", "setfsuid", "setfsgid",
}

// cloneNamespaceFlags are the CLONE_NEW* bits clone(2) accepts in its first
// argument (CLONE_NEWTIME shares its bit with CSIGNAL and is clone3-only).
const cloneNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// seccompPrograms are compiled once per supervisor and shipped to every
// init ready to load, so that neither init carries a policy compiler.
var seccompPrograms = sync.OnceValues(compileSeccomp)

// compileSeccomp returns the two programs, in load order. The first
// refuses every syscall made through a foreign ABI (i386 int 0x80 on
// amd64): go-seccomp-bpf lets those through to its default action, which
// would bypass the policy. The second is the policy itself: default allow,
// the deny list above, socket only for AF_UNIX (go-plugin's transport),
// clone without namespace flags, and clone3 reported as unimplemented so
// that runtimes fall back to the filterable clone.
func compileSeccomp() ([]gate.BPF, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	var names []string
	for _, n := range deniedSyscalls {
		if _, ok := info.SyscallNames[n]; ok {
			names = append(names, n)
		}
	}
	eperm := seccomp.ActionErrno // go-seccomp-bpf adds EPERM to a bare ActionErrno
	policy := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Names: names, Action: eperm},
			{
				NamesWithCondtions: []seccomp.NameWithConditions{
					{Name: "socket", Conditions: seccomp.ArgumentConditions{
						{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX},
					}},
					{Name: "clone", Conditions: seccomp.ArgumentConditions{
						{Argument: 0, Operation: seccomp.BitsSet, Value: cloneNamespaceFlags},
					}},
				},
				Action: eperm,
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
