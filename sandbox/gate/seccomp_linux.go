package gate

import (
	"fmt"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
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

// loadSeccomp installs two filters on the calling thread (no_new_privs is
// already set). The first refuses every syscall made through a foreign ABI
// (i386 int 0x80 on amd64): go-seccomp-bpf lets those through to its default
// action, which would bypass the policy. The second is the policy itself:
// default allow, the deny list above, socket only for AF_UNIX (go-plugin's
// transport), clone without namespace flags, and clone3 reported as
// unimplemented so that runtimes fall back to the filterable clone.
func loadSeccomp() error {
	info, err := arch.GetInfo("")
	if err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	if err := loadArchFilter(uint32(info.ID)); err != nil {
		return err
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
	// Flag 0: this thread only; it is the one that execs the worker.
	if err := seccomp.LoadFilter(seccomp.Filter{Policy: policy}); err != nil {
		return fmt.Errorf("seccomp: load policy: %w", err)
	}
	return nil
}

func loadArchFilter(native uint32) error {
	const archOffset = 4 // offsetof(struct seccomp_data, arch)
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: archOffset},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 1, Jf: 0, K: native},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return fmt.Errorf("seccomp: load arch filter: %w", errno)
	}
	return nil
}
