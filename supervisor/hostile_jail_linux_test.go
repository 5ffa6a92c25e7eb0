package supervisor

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/internal/workerlogtest"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/workerids"
)

// The run-time attacks of internal/hostileworker (issue #11, items 2-4):
// each is judged from the host. The worker's own "hostile: STEP: RESULT"
// lines (its stderr, which the launcher logs) only show that a step was
// tried.

// hostileEnv is a supervisor whose attempts run the hostile worker.
type hostileEnv struct {
	s    *testSup
	home string
	l    *launch.ProcessLauncher
	log  *workerlogtest.Collector
}

// expectStep: the worker tried step and got want ("ok" or an errno text).
func (e *hostileEnv) expectStep(t *testing.T, step, want string) {
	t.Helper()
	got := e.log.Steps(step)
	if len(got) == 0 {
		t.Errorf("the worker did not try %q", step)
		return
	}
	for _, g := range got {
		if g != want {
			t.Errorf("%s: the worker got %q, want %q", step, g, want)
		}
	}
}

const eperm = "operation not permitted"

// checkHostClean walks the home once the supervisor is closed: no setuid or setgid bit, nothing owned by another uid, no
// file that is not a regular file, a directory or the store's lock.
func (e *hostileEnv) checkHostClean(t *testing.T) {
	t.Helper()
	for _, root := range []string{e.home} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if !os.IsNotExist(err) {
					t.Errorf("walk %s: %v", p, err)
				}
				return nil
			}
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				return nil
			}
			typ := st.Mode & unix.S_IFMT
			switch {
			case st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0:
				t.Errorf("%s: mode %#o has a setuid/setgid bit", p, st.Mode&0o7777)
			case st.Uid != 0 || st.Gid != 0:
				t.Errorf("%s: owned by %d:%d, want the supervisor's", p, st.Uid, st.Gid)
			case typ != unix.S_IFREG && typ != unix.S_IFDIR:
				t.Errorf("%s: a %#o entry on the host", p, typ)
			}
			return nil
		})
	}
}

func hostileEnvFor(t *testing.T, attack string, extra ...string) *hostileEnv {
	t.Helper()
	requireIsolation(t)
	home, err := os.MkdirTemp("", "hw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	return hostileEnvIn(t, home, attack, extra...)
}

// hostileEnvIn is hostileEnvFor on a home the test made (short enough
// for the socket dir to be <home>/run).
func hostileEnvIn(t *testing.T, home, attack string, extra ...string) *hostileEnv {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hostile-"+attack)
	copyFile(t, hostileBin, bin)
	ctx := context.Background()
	wl := &workerlogtest.Collector{}
	l, err := launch.New(ctx, launch.Config{WorkerPath: workerBin, Home: home, Isolation: launch.IsolationRequired, Logger: slog.New(wl)})
	if err != nil {
		t.Fatal(err)
	}
	l.ReplaceWorkerForTests(bin)
	l.WidenSeccompForTests(extra...)
	s, err := Open(ctx, Config{Home: home, Slots: 2, Launcher: l, CancelGrace: time.Second})
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() {
		checkNoLeftovers(t, l.CgroupName())
		removeParentGroups(l.CgroupName())
	})
	return &hostileEnv{s: &testSup{Supervisor: s, home: home}, home: home, l: l, log: wl}
}

