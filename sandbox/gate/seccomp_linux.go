package gate

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// loadSeccomp installs one program on the calling thread (no_new_privs is
// already set). Flag 0: this thread only; it is the one that execs the
// worker.
func loadSeccomp(p BPF) error {
	prog := make([]unix.SockFilter, len(p))
	for i, in := range p {
		prog[i] = unix.SockFilter{Code: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return errno
	}
	return nil
}
