package gate

import (
	"errors"
	"fmt"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// applyLandlock restricts this thread (and so the worker it execs) to the
// jail's layout: execute and read the worker binary, read /proc and the
// random devices, write only /work, /tmp, /run/plugin and /dev/null; no TCP
// bind or connect (ABI >= 4); no signals or abstract sockets out of the
// domain (ABI >= 6). It returns the ABI the ruleset was built for.
//
// Callers have set no_new_privs already. The ruleset is built with
// NewRulesetFD and enforced on the current, locked thread only: the execve
// that follows carries it over, and no other thread ever runs worker code.
func applyLandlock(jailed, required bool) (int, error) {
	abi, err := llsyscall.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		if required {
			return 0, fmt.Errorf("landlock: required but unavailable: %v", err)
		}
		return 0, nil
	}
	if !jailed {
		return 0, errors.New("landlock: only supported inside the jail")
	}
	// Best effort against the newest known ABI: on older kernels the
	// ruleset is downgraded to what they can enforce, never refused.
	cfg := landlock.V11.BestEffort()
	rules := []landlock.Rule{
		landlock.ROFiles(WorkerPath),
		landlock.RODirs("/proc"),
		landlock.ROFiles("/dev/zero", "/dev/random", "/dev/urandom"),
		landlock.RWFiles("/dev/null", "/dev/full"),
		landlock.RWDirs(WorkDir, TmpDir, SocketDir),
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return 0, fmt.Errorf("landlock: build ruleset: %w", err)
	}
	if fd < 0 {
		if required {
			return 0, fmt.Errorf("landlock: nothing enforceable on ABI %d", abi)
		}
		return 0, nil
	}
	defer unix.Close(fd)
	if err := llsyscall.LandlockRestrictSelf(fd, flags); err != nil {
		return 0, fmt.Errorf("landlock: restrict self: %w", err)
	}
	if abi > 11 {
		abi = 11 // the newest ABI this go-landlock knows and applied
	}
	return abi, nil
}