// A worker plants setuid files and the rest in its work dir and then does
// its job: inside, only what needs no forbidden syscall exists (a file
// created with the setuid bit, a socket), and of all of it the host keeps
// only the verified certificate, as the supervisor's own 0600 file.
func TestHostileWorkerPlantsNothingOnTheHost(t *testing.T) {
	e := hostileEnvFor(t, "plant")
	id := e.s.submit(t, spec(t, "plant", protocol.OpProve, add2, []uint64{3, 5}, protocol.Limits{}, nil))
	st := e.s.wait(t, id)
	if st.Job.State != lifecycle.Accepted {
		t.Fatalf("job %s %+v, want accepted (the attack changes nothing the job needs)", st.Job.State, st.Job.Error)
	}
	e.expectStep(t, "create setuid file", "ok")
	e.expectStep(t, "socket file", "ok")
	for _, step := range []string{"chmod 06755", "mkdir setgid", "mknod device", "mkfifo", "symlink", "hard link", "setxattr"} {
		e.expectStep(t, step, eperm)
	}
	res, err := protocol.ParseResult(st.Job.Result)
	if err != nil || res.Artifact == nil {
		t.Fatalf("result %s: %v", st.Job.Result, err)
	}
	kept := filepath.Join(e.home, "sandboxes", id, strconv.FormatUint(uint64(st.Job.Accepted), 10))
	ents, err := os.ReadDir(kept)
	if err != nil || len(ents) != 1 || ents[0].Name() != res.Artifact.Name {
		t.Fatalf("kept sandbox %s holds %v (%v), want only %s", kept, ents, err, res.Artifact.Name)
	}
	var fst unix.Stat_t
	if err := unix.Lstat(filepath.Join(kept, res.Artifact.Name), &fst); err != nil {
		t.Fatal(err)
	}
	if fst.Mode != unix.S_IFREG|0o600 || fst.Uid != 0 || fst.Gid != 0 || fst.Nlink != 1 {
		t.Errorf("kept artifact: mode %#o uid %d gid %d links %d, want a 0600 regular file of root", fst.Mode, fst.Uid, fst.Gid, fst.Nlink)
	}
	if n, _ := unix.Llistxattr(filepath.Join(kept, res.Artifact.Name), make([]byte, 256)); n != 0 {
		t.Error("the kept artifact has extended attributes")
	}
	e.s.close(t)
	e.checkHostClean(t)
}

// The same attack held open: from the host, the worker is an unprivileged
// uid of the launcher's range without supplementary groups, its /work a
// nosuid,nodev,noexec tmpfs in which its setuid file belongs to that uid,
// and its /proc/self/cgroup shows no host path.
func TestHostileWorkerInspectedFromTheHost(t *testing.T) {
	e := hostileEnvFor(t, "plant-hold")
	id := e.s.submit(t, spec(t, "held", protocol.OpExecute, add2, []uint64{3, 5}, protocol.Limits{}, nil))
	e.log.WaitStep(t, "holding")
	pid, uid := findWorker(t, e, "suid")
	status := procStatus(t, pid)
	want := strconv.FormatUint(uint64(uid), 10)
	for _, key := range []string{"Uid", "Gid"} {
		if f := strings.Fields(status[key]); len(f) != 4 || f[0] != want || f[1] != want || f[2] != want || f[3] != want {
			t.Errorf("worker %s: %q, want %s four times", key, status[key], want)
		}
	}
	if status["Groups"] != "" {
		t.Errorf("worker supplementary groups %q, want none", status["Groups"])
	}
	r := workerids.DefaultRange
	if uid == 0 || uid < r.First || uid-r.First >= r.Count {
		t.Errorf("worker uid %d, want one of %d+%d", uid, r.First, r.Count)
	}
	opts, fstype := workMount(t, pid)
	for _, o := range []string{"nosuid", "nodev", "noexec"} {
		if !strings.Contains(","+opts+",", ","+o+",") {
			t.Errorf("/work mount options %q lack %s", opts, o)
		}
	}
	if fstype != "tmpfs" {
		t.Errorf("/work is %s, want the worker's tmpfs", fstype)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join("/proc", strconv.Itoa(pid), "root", "work", "suid"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != uid || st.Uid == 0 {
		t.Errorf("the planted setuid file belongs to uid %d, want the worker's %d", st.Uid, uid)
	}
	host, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	if err != nil || !strings.Contains(string(host), e.l.CgroupName()) {
		t.Errorf("host view of the worker's cgroup %q (%v), want it under %s", host, err, e.l.CgroupName())
	}
	lines := e.log.Steps("cgroup line")
	if len(lines) == 0 {
		t.Error("the worker reported no /proc/self/cgroup line")
	}
	for _, l := range lines {
		if !strings.HasSuffix(l, ":/") || strings.Contains(l, e.l.CgroupName()) {
			t.Errorf("the worker's /proc/self/cgroup line %q shows a host path", l)
		}
	}
	if _, err := e.s.Cancel(context.Background(), id, "inspected"); err != nil {
		t.Fatal(err)
	}
	if st := e.s.wait(t, id); st.Job.State != lifecycle.Cancelled {
		t.Errorf("held job ended %s, want cancelled", st.Job.State)
	}
	e.s.close(t)
	e.checkHostClean(t)
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err == nil {
		if s, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status")); strings.Contains(string(s), "\nUid:\t"+want) {
			t.Errorf("worker %d still runs after close", pid)
		}
	}
}

// A worker that fills its work dir gets ENOSPC at the bound (the artifact
// limit and the margin), the attempt fails with artifact_too_large, and
// nothing of it reaches the host's disk.
func TestHostileWorkerFillsItsWorkDir(t *testing.T) {
	e := hostileEnvFor(t, "fill")
	const limit = 2 << 20
	id := e.s.submit(t, spec(t, "fill", protocol.OpExecute, add2, []uint64{3, 5}, protocol.Limits{ArtifactBytes: limit}, nil))
	st := e.s.wait(t, id)
	if st.Job.State != lifecycle.Failed || st.Job.Error == nil || st.Job.Error.Code != protocol.CodeArtifactTooLarge {
		t.Fatalf("job %s %+v, want failed artifact_too_large", st.Job.State, st.Job.Error)
	}
	got := e.log.WaitStep(t, "fill")
	bound := int64(limit) + launch.DefaultWorkDirMargin
	var written int64
	if _, err := fmt.Sscanf(got[0], "%d bytes written", &written); err != nil || !strings.Contains(got[0], "no space left on device") || written > bound {
		t.Errorf("fill ended with %q, want ENOSPC after at most %d bytes", got[0], bound)
	}
	e.s.close(t)
	var total int64
	filepath.WalkDir(e.home, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			// The store, its high-water mark and the launcher's host
			// cache are the supervisor's.
			if info, err := d.Info(); err == nil && !strings.HasSuffix(p, ".db") && filepath.Base(p) != launch.HostCacheFile && p != HighWaterPath(e.home) {
				total += info.Size()
			}
		}
		return nil
	})
	if total > 0 {
		t.Errorf("%d bytes of the worker's files on the host's disk (bound of its tmpfs: %d)", total, bound)
	}
	e.checkHostClean(t)
}

