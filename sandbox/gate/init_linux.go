package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

var entered time.Time

// MaybeRun must be the first statement of the worker's main (and of a
// test binary's TestMain that serves as a worker). When the process was
// started by this package as a gated init it never returns: it either execs
// the worker or exits non-zero. Otherwise it returns at once.
func MaybeRun() {
	if len(os.Args) < 3 || os.Args[1] != Arg {
		return
	}
	// Credentials, no_new_privs, Landlock and seccomp below are applied to
	// this thread only and inherited through its execve.
	runtime.LockOSThread()
	entered = time.Now()
	fd, err := strconv.Atoi(os.Args[2])
	if err != nil || fd < 3 {
		fmt.Fprintln(os.Stderr, "sandbox init: bad gate descriptor")
		os.Exit(ExitSetup)
	}
	os.Exit(runInit(fd))
}

func runInit(fd int) int {
	gate := os.NewFile(uintptr(fd), "gate")
	if gate == nil {
		return ExitSetup
	}
	raw, err := io.ReadAll(io.LimitReader(gate, MaxConfigBytes+1))
	opened := time.Now()
	if err != nil || len(raw) == 0 {
		// The supervisor decided not to launch (or died): run nothing.
		return ExitNoConfig
	}
	fail := func(err error) int {
		b, _ := json.Marshal(Status{Error: err.Error()})
		_, _ = gate.Write(b)
		return ExitSetup
	}
	cfg, err := Decode(raw)
	if err != nil {
		return fail(err)
	}

	st, err := setupInit(cfg)
	if err != nil {
		return fail(err)
	}
	st.GateUS = opened.Sub(entered).Microseconds()
	st.HardenUS = time.Since(opened).Microseconds() - st.JailUS
	b, _ := json.Marshal(st)
	if _, err := gate.Write(b); err != nil {
		// The supervisor is gone or gave up on us; do not run the worker.
		return ExitSetup
	}
	err = syscall.Exec(cfg.Path, cfg.Args, cfg.Env)
	return fail(fmt.Errorf("execve %s: %w", cfg.Path, err))
}

// setupInit runs between the gate and the execve, in the order that keeps
// every step possible: mounts need capabilities, Landlock needs
// no_new_privs, and seccomp goes last because it denies mount and friends.
func setupInit(cfg *Config) (Status, error) {
	var st Status
	if cfg.Netns != 0 {
		if err := unix.Setns(cfg.Netns, unix.CLONE_NEWNET); err != nil {
			return st, fmt.Errorf("setns(network namespace, fd %d): %w", cfg.Netns, err)
		}
		unix.Close(cfg.Netns)
	}
	if cfg.CgroupNS {
		if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
			return st, fmt.Errorf("unshare(CLONE_NEWCGROUP): %w", err)
		}
	}
	if cfg.Jail != nil {
		begin := time.Now()
		if err := buildJail(cfg.Jail, cfg.Identity); err != nil {
			return st, err
		}
		st.Jail = true
		st.JailUS = time.Since(begin).Microseconds()
	}
	if cfg.Hostname != "" {
		if err := unix.Sethostname([]byte(cfg.Hostname)); err != nil {
			return st, fmt.Errorf("sethostname: %w", err)
		}
	}
	for _, rl := range cfg.Rlimits {
		lim := syscall.Rlimit{Cur: rl.Value, Max: rl.Value}
		// syscall.Setrlimit (not x/sys) so that Exec does not restore the
		// runtime's saved RLIMIT_NOFILE over ours.
		if err := syscall.Setrlimit(int(rl.Resource), &lim); err != nil {
			return st, fmt.Errorf("setrlimit %d=%d: %w", rl.Resource, rl.Value, err)
		}
	}
	// Descriptors the supervisor leaked into us must not reach the worker;
	// the gate itself is close-on-exec too, which is how the parent learns
	// that execve succeeded.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return st, fmt.Errorf("close_range: %w", err)
	}
	if cfg.Harden {
		if err := dropBoundingSet(); err != nil {
			return st, err
		}
	}
	if id := cfg.Identity; id != nil {
		if err := switchIdentity(id); err != nil {
			return st, err
		}
	}
	if !cfg.Harden {
		return st, nil
	}
	if err := clearCapabilities(); err != nil {
		return st, err
	}
	st.CapsDropped = true
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return st, fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	st.NoNewPrivs = true
	if cfg.Landlock != nil {
		if err := applyLandlock(cfg.Landlock); err != nil {
			return st, err
		}
		st.LandlockABI = int(cfg.Landlock.ABI)
	}
	for i, p := range cfg.Seccomp {
		if err := loadSeccomp(p); err != nil {
			return st, fmt.Errorf("seccomp: program %d: %w", i, err)
		}
		st.Seccomp = true
	}
	return st, nil
}

// dropBoundingSet empties the bounding and ambient sets of this thread
// (which needs CAP_SETPCAP, so it comes before an identity switch), so
// the execve grants the worker no capability even when it runs as uid 0.
func dropBoundingSet() error {
	for c := 0; c <= 63; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if errors.Is(err, unix.EINVAL) {
				break // past the kernel's last capability
			}
			return fmt.Errorf("prctl(PR_CAPBSET_DROP, %d): %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("prctl(PR_CAP_AMBIENT_CLEAR_ALL): %w", err)
	}
	return nil
}

// switchIdentity makes this thread the unprivileged id: no supplementary
// groups, then the gid, then the uid (which empties the permitted and
// effective sets). Raw syscalls: this thread only, which is what execve
// passes on (the Go wrappers would change every thread). The uid's change
// clears the parent-death signal, which is armed again: without it the
// worker outlives a supervisor that dies (were it gone already, the
// status write to it fails and there is no execve).
func switchIdentity(id *Identity) error {
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return fmt.Errorf("setgroups(0): %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(id.GID), uintptr(id.GID), uintptr(id.GID)); e != 0 {
		return fmt.Errorf("setresgid(%d): %w", id.GID, e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(id.UID), uintptr(id.UID), uintptr(id.UID)); e != 0 {
		return fmt.Errorf("setresuid(%d): %w", id.UID, e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0); e != 0 {
		return fmt.Errorf("prctl(PR_SET_PDEATHSIG): %w", e)
	}
	return nil
}

// clearCapabilities empties the effective, permitted and inheritable sets
// (already empty after a switch to a non-zero uid).
func clearCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}
