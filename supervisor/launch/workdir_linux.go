package launch

import (
	"errors"
	"strconv"
	"sync"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/sandbox"
	"github.com/cyberia-to/cyber-supervisor/supervisor/workerids"
)

// workDir is what an isolated worker gets of its own: a host uid from the
// launcher's range and a tmpfs for /work of the launcher's margin
// (docs/sandbox.md, "Work dir"): its pages are charged to the worker's
// memory, so it holds no certificate (a prove's certificate leaves
// through the supervisor's stream, protocol.ArtifactStreamName, to the
// attempt's sandbox on disk). Both are released only once nothing of the
// worker runs.
type workDir struct {
	mu    sync.Mutex
	ids   *workerids.Pool
	id    uint32
	hasID bool
	fs    *sandbox.WorkFS
	// last is the file system's usage when it was released, for a
	// verdict asked for afterwards.
	last     sandbox.Usage
	released bool
}

// workDirBound is the size of the work dir of a job with lim: the
// margin, whatever the job's artifact limit (which bounds the stream, on
// disk, not the tmpfs).
func (l *ProcessLauncher) workDirBound(protocol.Limits) int64 {
	return l.cfg.WorkDirMargin
}

// takeWorkDir gives the worker its identity and its tmpfs and points cfg
// at them.
func (w *processWorker) takeWorkDir(l *ProcessLauncher, lim protocol.Limits, cfg *sandbox.Config) error {
	id, err := l.ids.Take()
	if err != nil {
		return err
	}
	wd := &w.work
	wd.mu.Lock()
	defer wd.mu.Unlock()
	wd.ids, wd.id, wd.hasID = l.ids, id, true
	owner := sandbox.Identity{UID: id, GID: id}
	fs, err := sandbox.NewWorkFS(l.workDirBound(lim), workDirInodes, owner)
	if err != nil {
		return err
	}
	wd.fs = fs
	cfg.RunAs, cfg.WorkFS, cfg.WorkDir = &owner, fs, ""
	return nil
}

// resize sets the bound for the attempt a warm worker is bound to.
func (wd *workDir) resize(bytes int64) error {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.fs == nil {
		return errors.New("the worker has no work file system")
	}
	return wd.fs.Resize(bytes)
}

// releaseWorkDir drops the tmpfs (its memory goes with the last
// descriptor) and returns the uid. Idempotent.
func (w *processWorker) releaseWorkDir() {
	wd := &w.work
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.released {
		return
	}
	wd.released = true
	if wd.fs != nil {
		wd.last, _ = wd.fs.Usage()
		wd.fs.Close()
	}
	if wd.hasID {
		wd.ids.Release(wd.id)
	}
}

// Files opens the worker's tmpfs as the host sees it; nil when the work
// dir is the attempt's host dir (unisolated workers).
func (w *processWorker) Files() (*artifacts.Dir, error) {
	wd := &w.work
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.fs == nil {
		return nil, nil
	}
	fd, err := wd.fs.OpenRoot()
	if err != nil {
		return nil, err
	}
	return artifacts.OpenDirFD(fd, "work tmpfs of worker uid "+strconv.FormatUint(uint64(wd.id), 10))
}

// WorkDirFull reports whether the worker reached its work dir's bound (no
// block or inode left) and what the bound is.
func (w *processWorker) WorkDirFull() (bool, int64) {
	wd := &w.work
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.fs == nil {
		return false, 0
	}
	u := wd.last
	if !wd.released {
		var err error
		if u, err = wd.fs.Usage(); err != nil {
			return false, 0
		}
	}
	return u.Full(), u.SizeBytes
}

// HostUID is the worker's uid on the host (0 and false when it runs as
// the supervisor).
func (w *processWorker) HostUID() (uint32, bool) {
	wd := &w.work
	wd.mu.Lock()
	defer wd.mu.Unlock()
	return wd.id, wd.hasID
}
