package limits_test

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/limits"
	"github.com/cyberia-to/cyber-supervisor/limits/limitstest"
)

// TestEnterThreadForksIntoTheGroup: a process forked by a thread that
// entered a group (EnterThread, with CgroupFD) is in every group of the
// attempt from its first instruction; the thread is back in its own
// groups once leave returns, and no other thread ever moved.
func TestEnterThreadForksIntoTheGroup(t *testing.T) {
	m := newManager(t)
	c := m.Capabilities()
	limitstest.RequireIsolation(t, c.MemoryLimit && c.PidsLimit, "limits: %v", c.Reasons)
	g := newGroup(t, m, "thread", limits.Spec{MemoryBytes: 256 << 20, Pids: 64})
	before, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}

	type result struct {
		inside, after string
		out           []byte
		err           error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // the thread ends with the goroutine: nothing else runs on it
		var r result
		defer func() { done <- r }()
		leave, err := g.EnterThread()
		if err != nil {
			r.err = err
			return
		}
		b, _ := os.ReadFile("/proc/thread-self/cgroup")
		r.inside = string(b)
		cmd := helperCmd("cgroup", "")
		if fd, ok := g.CgroupFD(); ok {
			cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
		}
		var out strings.Builder
		cmd.Stdout = &out
		startErr := cmd.Start()
		if err := leave(); err != nil {
			r.err = err
			return
		}
		b, _ = os.ReadFile("/proc/thread-self/cgroup")
		r.after = string(b)
		if startErr != nil {
			r.err = startErr
			return
		}
		r.err = cmd.Wait()
		r.out = []byte(out.String())
	}()
	r := <-done
	if errors.Is(r.err, limits.ErrThreadPlacement) {
		t.Skipf("groups refuse the thread here: %v", r.err)
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	suffix := "/" + m.Options().Instance + "/thread"
	in := 0
	for _, l := range strings.Split(strings.TrimSpace(string(r.out)), "\n") {
		if strings.HasSuffix(l, suffix) {
			in++
		}
	}
	if want := len(g.Dirs()); in != want {
		t.Fatalf("child in %d of %d groups:\n%s\ndirs %v", in, want, r.out, g.Dirs())
	}
	if !strings.Contains(r.inside, suffix) {
		t.Errorf("the thread never entered the group:\n%s", r.inside)
	}
	if r.after != string(before) {
		t.Errorf("the thread is not back home:\nbefore %s\nafter %s", before, r.after)
	}
	after, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("the process moved:\nbefore %s\nafter %s", before, after)
	}
}

// TestEnterThreadRefusesAFreezerGroup: a group killed through the v1
// freezer would freeze and sweep a thread of the supervisor inside it:
// it refuses the thread, moving nothing.
func TestEnterThreadRefusesAFreezerGroup(t *testing.T) {
	m := newManager(t)
	if err := limits.ForceFreezer(m); err != nil {
		limitstest.RequireIsolation(t, false, "no v1 freezer: %v", err)
	}
	g := newGroup(t, m, "frozen", limits.Spec{})
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, _ := os.ReadFile("/proc/thread-self/cgroup")
	if _, err := g.EnterThread(); !errors.Is(err, limits.ErrThreadPlacement) {
		t.Fatalf("EnterThread on a freezer group: %v, want ErrThreadPlacement", err)
	}
	if after, _ := os.ReadFile("/proc/thread-self/cgroup"); string(after) != string(before) {
		t.Fatalf("the thread moved:\nbefore %s\nafter %s", before, after)
	}
}
