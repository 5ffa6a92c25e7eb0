package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

// When a drained daemon went between two of its answers, drain reads
// from the home's store, once the daemon has exited, how the attempts it
// had not named ended: one a stop interrupted was handed back, one that
// ended otherwise ended, and a job the store does not hold (a cluster's,
// on etcd) stays unsaid.
func TestSettleUnsaid(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	body, err := os.ReadFile(filepath.Join(repoRoot, "integration", "testdata", "spin.nox"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.TrimSpace(string(body))
	spin := writeFile(t, dir, "spin.nox", "[2 [[3 [[1 "+f+"] [0 2]]] [1 "+f+"]]]")
	d := serveBin(t, home)
	if r := cli(t, "--home", home, "submit", "--job-id", "ended", writeFile(t, dir, "add.nox", add), "--input-values", "3,5", "--wait"); r.code != 0 {
		t.Fatalf("submit ended: %+v", r)
	}
	if r := cli(t, "--home", home, "submit", "--job-id", "busy", spin, "--input-values", "60", "--budget", "1152921504606846976"); r.code != 0 {
		t.Fatalf("submit busy: %+v", r)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if env := jsonRun(t, 0, "--home", home, "status", "busy"); strings.Contains(string(env.Result), `"state":"running"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("busy never ran")
		}
	}
	d.Process.Signal(syscall.SIGTERM)
	if !waitExit(context.Background(), d.Process.Pid, "", time.Minute) {
		t.Fatal("serve did not exit")
	}
	v := apitypes.DrainReport{Ended: []string{}, HandedBack: []string{}, Unsaid: []string{"busy", "ended", "nosuch"}}
	settleUnsaid(context.Background(), home, &v)
	if !slices.Equal(v.HandedBack, []string{"busy"}) || !slices.Equal(v.Ended, []string{"ended"}) || !slices.Equal(v.Unsaid, []string{"nosuch"}) {
		t.Fatalf("settled: %+v", v)
	}
}
