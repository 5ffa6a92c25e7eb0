package integration

import (
	"strings"
	"testing"
	"time"
)

// An attempt that was running when its daemon was killed ends unknown at
// the next start. Its recorded end is when recovery found it, so `status`
// must not call that span its run time: it would count the time the
// daemon was down.
func TestStatusOfAnUnknownAttempt(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	d := startDaemon(t, home, 1)
	submitCLI(t, home, "lost", spinArgs(t, t.TempDir())...)
	waitRunning(t, d, "lost", 1)
	d.kill9()
	// Down for a while, so that a "ran" from start to recovery would show.
	time.Sleep(2 * time.Second)
	d = startDaemon(t, home, 1)
	defer d.stop(t)
	// One attempt allowed: recovery ends the job unknown.
	if st := waitDone(t, d, "lost"); st.Job.State != "unknown" {
		t.Fatalf("after the restart: %s", st.Job.State)
	}
	r := cli(t, "--home", home, "status", "lost")
	var line string
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "attempt 1:") {
			line = l
		}
	}
	if r.code != 0 || !strings.Contains(line, "attempt 1: unknown") || !strings.Contains(line, "how long it ran is not known") || strings.Contains(line, "ran 2") {
		t.Fatalf("status: exit %d, attempt 1 %q\n%s%s", r.code, line, r.stdout, r.stderr)
	}
}
