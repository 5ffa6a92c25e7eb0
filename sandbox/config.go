package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Mode selects how the worker is launched. The zero value is invalid so that
// running without isolation is always a decision someone wrote down.
type Mode int

const (
	// ModeIsolated: gate, namespaces, pivot_root jail, dropped capabilities,
	// no_new_privs, optional Landlock and seccomp.
	ModeIsolated Mode = iota + 1
	// ModeUnisolated: a plain exec with a scrubbed environment and no
	// inherited descriptors. Meant for hosts without the capability and as
	// the benchmark baseline. If a Placement or Rlimits are configured the
	// gate is still used, so limits still apply before the worker runs.
	ModeUnisolated
)

func (m Mode) String() string {
	switch m {
	case ModeIsolated:
		return "isolated"
	case ModeUnisolated:
		return "unisolated"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Namespaces is a set of Linux namespaces the worker gets of its own.
type Namespaces uint

const (
	NamespacePID Namespaces = 1 << iota
	NamespaceMount
	NamespaceIPC
	NamespaceUTS
	NamespaceNet
	// NamespaceUser is added automatically when the supervisor is not root
	// (uid 0 inside maps to the supervisor's uid).
	NamespaceUser
	// NamespaceCgroup is unshared by the init once it has been placed in
	// its groups, so they are the root of what the worker sees in
	// /proc/self/cgroup: "/" and no host path.
	NamespaceCgroup

	namespaceAll = NamespacePID | NamespaceMount | NamespaceIPC | NamespaceUTS | NamespaceNet | NamespaceUser | NamespaceCgroup

	// DefaultNamespaces is what an isolated worker gets unless told otherwise.
	DefaultNamespaces = NamespacePID | NamespaceMount | NamespaceIPC | NamespaceUTS | NamespaceNet | NamespaceCgroup
)

func (n Namespaces) String() string {
	names := []string{"pid", "mnt", "ipc", "uts", "net", "user", "cgroup"}
	var out []string
	for i, name := range names {
		if n&(1<<i) != 0 {
			out = append(out, name)
		}
	}
	if rest := n &^ namespaceAll; rest != 0 {
		out = append(out, fmt.Sprintf("0x%x", uint(rest)))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "|")
}

// LandlockMode says whether Landlock is applied in the jail.
type LandlockMode int

const (
	LandlockOff LandlockMode = iota
	// LandlockBestEffort applies the newest ABI the kernel has and reports
	// which one in Report.LandlockABI (0 when the kernel has none).
	LandlockBestEffort
	// LandlockRequired fails the launch when the kernel has no Landlock.
	LandlockRequired
)

// Rlimits are set in the init before the worker is executed. Zero leaves a
// limit as inherited. RLIMIT_CORE is always 0 in the isolated mode; RLIMIT_AS
// is deliberately absent (the Go runtime needs far more address space than it
// uses; memory is the cgroup's job).
type Rlimits struct {
	NoFile uint64 // RLIMIT_NOFILE, soft = hard
	FSize  uint64 // RLIMIT_FSIZE in bytes, soft = hard
}

// Identity is a host uid/gid pair.
type Identity struct {
	UID, GID uint32
}

// Placement puts a gated worker into its resource groups before it runs any
// code. It is implemented outside this package (limits.Group).
type Placement interface {
	// CgroupFD returns an open cgroup2 directory to clone the worker into
	// (SysProcAttr.UseCgroupFD). ok=false means there is none.
	CgroupFD() (fd int, ok bool)
	// Place moves the gated pid into the remaining (v1) groups. It is called
	// after the process exists and before it is released from the gate.
	Place(pid int) error
}

// ThreadPlacement is a Placement that can instead take the forking thread
// into its groups for the fork (the supervisor adapts limits.Group's
// EnterThread): the worker's init is then born in every group, and Place,
// a migration the kernel may make wait for an RCU grace period, is not
// called.
type ThreadPlacement interface {
	Placement
	// EnterThread moves the calling thread (the launcher's, locked) into
	// the groups. entered: it did, and leave moves it back right after
	// the fork. !entered and no error: nothing moved; Place places the
	// process. An error: the thread may be left in a group; it must fork
	// nothing more.
	EnterThread() (leave func() error, entered bool, err error)
}

// Config describes one attempt's launch.
type Config struct {
	// Mode must be set explicitly.
	Mode Mode

	// WorkerPath is the absolute path of the worker binary. In the isolated
	// mode it must be statically linked (CGO_ENABLED=0): only this one file
	// is visible inside the jail.
	WorkerPath string
	// GatePath is the gated init, cmd/sandbox-gate built with cgo (its C
	// init runs from an ELF constructor, before any Go runtime). It is
	// required by every gated launch: the isolated mode, and the
	// unisolated one with a Placement or Rlimits. It runs before the jail
	// exists, from the host path, and then execs the worker.
	GatePath string
	// Args are appended after argv[0] when the worker runs in plugin mode.
	Args []string
	// Env entries (KEY=VALUE) are added to the worker's otherwise empty
	// environment. Keys starting with PLUGIN_ are reserved for go-plugin.
	Env []string
	// PassEnv names variables taken from go-plugin's command environment in
	// addition to PLUGIN_*; ClientConfig adds the magic cookie key here.
	PassEnv []string

	// WorkDir is the per-attempt directory, mounted read-write at /work
	// (nosuid, nodev, noexec).
	WorkDir string
	// WorkFS, in the isolated mode, is attached at /work instead of
	// WorkDir (which must then be empty): a size-bounded tmpfs that never
	// touches the host's disk. The caller owns it (and closes it after the
	// worker is gone).
	WorkFS *WorkFS
	// SocketDir is the base directory for go-plugin's per-client socket
	// directory (UnixSocketConfig.TempDir). Keep it short: unix socket paths
	// are limited to 107 bytes. An unisolated worker binds its socket
	// there; an isolated one in a tmpfs of its jail (SocketDirBytes,
	// SocketDirInodes), and go-plugin's directory stays empty.
	SocketDir string
	// JailRoot is an existing directory used as the mount point of the
	// jail's root. Each worker mounts its own tmpfs on it inside its private
	// mount namespace, so the host's view of the directory never changes
	// and concurrent workers can share it.
	JailRoot string

	// Namespaces defaults to DefaultNamespaces in the isolated mode; it must
	// include NamespacePID and NamespaceMount there (the jail needs both).
	Namespaces Namespaces
	// RunAs is the unprivileged host identity the worker runs as: a root
	// supervisor's init switches to it (setgroups, setresgid, setresuid)
	// once the jail is built, so the worker is that uid on the host and
	// inside. Nil keeps the supervisor's identity (with all capabilities
	// dropped). WorkDir must be writable by it; the worker binary
	// executable by it. A supervisor that is not root can only name itself
	// (its workers are uid 0 of a user namespace mapped to it).
	RunAs *Identity
	// Hostname inside the UTS namespace; defaults to "sandbox".
	Hostname string
	Landlock LandlockMode
	// Seccomp installs the worker's syscall allowlist (docs/sandbox.md).
	Seccomp bool
	// SeccompAllow names syscalls allowed in addition to the allowlist,
	// for a worker binary other than nox-worker (the sandbox's own test
	// probes); nox-worker needs none.
	SeccompAllow []string
	Rlimits      Rlimits
	// TmpfsBytes and TmpfsInodes bound the jail's /tmp; 0 means
	// DefaultTmpfsBytes, DefaultTmpfsInodes.
	TmpfsBytes  int64
	TmpfsInodes int64
	// StartTimeout bounds launch plus handshake; 0 means DefaultStartTimeout.
	StartTimeout time.Duration

	// Placement, if set, is applied while the worker is gated.
	Placement Placement
	// KillHook kills the worker's whole tree (the cgroup kill). Kill calls
	// it before signalling the worker itself.
	KillHook func(ctx context.Context) error

	// Stdout and Stderr receive a copy of everything the worker writes
	// (stdout includes the handshake line). They must not block.
	Stdout, Stderr io.Writer
}

const (
	DefaultTmpfsBytes   = 16 << 20
	DefaultTmpfsInodes  = 1024
	DefaultStartTimeout = 5 * time.Second

	// SocketDirBytes and SocketDirInodes bound an isolated worker's
	// /run/plugin, the tmpfs it binds its socket in: one page (the
	// kernel rounds up; a socket takes no blocks) and 8 inodes, the
	// directory itself, the socket, and room for a server that reserves
	// its name with a file first, as go-plugin's does.
	SocketDirBytes  = 4096
	SocketDirInodes = 8
	defaultHostname = "sandbox"

	// maxSocketPath leaves room under the 108-byte sun_path for go-plugin's
	// "/plugin-dirNNNNNNNNNN/pluginNNNNNNNNNN".
	maxSocketBase = 107 - len("/plugin-dir0123456789/plugin0123456789")
	minNoFile     = 16
)

// Validate reports every problem in c, each wrapped in ErrInvalidConfig. It
// checks the file system (paths exist and have the right kind) but changes
// nothing.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}

	isolated := c.Mode == ModeIsolated
	switch c.Mode {
	case ModeIsolated, ModeUnisolated:
	default:
		bad("Mode must be ModeIsolated or ModeUnisolated, got %v", c.Mode)
	}

	if c.GatePath != "" {
		if err := checkProgram(c.GatePath); err != nil {
			bad("GatePath: %v", err)
		}
	} else if c.gated() {
		bad("GatePath: a gated launch (isolated, or with a Placement or Rlimits) needs the gate binary, cmd/sandbox-gate")
	}
	if err := checkProgram(c.WorkerPath); err != nil {
		bad("WorkerPath: %v", err)
	}
	for i, a := range c.Args {
		if strings.IndexByte(a, 0) >= 0 {
			bad("Args[%d]: contains NUL", i)
		}
	}
	for i, kv := range c.Env {
		k, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok || k == "":
			bad("Env[%d] %q: want KEY=VALUE", i, kv)
		case strings.IndexByte(kv, 0) >= 0:
			bad("Env[%d]: contains NUL", i)
		case strings.HasPrefix(k, pluginEnvPrefix):
			bad("Env[%d] %q: PLUGIN_* is reserved for go-plugin", i, k)
		}
	}
	for i, k := range c.PassEnv {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			bad("PassEnv[%d] %q: not a variable name", i, k)
		}
	}

	if err := checkPath(c.SocketDir, true); err != nil {
		bad("SocketDir: %v", err)
	} else if len(c.SocketDir) > maxSocketBase {
		bad("SocketDir %q: longer than %d bytes, socket paths would not fit sun_path", c.SocketDir, maxSocketBase)
	}

	if c.Rlimits.NoFile != 0 && c.Rlimits.NoFile < minNoFile {
		bad("Rlimits.NoFile %d: below %d, the worker runtime could not start", c.Rlimits.NoFile, minNoFile)
	}
	if c.TmpfsBytes < 0 {
		bad("TmpfsBytes %d: negative", c.TmpfsBytes)
	}
	if c.TmpfsInodes < 0 {
		bad("TmpfsInodes %d: negative", c.TmpfsInodes)
	}
	if c.StartTimeout < 0 {
		bad("StartTimeout %v: negative", c.StartTimeout)
	}
	if c.Hostname != "" && !validHostname(c.Hostname) {
		bad("Hostname %q: want 1-63 characters [a-zA-Z0-9-]", c.Hostname)
	}
	if c.Landlock < LandlockOff || c.Landlock > LandlockRequired {
		bad("Landlock %d: unknown mode", int(c.Landlock))
	}
	for _, n := range c.SeccompAllow {
		if !knownSyscall(n) {
			bad("SeccompAllow: %q is not a syscall of this architecture", n)
		}
	}
	if len(c.SeccompAllow) > 0 && !c.Seccomp {
		bad("SeccompAllow: set without Seccomp")
	}
	if c.Namespaces&^namespaceAll != 0 {
		bad("Namespaces %v: unknown bits", c.Namespaces)
	}

	if isolated {
		switch {
		case c.WorkFS != nil && c.WorkDir != "":
			bad("WorkDir %q: set together with WorkFS", c.WorkDir)
		case c.WorkFS == nil:
			if err := checkPath(c.WorkDir, true); err != nil {
				bad("WorkDir: %v", err)
			}
		}
		if err := checkPath(c.JailRoot, true); err != nil {
			bad("JailRoot: %v", err)
		} else {
			if c.JailRoot == "/" {
				bad("JailRoot: must not be /")
			}
			for _, p := range []struct{ name, path string }{
				{"WorkerPath", c.WorkerPath}, {"WorkDir", c.WorkDir}, {"SocketDir", c.SocketDir},
			} {
				if p.path != "" && within(c.JailRoot, p.path) {
					bad("%s %q: inside JailRoot %q, the jail's tmpfs would hide it", p.name, p.path, c.JailRoot)
				}
			}
		}
		if ns := c.Namespaces; ns != 0 && ns&(NamespacePID|NamespaceMount) != NamespacePID|NamespaceMount {
			bad("Namespaces %v: the isolated mode needs at least pid and mnt", ns)
		}
	} else if c.Mode == ModeUnisolated {
		if c.Namespaces != 0 {
			bad("Namespaces %v: not available in the unisolated mode", c.Namespaces)
		}
		if c.JailRoot != "" {
			bad("JailRoot: not available in the unisolated mode")
		}
		if c.RunAs != nil {
			bad("RunAs: not available in the unisolated mode")
		}
		if c.WorkFS != nil {
			bad("WorkFS: not available in the unisolated mode")
		}
		if c.Landlock != LandlockOff || c.Seccomp {
			bad("Landlock/Seccomp: not available in the unisolated mode")
		}
	}
	if id := c.RunAs; id != nil {
		switch {
		case os.Geteuid() != 0 && (id.UID != uint32(os.Geteuid()) || id.GID != uint32(os.Getegid())):
			bad("RunAs %d:%d: only root can run a worker as another identity", id.UID, id.GID)
		case os.Geteuid() == 0 && (id.UID == 0 || id.GID == 0 || id.UID == ^uint32(0) || id.GID == ^uint32(0)):
			bad("RunAs %d:%d: not an unprivileged identity", id.UID, id.GID)
		}
	}
	return errors.Join(errs...)
}

