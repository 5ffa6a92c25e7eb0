package supervisor

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/sandbox"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/workerids"
)

// A worker that fills the directory it binds its socket in (issue #26,
// item 2). That directory used to be <home>/run/plugin-dirNNN on the
// host, bound into the jail and owned by the worker: a worker filled the
// home's file system, and every other job then failed to write the store.
// The home here is a small tmpfs of the test's own, so the host's view of
// it is exact and nothing can fill a real disk.

// The test home: room for the store and the kept certificates, and much
// less than the attack tries to write (64 MiB, 10,000 files).
const (
	socketTestHomeBytes  = 32 << 20
	socketTestHomeInodes = 4096
)

// What the supervisor itself may add to the home while the attack holds:
// the store's pages and records, the held job's sandbox and socket dirs.
const (
	socketTestSlackBytes  = 1 << 20
	socketTestSlackInodes = 32
)

func TestHostileWorkerFillsItsSocketDir(t *testing.T) {
	requireIsolation(t)
	home := smallHome(t, socketTestHomeBytes, socketTestHomeInodes)
	e := hostileEnvIn(t, home, "fill-socketdir")
	// A failed check leaves the held worker: close before the home goes.
	t.Cleanup(func() { e.s.Close(context.Background()) })
	before := homeFree(t, home)

	held := e.s.submit(t, spec(t, "held", protocol.OpExecute, add2, []uint64{3, 5}, protocol.Limits{}, nil))
	e.log.WaitStep(t, "holding")
	t.Logf("the held worker: %s; %s", e.log.Steps("fill socket dir bytes")[0], e.log.Steps("fill socket dir inodes")[0])

	// At the attack's peak, from the host: the home lost no more than the
	// supervisor's own records, and nothing in it is the worker's.
	during := homeFree(t, home)
	t.Logf("the home lost %d bytes and %d inodes while the attack held", before.bytes-during.bytes, before.inodes-during.inodes)
	if lost := before.bytes - during.bytes; lost > socketTestSlackBytes {
		t.Errorf("the home lost %d bytes while the worker held its attack (at most %d are the supervisor's)", lost, socketTestSlackBytes)
	}
	if lost := before.inodes - during.inodes; lost > socketTestSlackInodes {
		t.Errorf("the home lost %d inodes while the worker held its attack (at most %d are the supervisor's)", lost, socketTestSlackInodes)
	}
	if n, size := workerEntries(t, e, home); n > 0 {
		t.Errorf("%d entries (%d bytes) of the worker's uids in the home", n, size)
	}
	// What it filled instead: its own tmpfs, from the host through the
	// worker's root, full at one page and sandbox.SocketDirInodes inodes.
	full := 0
	for _, pid := range workerPids(e) {
		var st unix.Statfs_t
		if err := unix.Statfs(filepath.Join("/proc", strconv.Itoa(pid), "root", "run", "plugin"), &st); err != nil {
			continue // gone meanwhile
		}
		size := int64(st.Blocks) * st.Bsize
		if st.Type != unix.TMPFS_MAGIC || size > int64(os.Getpagesize()) || st.Files > sandbox.SocketDirInodes {
			t.Errorf("worker %d: /run/plugin is fs %#x of %d bytes, %d inodes; want a tmpfs of one page and at most %d inodes",
				pid, st.Type, size, st.Files, sandbox.SocketDirInodes)
		}
		if st.Ffree == 0 {
			full++
		}
	}
	if full == 0 {
		t.Error("no worker's socket tmpfs is full: the attack did not reach its bound")
	}

	// Meanwhile another job runs (the same attack, then a proof): its
	// acceptance and its certificate are written.
	other := e.s.submit(t, spec(t, "other", protocol.OpProve, add2, []uint64{3, 5}, protocol.Limits{}, nil))
	st := e.s.wait(t, other)
	if st.Job.State != lifecycle.Accepted {
		t.Fatalf("a job beside the attack: %s %+v, want accepted", st.Job.State, st.Job.Error)
	}
	res, err := protocol.ParseResult(st.Job.Result)
	if err != nil || res.Artifact == nil {
		t.Fatalf("result %s: %v", st.Job.Result, err)
	}
	cert := filepath.Join(home, "sandboxes", other, strconv.FormatUint(uint64(st.Job.Accepted), 10), res.Artifact.Name)
	if fi, err := os.Stat(cert); err != nil || fi.Size() == 0 {
		t.Errorf("the accepted job's certificate %s: %v", cert, err)
	}
	for _, step := range []string{"fill socket dir bytes", "fill socket dir inodes"} {
		for _, got := range e.log.Steps(step) {
			if !strings.HasSuffix(got, "no space left on device") {
				t.Errorf("%s: %q, want the worker stopped by ENOSPC", step, got)
			}
		}
	}

	if _, err := e.s.Cancel(context.Background(), held, "done"); err != nil {
		t.Fatal(err)
	}
	if st := e.s.wait(t, held); st.Job.State != lifecycle.Cancelled {
		t.Errorf("held job ended %s, want cancelled", st.Job.State)
	}
	e.s.close(t)
	e.checkHostClean(t)
}

// smallHome mounts a tmpfs of its own as a fresh home, unmounted when the
// test ends (after the supervisor on it closed).
func smallHome(t *testing.T, bytes, inodes int64) string {
	t.Helper()
	home, err := os.MkdirTemp("", "hs")
	if err != nil {
		t.Fatal(err)
	}
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0700", bytes, inodes)
	if err := unix.Mount("tmpfs", home, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		os.Remove(home)
		t.Fatalf("mount tmpfs on %s: %v", home, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(home, 0); err != nil {
			t.Errorf("unmount %s: %v", home, err)
		}
		os.Remove(home)
	})
	return home
}

type fsFree struct{ bytes, inodes int64 }

func homeFree(t *testing.T, home string) fsFree {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(home, &st); err != nil {
		t.Fatal(err)
	}
	return fsFree{bytes: int64(st.Bfree) * st.Bsize, inodes: int64(st.Ffree)}
}

// workerEntries counts what the launcher's worker uids own below dir.
func workerEntries(t *testing.T, e *hostileEnv, dir string) (n int, size int64) {
	t.Helper()
	r := workerids.DefaultRange
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		var st unix.Stat_t
		if err != nil || unix.Lstat(p, &st) != nil {
			return nil
		}
		if st.Uid >= r.First && st.Uid-r.First < r.Count {
			n++
			size += st.Size
		}
		return nil
	})
	return n, size
}

// workerPids are the processes of the launcher's worker uids in its
// groups (other tests' workers may have uids of the same range).
func workerPids(e *hostileEnv) []int {
	r := workerids.DefaultRange
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil || st.Uid < r.First || st.Uid-r.First >= r.Count {
			continue
		}
		if cg, err := os.ReadFile(filepath.Join(p, "cgroup")); err != nil || !strings.Contains(string(cg), e.l.CgroupName()) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(p)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
