package limits

import (
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// dirHandles holds an O_PATH descriptor of each cgroup directory this
// process made (instance and group directories), so that control files
// and child groups are reached relative to it. A group's path under a v1
// hierarchy is nine components deep here, and kernfs revalidates every
// component of every walk: opening control files by path was 7 % of the
// supervisor's CPU at 100 trivial jobs/s, mkdir and rmdir another 7 %.
//
// Lookups hold the read lock across the *at call, so a descriptor is
// never closed (and its number reused) under a caller. A directory that
// someone else removes keeps its handle until our rmdir of it; its
// control files then fail with ENOENT as they would by path. The table is
// bounded; past the bound, paths are walked as before.
type dirHandles struct {
	mu sync.RWMutex
	m  map[string]int
}

const maxDirHandles = 4096

var handles = dirHandles{m: map[string]int{}}

// add opens dir and keeps its handle; failure only means slower access.
func (h *dirHandles) add(dir string) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, dup := h.m[dir]; dup || len(h.m) >= maxDirHandles {
		unix.Close(fd)
		return
	}
	h.m[dir] = fd
}

// drop forgets dir's handle (before dir is removed).
func (h *dirHandles) drop(dir string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if fd, ok := h.m[dir]; ok {
		unix.Close(fd)
		delete(h.m, dir)
	}
}

// at calls f with a directory descriptor and a name for path: the handle
// of path's directory and its last element, or AT_FDCWD and path itself.
func (h *dirHandles) at(path string, f func(dirfd int, name string) error) error {
	dir, name := filepath.Split(path)
	h.mu.RLock()
	defer h.mu.RUnlock()
	if fd, ok := h.m[filepath.Clean(dir)]; ok && name != "" {
		return f(fd, name)
	}
	return f(unix.AT_FDCWD, path)
}

// mkdirHandled makes a cgroup directory and keeps its handle.
func mkdirHandled(dir string) error {
	err := handles.at(dir, func(dirfd int, name string) error { return unix.Mkdirat(dirfd, name, 0o755) })
	if err == nil {
		handles.add(dir)
	}
	return err
}

// rmdirHandled drops dir's handle and removes it.
func rmdirHandled(dir string) error {
	handles.drop(dir)
	return handles.at(dir, func(dirfd int, name string) error { return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR) })
}

// lstatHandled is lstat(2) through dir's parent handle.
func lstatHandled(path string, st *unix.Stat_t) error {
	return handles.at(path, func(dirfd int, name string) error {
		return unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)
	})
}
