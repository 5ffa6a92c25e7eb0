package integration

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentRunsOnOneHome: one-shot runs started together on one
// home each end accepted, or busy when the store's lock stayed taken past
// its wait; never with a job recorded as failed. (When a run made its
// launcher, its cgroups, while its store opened, before it held the
// lock, the holder's sweep of earlier boots' leftovers removed those
// groups, and a run that got the lock next failed its attempt with
// internal_error, "create cgroup: ... no such file or directory". A run
// now makes its launcher under the lock.)
func TestConcurrentRunsOnOneHome(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	prog := writeProgram(t, t.TempDir(), "add.nox", "[5 [[0 2] [0 6]]]")
	// The host cache written first, as on any home after its first run.
	if r := cli(t, runArgs(home, prog, "--input-values", "1,2")...); r.code != 0 {
		t.Fatalf("first run: %+v", r)
	}
	const rounds, together = 8, 3
	accepted := 0
	for round := range rounds {
		var wg sync.WaitGroup
		results := make([]cliResult, together)
		for i := range together {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = cli(t, runArgs(home, prog, "--input-values", fmt.Sprintf("%d,%d", round, i), "--job-id", fmt.Sprintf("r%d-%d", round, i))...)
			}()
		}
		wg.Wait()
		for i, r := range results {
			want := fmt.Sprintf("%d\n", round+i)
			switch {
			case r.code == 0 && r.stdout == want:
				accepted++
			case r.code == 4 && strings.Contains(r.stderr, "busy"):
			default:
				t.Errorf("round %d run %d: exit %d, stdout %q\n%s", round, i, r.code, r.stdout, r.stderr)
			}
		}
	}
	if accepted == 0 {
		t.Fatal("no run was accepted")
	}
	d := startDaemon(t, home, 1)
	defer d.stop(t)
	for _, state := range []string{"failed", "unknown"} {
		env := cliJSON(t, 0, "--home", home, "list", "--state", state)
		if s := string(env.Result); s != "[]" {
			t.Errorf("%s jobs: %s", state, s)
		}
	}
}
