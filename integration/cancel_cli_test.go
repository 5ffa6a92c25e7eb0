package integration

import (
	"strings"
	"testing"
)

// cancel of a queued job ends it at once, and says so: "cancelled", not
// "cancellation requested", which is what a running job's reply says.
func TestCancelOfAQueuedJobSaysItEnded(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	d := startDaemon(t, home, 1)
	defer d.stop(t)
	spin := spinArgs(t, t.TempDir())
	submitCLI(t, home, "busy", spin...)
	waitRunning(t, d, "busy", 1)
	// The one slot is taken: this job waits in the queue.
	submitCLI(t, home, "waiting", spin...)
	if r := cli(t, "--home", home, "cancel", "waiting"); r.code != 0 || r.stdout != "waiting: cancelled\n" {
		t.Fatalf("cancel of the queued job: %+v", r)
	}
	if r := cli(t, "--home", home, "cancel", "busy"); r.code != 0 || !strings.Contains(r.stdout, "busy: cancellation ") {
		t.Fatalf("cancel of the running job: %+v", r)
	}
	waitDone(t, d, "busy")
}
