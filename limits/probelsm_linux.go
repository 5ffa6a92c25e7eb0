package limits

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// probeLandlock returns the Landlock ABI version (0 if unavailable) and,
// when 0, why.
func probeLandlock() (int, string) {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errno == 0 && int(abi) > 0:
		return int(abi), ""
	case errno == unix.ENOSYS:
		return 0, "kernel built without Landlock (ENOSYS)"
	case errno == unix.EOPNOTSUPP:
		return 0, "Landlock is disabled at boot (not in lsm=)"
	case errno != 0:
		return 0, fmt.Sprintf("landlock_create_ruleset: %v", errno)
	}
	return 0, "landlock_create_ruleset returned no ABI version"
}

// probeSeccomp installs an allow-all filter on a throw-away thread: the
// goroutine stays locked to its thread and exits, so the Go runtime
// destroys the thread together with its filter and no_new_privs bit, and
// no other thread of the supervisor is affected.
func probeSeccomp() (bool, string) {
	type res struct {
		ok  bool
		why string
	}
	ch := make(chan res, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread must die with this goroutine.
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			ch <- res{false, fmt.Sprintf("prctl(PR_SET_NO_NEW_PRIVS): %v", err)}
			return
		}
		filter := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}
		prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
		_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog)))
		runtime.KeepAlive(filter)
		if errno != 0 {
			if errors.Is(errno, unix.EINVAL) || errors.Is(errno, unix.ENOSYS) {
				ch <- res{false, fmt.Sprintf("kernel without seccomp filter support (%v)", errno)}
				return
			}
			ch <- res{false, fmt.Sprintf("seccomp(SET_MODE_FILTER): %v", errno)}
			return
		}
		mode, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
		if err != nil || mode != 2 {
			ch <- res{false, fmt.Sprintf("PR_GET_SECCOMP after installing a filter: mode %d, %v", mode, err)}
			return
		}
		ch <- res{true, ""}
	}()
	r := <-ch
	return r.ok, r.why
}