// withDefaults returns a copy with the documented defaults filled in.
func (c Config) withDefaults() Config {
	if c.Mode == ModeIsolated {
		if c.Namespaces == 0 {
			c.Namespaces = DefaultNamespaces
		}
		if os.Geteuid() != 0 {
			c.Namespaces |= NamespaceUser
		}
		if c.Hostname == "" {
			c.Hostname = defaultHostname
		}
		if c.TmpfsBytes == 0 {
			c.TmpfsBytes = DefaultTmpfsBytes
		}
		if c.TmpfsInodes == 0 {
			c.TmpfsInodes = DefaultTmpfsInodes
		}
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	c.Args = append([]string(nil), c.Args...)
	c.Env = append([]string(nil), c.Env...)
	c.PassEnv = append([]string(nil), c.PassEnv...)
	c.SeccompAllow = append([]string(nil), c.SeccompAllow...)
	return c
}

func checkPath(p string, dir bool) error {
	if p == "" {
		return errors.New("required")
	}
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return fmt.Errorf("%q: must be an absolute, clean path", p)
	}
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if dir && !st.IsDir() {
		return fmt.Errorf("%q: not a directory", p)
	}
	if !dir && !st.Mode().IsRegular() {
		return fmt.Errorf("%q: not a regular file", p)
	}
	return nil
}

// checkProgram is checkPath for a file that must also be executable.
func checkProgram(p string) error {
	if err := checkPath(p, false); err != nil {
		return err
	}
	if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%q: not executable", p)
	}
	return nil
}

// within reports whether p is base or below it.
func within(base, p string) bool {
	rel, err := filepath.Rel(base, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

func validHostname(h string) bool {
	if len(h) > 63 {
		return false
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// gated reports whether the launch goes through the gate: the isolated
// mode, and the unisolated one whose limits must apply before the worker
// runs.
func (c *Config) gated() bool {
	return c.Mode == ModeIsolated || c.Placement != nil || c.Rlimits != (Rlimits{})
}
