package testbin

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Every test process of one `go test ./...` wants the same few commands
// (the supervisor's, the CLI's, the sandbox's and the integration tests'
// all run nox-worker and sandbox-gate), and a link takes seconds. So each
// binary is built once into a cache dir private to the user, one file per
// module root, package and build settings, and `go build -o` on that file
// decides itself whether it is up to date: it relinks only when the
// binary's build ID no longer matches its inputs (sources, flags,
// toolchain, cgo settings). A lock file serializes the test processes
// that want the same binary at the same moment.
//
// The caller gets its own name for the binary, a hard link (a copy where
// the link is refused): the processes it starts have an exe path of
// their own, which the leak checks of its package look for, and a later
// rebuild replaces the cache's file by a rename and never changes what a
// caller holds.

// cacheRoot is the user's own dir of built test binaries.
func cacheRoot() (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("cyber-supervisor-testbin-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return "", fmt.Errorf("make test binary cache %s: %w", dir, err)
	}
	// A shared /tmp: the dir must be ours, no one else's to write, and not
	// a link someone planted, or we would run what they put there.
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return "", fmt.Errorf("stat test binary cache %s: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Getuid() || st.Mode&0o077 != 0 {
		return "", fmt.Errorf("test binary cache %s: not a dir of this user's alone (mode %o, uid %d)", dir, st.Mode, st.Uid)
	}
	return dir, nil
}

// settingsKey names one build: the module root, the package and every
// setting that changes the binary, so that builds which differ never
// share a file (they would relink it in turn).
func settingsKey(root, pkg string, settings ...string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, s := range append([]string{abs, pkg, os.Getenv("GATE_LIBC"), os.Getenv("CC"), os.Getenv("GOFLAGS")}, settings...) {
		io.WriteString(h, s)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12]), nil
}

// shared builds pkg with build into the cache, unless it is up to date
// there, and gives dst its own name for it.
func shared(root, pkg, dst string, build func(out string) error, settings ...string) error {
	cache, err := cacheRoot()
	if err != nil {
		return err
	}
	key, err := settingsKey(root, pkg, settings...)
	if err != nil {
		return err
	}
	built := filepath.Join(cache, path.Base(pkg)+"-"+key)
	lock, err := os.OpenFile(built+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("open build lock: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)
	if err := build(built); err != nil {
		return err
	}
	return place(built, dst)
}

// place gives dst the cache's binary: a hard link, else a copy.
func place(built, dst string) error {
	if err := os.Remove(dst); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("replace %s: %w", dst, err)
	}
	if err := os.Link(built, dst); err == nil {
		return nil
	}
	in, err := os.Open(built)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return fmt.Errorf("copy %s: %w", built, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s to %s: %w", built, tmp, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("copy %s to %s: %w", built, tmp, err)
	}
	return os.Rename(tmp, dst)
}

// settingsOf is the part of a build's flags that names it.
func settingsOf(cgo string, flags []string) []string {
	return append([]string{"CGO_ENABLED=" + cgo}, strings.Join(flags, " "))
}
