package supervisor

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// The host paths a jailed worker's init must reach as the worker's own,
// unprivileged uid: the jail's mount point and the per-client socket dir
// (go-plugin makes it 0700 and the sandbox hands it to the worker). They
// live in one runtime dir per home, outside the home, which stays closed
// (0700) to everyone else:
//
//	/run/cyber-supervisor-<12 hex of the home's SHA-256>/   0711 root
//	    s/   socket dirs, one per worker (0700, the worker's uid)   0711
//	    j/   the jail's mount point, always empty on the host         0711
//
// Search-only (0711) lets the worker's uid resolve exactly these names
// and list nothing. A supervisor that is not root runs unisolated workers
// as itself and keeps both under its home (<home>/run, <home>/jail).
type workerDirs struct {
	runtime string // "" when the dirs are under the home
	sockets string
	jail    string
}

// runtimeParent is where root supervisors keep their runtime dirs: /run
// when it is a directory (never cleaned by age, unlike /tmp), else the
// temporary dir.
func runtimeParent() string {
	if st, err := os.Stat("/run"); err == nil && st.IsDir() {
		return "/run"
	}
	return os.TempDir()
}

func dirsFor(home string) workerDirs {
	if os.Geteuid() != 0 {
		return workerDirs{sockets: unprivilegedSocketDir(home), jail: filepath.Join(home, "jail")}
	}
	sum := sha256.Sum256([]byte(filepath.Clean(home)))
	rt := filepath.Join(runtimeParent(), "cyber-supervisor-"+hex.EncodeToString(sum[:6]))
	return workerDirs{runtime: rt, sockets: filepath.Join(rt, "s"), jail: filepath.Join(rt, "j")}
}

// WorkerSocketDir is where the workers' socket dirs of the supervisor of
// home are made (see workerDirs).
func WorkerSocketDir(home string) string { return dirsFor(home).sockets }

// unprivilegedSocketDir is <home>/run, or, when the home's path is too
// long for a unix socket path, a directory in the temporary dir named
// after the home (so each home still has exactly one).
func unprivilegedSocketDir(home string) string {
	if d := filepath.Join(home, "run"); len(d) <= maxSocketDir {
		return d
	}
	sum := sha256.Sum256([]byte(filepath.Clean(home)))
	return filepath.Join(os.TempDir(), fmt.Sprintf("cyber-supervisor-%d-%s", os.Getuid(), hex.EncodeToString(sum[:6])))
}

// create makes the dirs: search-only for others in the runtime layout,
// private otherwise.
func (d workerDirs) create() error {
	if d.runtime == "" {
		for _, p := range []string{d.sockets, d.jail} {
			if err := privateDir(p); err != nil {
				return err
			}
		}
		return nil
	}
	for _, p := range []string{d.runtime, d.sockets, d.jail} {
		if err := searchOnlyDir(p); err != nil {
			return err
		}
	}
	return nil
}

// remove takes the runtime dir away once its workers are gone (what is
// under a home stays with the home).
func (d workerDirs) remove() {
	if d.runtime != "" {
		os.Remove(d.jail)
		os.Remove(d.sockets)
		os.Remove(d.runtime)
	} else if !strings.HasPrefix(d.sockets, filepath.Dir(d.jail)+string(filepath.Separator)) {
		os.Remove(d.sockets)
	}
}

// privateDir creates dir 0700, or accepts an existing one only if it is a
// real directory (no symlink) owned by us and closed to others: a shared
// temporary dir must not let another user plant it.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("check %s: %w", dir, err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || !ok || int(sys.Uid) != os.Geteuid() || st.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s: not a private directory of this user", dir)
	}
	return nil
}

// searchOnlyDir creates dir 0711 (or sets an existing one of ours to
// 0711): a real directory owned by us that others may pass through but
// neither list nor change.
func searchOnlyDir(dir string) error {
	if err := os.Mkdir(dir, 0o711); err != nil && !os.IsExist(err) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("check %s: %w", dir, err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || !ok || int(sys.Uid) != os.Geteuid() {
		return fmt.Errorf("%s: not a directory of this user", dir)
	}
	if st.Mode().Perm() != 0o711 {
		if err := os.Chmod(dir, 0o711); err != nil {
			return fmt.Errorf("chmod %s: %w", dir, err)
		}
	}
	return nil
}

// reachableByOthers checks that a process of an unrelated uid (a worker's)
// can reach and execute path: every directory above it searchable and the
// file executable by "other". The worker's init resolves these paths as
// that uid (docs/sandbox.md, "Worker identity").
func reachableByOthers(path string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	for p := filepath.Dir(real); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%s: directory %s is not searchable by other users (mode %#o); workers run as an unprivileged uid and must reach the binary", path, p, st.Mode().Perm())
		}
		if p == "/" {
			break
		}
	}
	st, err := os.Stat(real)
	if err != nil {
		return err
	}
	if st.Mode().Perm()&0o001 == 0 {
		return fmt.Errorf("%s: not executable by other users (mode %#o); workers run as an unprivileged uid", path, st.Mode().Perm())
	}
	return nil
}
