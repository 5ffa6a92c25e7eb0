package limits

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Raw cgroupfs access. The hot path (create, place, kill, stat, delete) uses
// direct file operations instead of containerd/cgroups' cgroup1 and cgroup2
// packages, for three reasons:
//   - speed: on this project's hosts, creating and deleting the four v1
//     groups with memory+memsw, pids and cpu limits takes 0.36 ms with raw
//     operations and 2.1 ms through cgroup1.New(WithHierarchy(4 subsystems))
//     + Delete (3.7 ms with the default nine); the library re-reads
//     mountinfo for every subsystem and walks every directory on Delete;
//   - bounds: the library's Freeze waits for FROZEN without any bound, and
//     its Delete retries with sleeps; kills here must be bounded by a context;
//   - dependencies: cgroup1 and cgroup2 import modules (runtime-spec,
//     go-systemd, godbus, cilium/ebpf, containerd/log) this repository does
//     not pin, and this package may not change go.mod.
// The library's root package still parses /proc/self/cgroup
// (layout_linux.go), and the tests check the detected mode against its
// cgroups.Mode().

// writeFile writes value to an existing control file. cgroupfs refuses to
// create files, so O_CREAT is never used and a missing controller surfaces
// as ENOENT rather than a confusing EACCES.
func writeFile(dir, file, value string) error {
	p := filepath.Join(dir, file)
	fd, err := openRetry(p, unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC)
	if err != nil {
		return fmt.Errorf("limits: open %s: %w", p, err)
	}
	defer unix.Close(fd)
	b := []byte(value)
	for {
		_, err = unix.Write(fd, b)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("limits: write %q to %s: %w", value, p, err)
	}
	return nil
}

func openRetry(p string, flags int) (int, error) {
	var fd int
	err := handles.at(p, func(dirfd int, name string) error {
		for {
			var err error
			fd, err = unix.Openat(dirfd, name, flags, 0)
			if err != unix.EINTR {
				return err
			}
		}
	})
	return fd, err
}

// readFile reads a control file.
func readFile(dir, file string) ([]byte, error) {
	p := filepath.Join(dir, file)
	b, err := readAll(p)
	if err != nil {
		return nil, fmt.Errorf("limits: read %s: %w", p, err)
	}
	return b, nil
}

// readAll reads a whole file with plain syscalls; control files are small
// and os.File's poller bookkeeping costs more than the read itself.
func readAll(p string) ([]byte, error) {
	fd, err := openRetry(p, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: p, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// readUint reads a single-number control file; "max" reads as MaxUint64.
func readUint(dir, file string) (uint64, error) {
	b, err := readFile(dir, file)
	if err != nil {
		return 0, err
	}
	s := string(bytes.TrimSpace(b))
	if s == "max" {
		return math.MaxUint64, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		// v1 reports "no limit" as a huge or (cpu.cfs_quota_us) negative
		// number; negative means unlimited too.
		if n, ierr := strconv.ParseInt(s, 10, 64); ierr == nil && n < 0 {
			return math.MaxUint64, nil
		}
		return 0, fmt.Errorf("limits: parse %s/%s %q: %w", dir, file, s, err)
	}
	return v, nil
}

// parseKeyed parses "key value" lines (memory.oom_control, memory.events,
// pids.events, cpu.stat, cpuacct.stat, cgroup.events). Lines that do not
// fit are ignored: a kernel may add keys of another shape.
//
// It splits the lines itself: a kill polls cgroup.events through it every
// few hundred microseconds, and a bufio.Scanner would allocate a 4 KiB
// buffer at every poll.
func parseKeyed(b []byte) map[string]uint64 {
	out := map[string]uint64{}
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		f := bytes.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseUint(string(f[1]), 10, 64)
		if err != nil {
			continue
		}
		out[string(f[0])] = v
	}
	return out
}

// readKeyed reads and parses a keyed control file.
func readKeyed(dir, file string) (map[string]uint64, error) {
	b, err := readFile(dir, file)
	if err != nil {
		return nil, err
	}
	return parseKeyed(b), nil
}

// parsePids parses cgroup.procs contents; garbage lines are skipped.
func parsePids(b []byte) []int {
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil && n > 0 {
			pids = append(pids, n)
		}
	}
	return pids
}

// procsRecursive returns the pids in dir and every group below it. A group
// that disappears while walking is skipped: it has no processes.
func procsRecursive(dir string) ([]int, error) {
	var out []int
	for _, d := range subtree(dir) {
		b, err := readAll(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return out, fmt.Errorf("limits: read %s/cgroup.procs: %w", d, err)
		}
		out = append(out, parsePids(b)...)
	}
	return out, nil
}

// subtree lists dir and all directories below it, parents first. A missing
// dir yields nothing. cgroupfs keeps a directory's link count at 2 + its
// number of child groups, so a leaf (the normal case) costs one stat
// instead of listing dozens of control files.
func subtree(dir string) []string {
	var st unix.Stat_t
	if err := lstatHandled(dir, &st); err != nil {
		return nil
	}
	out := []string{dir}
	if st.Nlink <= 2 {
		return out
	}
	for i := 0; i < len(out); i++ {
		if i > 0 {
			if err := unix.Lstat(out[i], &st); err != nil || st.Nlink <= 2 {
				continue
			}
		}
		ents, err := os.ReadDir(out[i])
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.IsDir() {
				out = append(out, filepath.Join(out[i], e.Name()))
			}
		}
	}
	return out
}

// addProc moves pid into the group at dir. The kernel answers EINVAL while
// a task is still being forked (TASK_NEW); runc and containerd retry, so do
// we, briefly.
func addProc(dir string, pid int) error {
	v := strconv.Itoa(pid)
	var err error
	for i := 0; i < 10; i++ {
		err = writeFile(dir, "cgroup.procs", v)
		if err == nil || !errors.Is(err, unix.EINVAL) {
			return err
		}
		time.Sleep(time.Millisecond)
	}
	return err
}

// rmdir removes one group. ENOENT means someone (an earlier Delete, a
// leftover sweep) already did. EBUSY can linger for a moment after the last
// task left, so it is retried for up to ~100 ms.
func rmdir(dir string) error {
	delay := time.Millisecond
	for i := 0; ; i++ {
		err := rmdirHandled(dir)
		switch {
		case err == nil, errors.Is(err, unix.ENOENT):
			return nil
		case errors.Is(err, unix.EBUSY) && i < 7:
			time.Sleep(delay)
			delay *= 2
		default:
			return fmt.Errorf("limits: rmdir %s: %w", dir, err)
		}
	}
}

// removeTree removes dir and every group below it, deepest first.
func removeTree(dir string) error {
	dirs := subtree(dir)
	if len(dirs) == 0 {
		handles.drop(dir) // removed by someone else
		return nil
	}
	sort.SliceStable(dirs, func(i, j int) bool {
		return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/")
	})
	var errs []error
	for _, d := range dirs {
		if err := rmdir(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// removeTreeAll removes several trees, collecting errors.
func removeTreeAll(dirs []string) error {
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		errs = append(errs, removeTree(dirs[i]))
	}
	return errors.Join(errs...)
}

// rmdirIfEmpty removes dir if it has no child groups; a busy or missing dir
// is not an error.
func rmdirIfEmpty(dir string) error {
	err := rmdirHandled(dir)
	if err == nil || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EBUSY) || errors.Is(err, unix.ENOTEMPTY) {
		return nil
	}
	return fmt.Errorf("limits: rmdir %s: %w", dir, err)
}