// Every syscall outside the allowlist fails with EPERM, and the worker,
// having tried them, still does its job.
func TestHostileWorkerDeniedSyscalls(t *testing.T) {
	e := hostileEnvFor(t, "syscalls")
	id := e.s.submit(t, spec(t, "sys", protocol.OpExecute, add2, []uint64{3, 5}, protocol.Limits{}, nil))
	if st := e.s.wait(t, id); st.Job.State != lifecycle.Accepted {
		t.Fatalf("job %s %+v, want accepted", st.Job.State, st.Job.Error)
	}
	for _, name := range []string{"sync", "syncfs", "memfd_create", "pidfd_open", "mbind", "move_pages", "msgget",
		"inotify_init1", "personality", "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
		"ptrace", "mount", "unshare", "setuid", "keyctl", "bpf", "io_uring_setup", "userfaultfd", "perf_event_open",
		"process_vm_readv", "kill", "socketpair", "connect", "pipe2", "getdents64", "uname",
		"socket(AF_INET)", "socket(AF_NETLINK)", "clone(CLONE_NEWUSER)", "prctl(PR_SET_DUMPABLE)"} {
		e.expectStep(t, "syscall "+name, eperm)
	}
	for _, l := range e.log.Steps("cgroup line") {
		if !strings.HasSuffix(l, ":/") {
			t.Errorf("the worker's /proc/self/cgroup line %q shows a host path", l)
		}
	}
	e.s.close(t)
}

// findWorker finds the jailed worker that has name in its /work, from the
// host: a process of a uid in the launcher's range.
func findWorker(t *testing.T, e *hostileEnv, name string) (int, uint32) {
	t.Helper()
	r := workerids.DefaultRange
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil || st.Uid < r.First || st.Uid-r.First >= r.Count {
			continue
		}
		if _, err := os.Lstat(filepath.Join(p, "root", "work", name)); err != nil {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(p))
		return pid, st.Uid
	}
	t.Fatalf("no worker process with %s in its work dir", name)
	return 0, 0
}

func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// workMount returns /work's per-mount options and file system type in the
// worker's mount namespace.
func workMount(t *testing.T, pid int) (opts, fstype string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "mountinfo"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 8 && f[4] == "/work" {
			for i, x := range f {
				if x == "-" && i+1 < len(f) {
					return f[5], f[i+1]
				}
			}
		}
	}
	t.Fatalf("no /work mount in %d's mountinfo", pid)
	return "", ""
}

