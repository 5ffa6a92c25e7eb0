package supervisor

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// openStub opens a supervisor whose launcher launches nothing, for
// driving its own steps (admission, bookkeeping, retention) without
// workers; its log goes to the returned buffer. It is not started: tests
// move jobs with endStub.
func openStub(t testing.TB, home string, edit func(*Config)) (*Supervisor, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	cfg := Config{Home: home, Slots: 1, Launcher: stubLauncher{}, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	if edit != nil {
		edit(&cfg)
	}
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s, &logs
}

// endStub prepares the next attempt of the queue and ends it the way a
// worker's run would: accepted (err nil: an execute result with output
// 8), or with err's code in state.
func endStub(t testing.TB, s *Supervisor, err *protocol.Error, state lifecycle.State) string {
	t.Helper()
	ctx := context.Background()
	a, _, perr := s.prepareNext(ctx)
	if perr != nil || a == nil {
		t.Fatalf("prepare: %v (attempt %v)", perr, a)
	}
	defer s.unregister(a)
	sp, prog, ferr := s.frozenSpec(a)
	if ferr != nil {
		t.Fatal(ferr)
	}
	if err := s.transition(ctx, a, lifecycle.Running, "worker launched", nil); err != nil {
		t.Fatal(err)
	}
	if err != nil {
		s.finish(ctx, a, outcome{err: err, state: state, wall: time.Millisecond})
		return a.job.ID
	}
	res := protocol.Result{Contract: protocol.ContractV1, JobID: sp.JobID, Attempt: a.n, Profile: sp.Profile,
		ProgramIdentity: *sp.Program.Identity, Kind: protocol.KindExecution, Output: []uint64{8}, Reductions: 3, Budget: sp.Limits.Reductions}
	s.accept(ctx, attemptResult{a: a, spec: sp, prog: prog, out: outcome{result: &res, wall: time.Millisecond}, log: s.log})
	return a.job.ID
}
