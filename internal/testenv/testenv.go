// Package testenv holds what the test suites that run real workers
// (supervisor, supervisor/launch, integration) check of the host before
// and after a test: whether it may isolate workers, and that nothing of
// the test's workers is left on it; and the helpers several suites share
// (a goroutine-safe Buffer, starting the dashboard command).
package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// leakWait is how long a leak check waits for the kernel to reap what a
// closed test just released (a process exiting, a cgroup emptying).
const leakWait = 5 * time.Second

// RequireRoot skips, or with REQUIRE_ISOLATION=1 fails, where the host
// cannot isolate workers: the launcher needs root for its cgroups and
// namespaces.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("REQUIRE_ISOLATION") == "1" {
			t.Fatal("REQUIRE_ISOLATION=1 but not root")
		}
		t.Skip("isolation needs root (set REQUIRE_ISOLATION=1 to make this a failure)")
	}
}

// WorkerLeftovers names the processes running workerBin that are still
// alive (zombies are their parent's to reap, not a leak) and the attempt
// cgroups left below the parent group cgroupName, on cgroup v1 and v2.
func WorkerLeftovers(workerBin, cgroupName string) []string {
	var left []string
	procs, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, p := range procs {
		if exe, err := os.Readlink(p); err == nil && exe == workerBin {
			if st, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "stat")); !strings.Contains(string(st), ") Z ") {
				left = append(left, "process "+p)
			}
		}
	}
	groups, _ := filepath.Glob("/sys/fs/cgroup/*/" + cgroupName + "/*/*")
	more, _ := filepath.Glob("/sys/fs/cgroup/*/*/*/" + cgroupName + "/*/*")
	for _, g := range append(groups, more...) {
		if st, err := os.Stat(g); err == nil && st.IsDir() {
			left = append(left, "cgroup "+g)
		}
	}
	return left
}

// WaitNoLeftovers polls left every poll until it names nothing, for at
// most five seconds, and returns what it still names then (nil once
// clean). The caller reports what is left in its own words.
func WaitNoLeftovers(left func() []string, poll time.Duration) []string {
	deadline := time.Now().Add(leakWait)
	for {
		l := left()
		if len(l) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return l
		}
		time.Sleep(poll)
	}
}

// RemoveParentGroups removes the (empty) parent groups named name that a
// test's launcher leaves, which every boot of a home shares.
func RemoveParentGroups(name string) {
	for _, pattern := range []string{"/sys/fs/cgroup/*/" + name, "/sys/fs/cgroup/*/*/*/" + name} {
		dirs, _ := filepath.Glob(pattern)
		for _, d := range dirs {
			os.Remove(d)
		}
	}
}