// A worker given a prove job fills its work dir with files, then writes
// into its certificate stream without end and never finishes: the files
// stop at its tmpfs's small bound (ENOSPC), the stream at the job's
// artifact limit, where the supervisor kills the worker (the job ends
// artifact_too_large, not at its wall-clock limit), and nothing is left:
// no certificate, no temporary file, no sandbox, on the host's disk. On
// main the tmpfs took the job's artifact limit and the stream did not
// exist (the worker found no FIFO; the job ran to its deadline).
func TestHostileWorkerFloodsItsStream(t *testing.T) {
	e := hostileEnvFor(t, "stream-flood")
	const limit = 2 << 20
	id := e.s.submit(t, spec(t, "flood", protocol.OpProve, add2, []uint64{3, 5},
		protocol.Limits{ArtifactBytes: limit, WallTimeMS: 60_000}, nil))
	st := e.s.wait(t, id)
	if st.Job.State != lifecycle.Failed || st.Job.Error == nil || st.Job.Error.Code != protocol.CodeArtifactTooLarge ||
		!strings.Contains(st.Job.Error.Message, "certificate stream passed the artifact limit") {
		t.Fatalf("job %s %+v, want failed artifact_too_large by the stream", st.Job.State, st.Job.Error)
	}
	got := e.log.WaitStep(t, "fill")
	var written int64
	if _, err := fmt.Sscanf(got[0], "%d bytes written", &written); err != nil || !strings.Contains(got[0], "no space left on device") || written > launch.DefaultWorkDirMargin {
		t.Errorf("fill ended with %q, want ENOSPC after at most %d bytes", got[0], launch.DefaultWorkDirMargin)
	}
	if got := e.log.Steps("stream"); len(got) > 0 {
		t.Logf("stream: %s", got[0])
		// The worker may be killed before it reports.
		// What the supervisor read (the limit and one byte) and what the
		// pipe held when it closed.
		if _, err := fmt.Sscanf(got[0], "%d bytes written", &written); err != nil || written > limit+1+artifacts.StreamPipeBytes {
			t.Errorf("stream ended with %q, want a failed write at most a pipe past %d bytes", got[0], limit)
		}
	}
	e.s.close(t)
	var total int64
	filepath.WalkDir(e.home, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil && info.Size() > 0 && !strings.HasSuffix(p, ".db") && filepath.Base(p) != launch.HostCacheFile && p != HighWaterPath(e.home) {
				t.Errorf("left on the host: %s (%d bytes)", p, info.Size())
				total += info.Size()
			}
		}
		return nil
	})
	if entries, _ := os.ReadDir(filepath.Join(e.home, "sandboxes")); len(entries) != 0 {
		t.Errorf("sandboxes left: %v", entries)
	}
	e.checkHostClean(t)
}

// A worker writes bytes of its own into its certificate stream, keeps it
// open for good, and then proves honestly (the certificate follows its
// bytes in the stream): the supervisor does not wait for an end of file
// that never comes (it reads what is left once the worker is gone), and
// the mixed bytes are not the certificate the worker reports: rejected,
// nothing kept.
func TestHostileWorkerHoldsItsStreamOpen(t *testing.T) {
	e := hostileEnvFor(t, "stream-prefix")
	id := e.s.submit(t, spec(t, "prefix", protocol.OpProve, add2, []uint64{3, 5},
		protocol.Limits{WallTimeMS: 60_000}, nil))
	st := e.s.wait(t, id)
	if st.Job.State != lifecycle.Rejected || st.Job.Error == nil || st.Job.Error.Code != protocol.CodeProofRejected ||
		!strings.Contains(st.Job.Error.Message, "digest") {
		t.Fatalf("job %s %+v, want rejected for its digest", st.Job.State, st.Job.Error)
	}
	e.expectStep(t, "stream prefix", "ok")
	e.s.close(t)
	if entries, _ := os.ReadDir(filepath.Join(e.home, "sandboxes")); len(entries) != 0 {
		t.Errorf("sandboxes left: %v", entries)
	}
	e.checkHostClean(t)
}
