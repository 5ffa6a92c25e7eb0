package gate

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// applyLandlock enforces the supervisor's ruleset on this thread (and so
// on the worker it execs). Callers have set no_new_privs already; the
// rule paths are jail paths, so the jail is built.
func applyLandlock(l *Landlock) error {
	attr := rulesetAttr{fs: l.HandledFS, net: l.HandledNet, scoped: l.Scoped}
	// Older ABIs know a shorter attribute: pass only the fields they have.
	size := unsafe.Sizeof(attr)
	switch {
	case l.ABI < 4:
		size = unsafe.Offsetof(attr.net)
	case l.ABI < 6:
		size = unsafe.Offsetof(attr.scoped)
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("landlock: create ruleset (ABI %d): %w", l.ABI, errno)
	}
	defer unix.Close(int(fd))
	for _, r := range l.Rules {
		if err := addPathRule(int(fd), r); err != nil {
			return err
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("landlock: restrict self: %w", errno)
	}
	return nil
}

// rulesetAttr is struct landlock_ruleset_attr up to ABI 7 (newer fields
// stay zero by not being passed).
type rulesetAttr struct{ fs, net, scoped uint64 }

func addPathRule(ruleset int, r LandlockRule) error {
	pfd, err := unix.Open(r.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("landlock: open %s: %w", r.Path, err)
	}
	defer unix.Close(pfd)
	pb := unix.LandlockPathBeneathAttr{Allowed_access: r.Access, Parent_fd: int32(pfd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&pb)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("landlock: rule %s (access %#x): %w", r.Path, r.Access, errno)
	}
	return nil
}
