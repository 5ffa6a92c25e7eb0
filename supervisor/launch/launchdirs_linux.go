package launch

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"github.com/cyberia-to/cyber-supervisor/limits"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/sandbox"
)

// What a launch is made of: the attempt's groups and their placement, the
// workers' socket and work dirs, and the sandbox configuration.

// groupPlacement places a worker's init in its attempt's groups: the
// launcher thread takes it into them for the fork when the groups allow
// it (limits.Group.EnterThread: no migration, so no RCU grace period to
// wait for), else Place moves it after the fork.
type groupPlacement struct{ *limits.Group }

func (p groupPlacement) EnterThread() (leave func() error, entered bool, err error) {
	leave, err = p.Group.EnterThread()
	switch {
	case err == nil:
		return leave, true, nil
	case errors.Is(err, limits.ErrThreadPlacement):
		return nil, false, nil
	}
	return nil, false, err
}

var _ sandbox.ThreadPlacement = groupPlacement{}

// executableByOthers: the worker's init execs the worker binary as the
// worker's own uid, so the file must be executable by others.
func executableByOthers(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("worker binary: %w", err)
	}
	if st.Mode().Perm()&0o001 == 0 {
		return fmt.Errorf("%w: %s: mode %#o is not executable by others; workers run as unprivileged uids", ErrWorkerUnusable, p, st.Mode().Perm())
	}
	return nil
}

// staticExecutable refuses a worker binary that names an ELF interpreter.
// Inside the jail its exec would fail with nothing but "no such file or
// directory" (the loader is not there), after the job was recorded; here
// the operator is told what to build instead. A file that is not ELF is
// left to the launch to refuse.
func staticExecutable(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%w: %s is dynamically linked (it names an ELF interpreter); build it static: CGO_ENABLED=0 go build ./cmd/nox-worker, as scripts/build.sh does", ErrWorkerUnusable, p)
		}
	}
	return nil
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// maxSocketDir keeps go-plugin's socket paths (<dir>/plugin-dirNNNNNNNNNN/
// pluginNNNNNNNNNN) under the 107 bytes of sun_path.
const maxSocketDir = 64

// WorkerSocketDir is <home>/run, or, when the home's path is too long for a
// unix socket path, a directory in the temporary dir named after the
// home (so each home still has exactly one).
func WorkerSocketDir(home string) string {
	if d := filepath.Join(home, "run"); len(d) <= maxSocketDir {
		return d
	}
	sum := sha256.Sum256([]byte(filepath.Clean(home)))
	return filepath.Join(os.TempDir(), fmt.Sprintf("cyber-supervisor-%d-%s", os.Getuid(), hex.EncodeToString(sum[:6])))
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

// The jail's /tmp. nox-worker writes nothing there (its temp file is in
// /work, its socket in /run/plugin); the little room is for a library
// that insists on a temporary file. With /work and the socket dir it
// makes what a worker can write in all: WorkDirMargin plus these plus
// sandbox.SocketDirBytes, and as many inodes (docs/sandbox.md, "What a worker can write").
const (
	jailTmpBytes  = 64 << 10
	jailTmpInodes = 64
)

// sandboxConfig is the launch configuration of every worker; a pool's
// template and an attempt's launch differ only in work dir, placement and
// kill hook.
func (l *ProcessLauncher) sandboxConfig(workDir string, lim protocol.Limits) sandbox.Config {
	env := append(slices.Clip(l.workerEnv),
		protocol.EnvWorkerID+"=nox-worker-"+l.workerTag+"-"+strconv.FormatUint(l.workerSeq.Add(1), 10))
	// The gate starts every worker placed in cgroups, jailed or not.
	c := sandbox.Config{Mode: l.mode, WorkerPath: l.cfg.WorkerPath, GatePath: l.cfg.GatePath, WorkDir: workDir, SocketDir: l.socketDir, Env: env}
	if l.mode == sandbox.ModeIsolated {
		c.JailRoot = l.jailRoot
		c.Namespaces = sandbox.DefaultNamespaces
		c.Landlock = sandbox.LandlockBestEffort
		c.Seccomp = l.host.Seccomp
		c.SeccompAllow = l.seccompExtra
		c.Rlimits = sandbox.Rlimits{NoFile: 256, FSize: uint64(lim.ArtifactCap()) + 1<<20}
		c.TmpfsBytes, c.TmpfsInodes = jailTmpBytes, jailTmpInodes
	}
	return c
}

// groupSpec is the cgroup limits of an attempt with lim (a warm worker's
// group gets them when it is bound).
func (l *ProcessLauncher) groupSpec(lim protocol.Limits) limits.Spec {
	spec := limits.Spec{MemoryBytes: int64(lim.MemoryBytes)}
	if l.host.PidsLimit {
		spec.Pids = l.cfg.Pids
	}
	return spec
}

// groupName is the attempt's cgroup name: job ids are [A-Za-z0-9._-].
func groupName(job string, attempt uint32) string {
	return job + "-a" + strconv.FormatUint(uint64(attempt), 10)
}
