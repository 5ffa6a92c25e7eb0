package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// TestRestoreRunsNothingTwice is docs/store.md's "Recovering" with the
// real binaries: a backup taken while N invocations of a prog that emits
// twice waited at their first act (the placement released) and M prove
// jobs were queued behind a running one; after it the daemon ran both
// acts of each, accepted the jobs, ran more invocations and accepted
// more jobs; then the backup is put back — with `store restore`, or
// copied over the store by hand — and serve started again. The owner
// reconciles what the restarted daemon says is unknown, from emit.jsonl.
// In the end emit.jsonl never holds an operation twice, no job is
// accepted twice (one the restored store holds ends unknown, one it
// forgot is refused when submitted again), an invocation made after the
// restore runs under an id no earlier one had, and store check finds
// nothing. On the build before this work, `store restore` did not exist,
// and the copy by hand made the restarted daemon emit each operation a
// second time and accept the jobs again.
func TestRestoreRunsNothingTwice(t *testing.T) {
	requireIsolation(t)
	for _, how := range []string{"store-restore", "cp"} {
		t.Run(how, func(t *testing.T) { restoreScenario(t, how == "cp") })
	}
}

func restoreScenario(t *testing.T, byHand bool) {
	const n, m1, m2, n2 = 4, 3, 2, 2
	ctx := context.Background()
	home := newHome(t)
	dir := t.TempDir()
	mustCLI := func(args ...string) string {
		t.Helper()
		r := cli(t, append([]string{"--home", home}, args...)...)
		if r.code != 0 {
			t.Fatalf("%v: %+v", args, r)
		}
		return strings.TrimSpace(r.stdout)
	}
	mustCLI("neuron", "init", "--network", "restorenet")
	mustCLI("grant", "set", "--revision", "0", "--acts", "emit")
	call := fmt.Sprintf("[16 [[1 %d] [1 0]]]", hostact.TagEmit)
	prog := mustCLI("prog", "install", writeProgram(t, dir, "emit2.nox", "[3 ["+call+" "+call+"]]"), "--acts", "emit")

	d := startDaemon(t, home, 1)
	root, err := d.client.Placement(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.client.Release(ctx, root.Generation); err != nil {
		t.Fatal(err)
	}
	var waiting []string
	for i := range n {
		inv, err := d.client.Invoke(ctx, prog, []uint64{uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
		waiting = append(waiting, inv.ID)
	}
	for _, id := range waiting {
		waitProposed(t, d, id)
	}
	spin := program(t, "spin.nox")
	if _, err := d.client.Submit(ctx, jobSpec(t, "blocker", protocol.OpExecute, spin, []uint64{40}, protocol.Limits{}), 0, nil); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, d, "blocker", 1)
	var jobs []string
	for i := range m1 {
		id := fmt.Sprintf("before-%d", i)
		if _, err := d.client.Submit(ctx, jobSpec(t, id, protocol.OpProve, "[5 [[0 2] [0 6]]]", []uint64{uint64(i), 5}, protocol.Limits{}), 0, nil); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, id)
	}
	backup := filepath.Join(dir, "backup.db")
	mustCLI("store", "backup", backup)

	// After the backup: the acts run, the jobs are accepted, more of both.
	if _, err := d.client.Bind(ctx, root.Generation+1); err != nil {
		t.Fatal(err)
	}
	if _, err := d.client.Cancel(ctx, "blocker", "test"); err != nil {
		t.Fatal(err)
	}
	for _, id := range waiting {
		waitCompleted(t, d, id)
	}
	for i := range m2 {
		id := fmt.Sprintf("after-%d", i)
		if _, err := d.client.Submit(ctx, jobSpec(t, id, protocol.OpProve, "[5 [[0 2] [0 6]]]", []uint64{uint64(i), 7}, protocol.Limits{}), 0, nil); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, id)
	}
	var forgotten []string
	for i := range n2 {
		inv, err := d.client.Invoke(ctx, prog, []uint64{uint64(100 + i)})
		if err != nil {
			t.Fatal(err)
		}
		waitCompleted(t, d, inv.ID)
		forgotten = append(forgotten, inv.ID)
	}
	accepted := map[string]uint32{}
	for _, id := range jobs {
		st := waitDone(t, d, id)
		if st.Job.State != lifecycle.Accepted {
			t.Fatalf("%s ended %s before the restore", id, st.Job.State)
		}
		accepted[id] = st.Job.AcceptedAttempt
	}
	lines := emitLog(t, home)
	if len(lines) != 2*(n+n2) {
		t.Fatalf("%d lines before the restore, want %d", len(lines), 2*(n+n2))
	}
	d.stop(t)

	if byHand {
		b, err := os.ReadFile(backup)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(supervisor.StorePath(home), b, 0o600); err != nil {
			t.Fatal(err)
		}
	} else {
		out := mustCLI("store", "restore", backup)
		if !strings.Contains(out, "the next start fences it") {
			t.Fatalf("store restore said: %s", out)
		}
	}
	restored := time.Now()
	d2 := startDaemon(t, home, 1)

	// The owner: every unknown attempt is reconciled with the line its
	// act wrote after the backup (each of these wrote one).
	lineOf := map[string]int{}
	for i, l := range lines {
		lineOf[l.Operation] = i + 1
	}
	reconciled := 0
	for _, id := range waiting {
		for round := 0; ; round++ {
			v, err := d2.client.WaitInvocation(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			emitLog(t, home) // fails on an operation written twice
			if store.InvocationStatus(v.Status).Terminal() {
				if v.Status != string(store.InvocationCompleted) || len(v.Output) != 2 {
					t.Fatalf("invocation %s ended %s %v %v", id, v.Status, v.Output, v.Error)
				}
				op0, op1 := v.Operations[0].ID, v.Operations[1].ID
				if v.Output[0] != uint64(lineOf[op0]) || v.Output[1] != uint64(lineOf[op1]) {
					t.Fatalf("invocation %s output %v, its lines %d and %d", id, v.Output, lineOf[op0], lineOf[op1])
				}
				break
			}
			if round > 10 {
				t.Fatalf("invocation %s did not end: %s", id, v.Status)
			}
			if !v.Idle {
				continue
			}
			for _, op := range v.Operations {
				for _, a := range op.Attempts {
					if !a.Unknown {
						continue
					}
					if a.Executor != store.ExecutorRestored || a.Claim != nil {
						t.Fatalf("operation %s of a restored invocation: executor %s, claim %v", op.ID, a.Executor, a.Claim)
					}
					line, ok := lineOf[op.ID]
					if !ok {
						t.Fatalf("operation %s is unknown and not in emit.jsonl", op.ID)
					}
					value := strconv.Itoa(line)
					if _, err := d2.client.Reconcile(ctx, op.ID, api.ReconcileBody{Attempt: a.N, Value: &value}); err != nil {
						t.Fatal(err)
					}
					reconciled++
				}
			}
		}
	}
	if reconciled != 2*n {
		t.Fatalf("%d operations reconciled, want %d", reconciled, 2*n)
	}

	// Jobs: none accepted twice.
	for _, id := range jobs {
		st, err := d2.client.Status(ctx, id)
		if strings.HasPrefix(id, "after-") {
			if err == nil || !strings.Contains(err.Error(), "forgotten") {
				t.Fatalf("%s, forgotten by the restored store: %v %v", id, st, err)
			}
			r := cli(t, "--home", home, "submit", "--job-id", id, writeProgram(t, dir, "add.nox", "[5 [[0 2] [0 6]]]"), "--op", "prove", "--input-values", "0,7")
			if r.code != 2 || !strings.Contains(r.stderr, "forgotten when the store was restored") {
				t.Fatalf("%s submitted again: %+v", id, r)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if st.Job.State != lifecycle.Unknown || st.Job.AcceptedAttempt != 0 {
			t.Fatalf("%s (queued at the backup, accepted at attempt %d after it): %s, accepted %d", id, accepted[id], st.Job.State, st.Job.AcceptedAttempt)
		}
		events, err := d2.client.Events(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			if ev.Time.After(restored) && (ev.To == lifecycle.Running || ev.To == lifecycle.Accepted) {
				t.Fatalf("%s ran again after the restore: %+v", id, ev)
			}
		}
		cert := filepath.Join(home, "sandboxes", id, strconv.Itoa(int(accepted[id])))
		if _, err := os.Stat(cert); err != nil {
			t.Fatalf("%s: its certificate's sandbox: %v", id, err)
		}
	}

	// After the restore: a new invocation runs, under a new id.
	out := mustCLI("invoke", prog, "--input-values", "7", "--wait")
	if want := fmt.Sprintf("%d\n%d", len(lines)+1, len(lines)+2); out != want {
		t.Fatalf("an invocation after the restore printed %q, want its lines %s", out, want)
	}
	invs, err := d2.client.Invocations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, inv := range invs {
		for _, f := range forgotten {
			if inv.ID == f {
				t.Fatalf("invocation %s of the forgotten history is in the store again", f)
			}
		}
	}
	seen := map[string]int{}
	for i, l := range emitLog(t, home) {
		if at, dup := seen[l.Operation]; dup {
			t.Fatalf("operation %s emitted twice (lines %d and %d)", l.Operation, at, i+1)
		}
		seen[l.Operation] = i + 1
	}
	if len(seen) != 2*(n+n2+1) {
		t.Fatalf("emit.jsonl holds %d operations, want %d", len(seen), 2*(n+n2+1))
	}
	if r := cli(t, "--home", home, "store", "check"); r.code != 0 || !strings.Contains(r.stdout, "no problems") || !strings.Contains(r.stdout, "fenced") {
		t.Fatalf("store check: %+v", r)
	}
	d2.stop(t)
}

// waitProposed waits until the invocation waits on a proposed operation.
func waitProposed(t *testing.T, d *daemon, id string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		v, err := d.client.Invocation(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Operations) == 1 && v.Operations[0].Stage == uint8(store.StageProposed) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("invocation %s: %s with %d operations", id, v.Status, len(v.Operations))
		}
	}
}

// waitCompleted waits until the invocation completed.
func waitCompleted(t *testing.T, d *daemon, id string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; {
		v, err := d.client.WaitInvocation(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if v.Status == string(store.InvocationCompleted) {
			return
		}
		if store.InvocationStatus(v.Status).Terminal() || time.Now().After(deadline) {
			t.Fatalf("invocation %s: %s %v", id, v.Status, v.Error)
		}
	}
}
