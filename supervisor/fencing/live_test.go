package fencing

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// engineWith replaces the harness's engine by one of cfg's bounds (its
// store, vault, acts and boot are the harness's).
func (h *harness) engineWith(boot string, cfg Config) {
	h.t.Helper()
	cfg.Store, cfg.Trust, cfg.Vault, cfg.Acts, cfg.Boot = h.st.Fencing(), h.st.Trust(), h.e.vault, h.acts, boot
	cfg.Version, cfg.DeviceID, cfg.ReservationSteps = "test", "test-device", h.reservation
	e, err := New(cfg)
	h.must(err)
	h.t.Cleanup(e.Close)
	h.e = e
	h.bind()
}

// step takes an invocation waiting on a proposal through its act
// (prepare, dispatch, outcome) and on to its next proposal or its end,
// without a drive: what a daemon does between two restarts.
func (h *harness) step(inv *store.Invocation) *store.Invocation {
	h.t.Helper()
	tok, err := h.e.Prepare(ctx, inv.ID)
	h.must(err)
	res, err := h.e.Dispatch(ctx, tok)
	h.must(err)
	if res.Outcome == nil {
		h.fatalf("outcome unknown: %s", res.Unknown)
	}
	got, err := h.e.Advance(ctx, inv.ID)
	h.must(err)
	return got
}

// TestSupervisorStepsAreBoundedByTheLimit is the bound of issue #26
// item 4: the VM steps the supervisor executes for an invocation, every
// slice and replay counted, stay within its step limit however many
// acts it makes after its work (here 2^17 steps, then 256 acts): each
// step is executed once, and the invocation is charged exactly those.
// A restart costs one replay of what was charged, free, and no more:
// over R restarts the steps executed are the run's plus R prefixes,
// each within the limit. Before, every slice replayed the program from
// its start, 256 × 2^17 = 33.5 million steps for a limit of 2^19.
func TestSupervisorStepsAreBoundedByTheLimit(t *testing.T) {
	h := newHarnessSync(t, false) // 640 acts: steps are counted, not commits
	h.grant(tagHost)
	h.bind()
	const limit, acts = 1 << 19, 256
	src := workThenActs(16, acts, tagHost)
	want := referenceSteps(t, src, []uint64{1})
	p, _, err := h.e.InstallProg(ctx, ProgSpec{Program: parse(t, src), Acts: []uint64{tagHost}, StepLimit: limit})
	h.must(err)
	inv := h.invoke(p, 1)
	s0 := h.e.stats.steps.Load()
	got := h.drive(inv)
	executed := h.e.stats.steps.Load() - s0
	if got.Status != store.InvocationCompleted || got.Ordinal != acts || got.Charged != want {
		t.Fatalf("%s %v: %d acts, charged %d, want %d", got.Status, got.Error, got.Ordinal, got.Charged, want)
	}
	if executed != want || executed > limit {
		t.Fatalf("the supervisor executed %d steps for a run of %d (limit %d)", executed, want, limit)
	}
	if n := h.e.stats.fresh.Load(); n != 1 {
		t.Fatalf("%d runs started for one invocation", n)
	}

	// Restarts every 64 acts: each new boot replays what was charged
	// once, free, and goes on with that run.
	inv = h.invoke(p, 1)
	engines, base := stepsOf{h.e}, h.e.stats.steps.Load()
	got, err = h.e.Advance(ctx, inv.ID)
	h.must(err)
	var prefixes uint64
	for !got.Status.Terminal() {
		if got.Ordinal%64 == 0 {
			prefixes += got.Charged
			h.reopen()
			h.bind()
			engines = append(engines, h.e)
		}
		got = h.step(got)
	}
	executed = engines.total() - base
	if got.Status != store.InvocationCompleted || got.Charged != want || len(engines) != 5 {
		t.Fatalf("with restarts: %s %v charged %d, want %d; %d boots", got.Status, got.Error, got.Charged, want, len(engines))
	}
	if executed != want+prefixes {
		t.Fatalf("with %d restarts the supervisor executed %d steps, want the run's %d and the replays' %d",
			len(engines)-1, executed, want, prefixes)
	}
	for i, e := range engines[1:] {
		if n := e.stats.steps.Load(); n > 2*limit || e.stats.replays.Load() != 1 {
			t.Fatalf("boot %d executed %d steps in %d replays", i+2, n, e.stats.replays.Load())
		}
	}
}

// stepsOf sums the VM steps every engine of a test executed.
type stepsOf []*Engine

func (s stepsOf) total() uint64 {
	var n uint64
	for _, e := range s {
		n += e.stats.steps.Load()
	}
	return n
}

func waitGoroutines(t *testing.T, max int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > max {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), max, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSecondReplayInABootIsCharged: the bound on replays. With room for
// one parked run, two invocations that wait between drives evict each
// other's run; the first replay of each in this boot is free, and a
// second one is charged as new steps (its prefix), so that no eviction
// pattern makes the supervisor execute more than the invocation's limit
// a boot beyond one free replay. Before, every replay was free (and
// every slice replayed).
func TestSecondReplayInABootIsCharged(t *testing.T) {
	h := newHarness(t)
	h.grant(tagHost)
	h.engineWith("one-parked", Config{MaxParked: 1})
	src := workThenActs(12, 4, tagHost)
	want := referenceSteps(t, src, []uint64{1})
	p, _, err := h.e.InstallProg(ctx, ProgSpec{Program: parse(t, src), Acts: []uint64{tagHost}, StepLimit: 1 << 16})
	h.must(err)
	a, b := h.invoke(p, 1), h.invoke(p, 1)
	advance := func(inv *store.Invocation) *store.Invocation {
		got, err := h.e.Advance(ctx, inv.ID)
		h.must(err)
		return got
	}
	a = advance(a) // parked, idle
	b = advance(b) // parks and evicts a's run
	if h.e.stats.goroutines.Load() != 1 || h.e.stats.replays.Load() != 0 {
		t.Fatalf("%d runs kept, %d replays", h.e.stats.goroutines.Load(), h.e.stats.replays.Load())
	}
	a = h.step(a) // replays a (free), evicts b's run
	b = h.step(b) // replays b (free), evicts a's run
	if n := h.e.stats.replays.Load(); n != 2 {
		t.Fatalf("%d replays, want 2", n)
	}
	prefix := a.Charged
	a = h.step(a) // a's second replay in this boot: charged
	if n := h.e.stats.replays.Load(); n != 3 {
		t.Fatalf("%d replays, want 3", n)
	}
	a = h.drive(a) // goes on with its run
	if a.Status != store.InvocationCompleted || a.Charged != want+prefix {
		t.Fatalf("twice replayed: %s %v charged %d, want %d + %d", a.Status, a.Error, a.Charged, want, prefix)
	}
	prefix = b.Charged
	b = h.drive(b) // its run was evicted by a's: its second replay
	if b.Status != store.InvocationCompleted || b.Charged != want+prefix || h.e.stats.replays.Load() != 4 {
		t.Fatalf("twice replayed: %s %v charged %d, want %d + %d", b.Status, b.Error, b.Charged, want, prefix)
	}
	if n := h.e.stats.goroutines.Load(); n != 0 {
		t.Fatalf("%d runs kept after both ended", n)
	}
}

// TestKeptRunsEndWithTheirInvocation: a run is kept (one goroutine)
// while its invocation waits between drives, and ends when the
// invocation does, however it ends (completed, failed by its act,
// cancelled, after an unknown outcome is reconciled), or when the
// engine closes; no goroutine is left. Runs stopped at acts hold no
// place among MaxRuns.
func TestKeptRunsEndWithTheirInvocation(t *testing.T) {
	h := newHarness(t)
	h.grant(tagHost, tagCount)
	h.bind()
	runtime.GC()
	before := runtime.NumGoroutine()
	kept := func(what string, want int64) {
		t.Helper()
		if n := h.e.stats.goroutines.Load(); n != want {
			t.Fatalf("%s: %d runs kept, want %d", what, n, want)
		}
		if n := len(h.e.runs); n != 0 {
			t.Fatalf("%s: %d places among MaxRuns held", what, n)
		}
	}
	p := h.install(callTwice(tagCount), tagCount)
	if got := h.drive(h.invoke(p, 1)); got.Status != store.InvocationCompleted {
		t.Fatalf("%s %v", got.Status, got.Error)
	}
	kept("completed", 0)
	waiting := h.invoke(p, 2)
	h.awaiting(waiting)
	kept("waiting on a proposal", 1)
	_, err := h.e.Cancel(ctx, waiting.ID, "")
	h.must(err)
	kept("cancelled", 0)

	h.count.set("fail")
	if got := h.drive(h.invoke(p, 3)); got.Status != store.InvocationFailed {
		t.Fatalf("a failed act: %s %v", got.Status, got.Error)
	}
	kept("failed", 0)

	h.count.set("unknown")
	inv := h.invoke(p, 4)
	_, err = h.e.Drive(ctx, inv.ID)
	wantRefusal(t, "an unknown outcome", err, UnknownOutcome)
	kept("unknown outcome", 1)
	h.count.set("")
	op := h.view(inv.ID).Operations[0]
	_, _, err = h.e.Reconcile(ctx, op.ID, 1, OutcomeSpec{Value: noun.Atom(9)})
	h.must(err)
	fresh := h.e.stats.fresh.Load()
	if got := h.drive(inv); got.Status != store.InvocationCompleted || got.Output[0] != 9 {
		t.Fatalf("reconciled: %s %v %v", got.Status, got.Error, got.Output)
	}
	if h.e.stats.fresh.Load() != fresh {
		t.Fatal("the reconciled invocation was replayed, not resumed")
	}
	kept("reconciled and completed", 0)

	h.awaiting(h.invoke(p, 5))
	h.awaiting(h.invoke(p, 6))
	kept("two waiting", 2)
	h.e.Close()
	kept("closed", 0)
	waitGoroutines(t, before)
}

// TestParkedCellsAreBounded: a stopped run that holds more pairs than
// the lot has room for is not parked: it keeps its place among MaxRuns
// while its drive goes on with it (no replay), and is dropped when the
// drive ends; the next drive replays it (its first replay: free).
func TestParkedCellsAreBounded(t *testing.T) {
	h := newHarness(t)
	h.grant(tagHost)
	h.engineWith("small-lot", Config{ParkedCells: 512})
	// 2^10 pairs built, kept across the act.
	src := "[3 [" + doubled(3, 10, "[1 0]") + " " + callAct(tagHost) + "]]"
	want := referenceSteps(t, src, nil)
	p := h.install(src, tagHost)
	got := h.drive(h.invoke(p))
	if got.Status != store.InvocationCompleted || got.Charged != want || h.e.stats.replays.Load() != 0 {
		t.Fatalf("%s %v charged %d want %d, %d replays", got.Status, got.Error, got.Charged, want, h.e.stats.replays.Load())
	}
	inv := h.invoke(p)
	h.awaiting(inv)
	if n, c := h.e.stats.goroutines.Load(), h.e.lot.cells; n != 0 || c != 0 || len(h.e.runs) != 0 {
		t.Fatalf("after its drive: %d runs kept, %d pairs parked, %d places held", n, c, len(h.e.runs))
	}
	got = h.drive(inv)
	if got.Status != store.InvocationCompleted || got.Charged != want || h.e.stats.replays.Load() != 1 {
		t.Fatalf("%s %v charged %d want %d, %d replays", got.Status, got.Error, got.Charged, want, h.e.stats.replays.Load())
	}
}

// TestStoppedRunHoldsNothing: while a run is stopped at its act it holds
// no place among MaxRuns (another invocation runs in the only one), no
// store transaction and no guard (the grant is replaced meanwhile).
func TestStoppedRunHoldsNothing(t *testing.T) {
	h := newHarness(t)
	slow := registerSlow(h)
	h.grant(tagSlow, tagHost)
	h.engineWith("one-run", Config{MaxRuns: 1})
	slowProg := h.install("[3 ["+doubled(5, 12, "[1 1]")+" "+callAct(tagSlow)+"]]", tagSlow)
	inv := h.invoke(slowProg)
	done := make(chan error, 1)
	go func() { _, err := h.e.Drive(ctx, inv.ID); done <- err }()
	<-slow.entered
	if n := len(h.e.runs); n != 0 {
		t.Fatalf("the run stopped at its act holds %d places", n)
	}
	other := h.install(callOnInput(tagHost), tagHost)
	if got := h.drive(h.invoke(other, 4)); got.Status != store.InvocationCompleted {
		t.Fatalf("beside a stopped run: %s %v", got.Status, got.Error)
	}
	close(slow.gate)
	h.must(<-done)
	waiting := h.invoke(slowProg)
	h.awaiting(waiting)
	h.grant(tagSlow, tagHost) // the guard for writing, beside a stopped run
	if got := h.drive(waiting); got.Status != store.InvocationCompleted {
		t.Fatalf("%s %v", got.Status, got.Error)
	}
}

// TestCappedSlicesGoOn: with ReservationSteps capping slices, a run
// that uses its slice's steps pauses and the next slice goes on with
// it: the steps executed are the run's, not a replay per slice.
func TestCappedSlicesGoOn(t *testing.T) {
	h := newHarness(t)
	h.reservation = 100_000
	h.e = h.engine("capped")
	h.grant(tagHost)
	h.bind()
	long := doubled(5, 19, "[1 1]")
	src := "[3 [" + callOn(long, tagHost) + " " + long + "]]"
	want := referenceSteps(t, src, []uint64{3})
	p, _, err := h.e.InstallProg(ctx, ProgSpec{Program: parse(t, src), Acts: []uint64{tagHost}, StepLimit: 4 << 20})
	h.must(err)
	got := h.drive(h.invoke(p, 3))
	if got.Status != store.InvocationCompleted || got.Charged != want {
		t.Fatalf("%s %v charged %d, want %d", got.Status, got.Error, got.Charged, want)
	}
	if n, s := h.e.stats.steps.Load(), h.e.stats.slices.Load(); n > want+s*1024 || s < 20 {
		t.Fatalf("%d steps executed in %d slices for a run of %d", n, s, want)
	}
}

// TestCancelledRunIsDropped: a drive cancelled while its run executes
// (a shutdown) ends the run (no goroutine left); the next drive replays
// it, free, and the invocation ends charged its run's steps.
func TestCancelledRunIsDropped(t *testing.T) {
	h := newHarness(t)
	h.grant(tagHost)
	h.bind()
	src := "[3 [" + callAct(tagHost) + " " + doubled(5, 22, "[1 1]") + "]]"
	want := referenceSteps(t, src, nil)
	p, _, err := h.e.InstallProg(ctx, ProgSpec{Program: parse(t, src), Acts: []uint64{tagHost}, StepLimit: 1 << 24})
	h.must(err)
	inv := h.invoke(p)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := h.e.Drive(cctx, inv.ID); done <- err }()
	deadline := time.Now().Add(time.Minute)
	for h.host.Load() == 0 || h.e.stats.running.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the run never went on after its act")
		}
		time.Sleep(100 * time.Microsecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled drive: %v", err)
	}
	if n := h.e.stats.goroutines.Load(); n != 0 {
		t.Fatalf("%d runs kept after a cancelled run", n)
	}
	got := h.drive(inv)
	if got.Status != store.InvocationCompleted || got.Charged != want || h.host.Load() != 1 {
		t.Fatalf("%s %v charged %d want %d, host ran %d times", got.Status, got.Error, got.Charged, want, h.host.Load())
	}
}

// TestRecoveryGoesOnWithItsReplay: a reservation a crash left open is
// recovered by replaying its slice, and the slice after goes on with
// that run: one run in the new boot, not two.
func TestRecoveryGoesOnWithItsReplay(t *testing.T) {
	h := newHarness(t)
	h.grant(tagHost)
	h.bind()
	src := "[3 [" + doubled(5, 14, "[1 1]") + " " + callTwice(tagHost) + "]]"
	want := referenceSteps(t, src, nil)
	p, _, err := h.e.InstallProg(ctx, ProgSpec{Program: parse(t, src), Acts: []uint64{tagHost}, StepLimit: 1 << 16})
	h.must(err)
	inv := h.invoke(p)
	h.must(h.e.write(ctx, func(tx store.FencingTx) error { _, err := h.e.reserve(tx, inv.ID); return err }))
	h.reopen()
	h.bind()
	got := h.drive(inv)
	if got.Status != store.InvocationCompleted || got.Charged != want {
		t.Fatalf("%s %v charged %d, want %d", got.Status, got.Error, got.Charged, want)
	}
	if n, s := h.e.stats.fresh.Load(), h.e.stats.steps.Load(); n != 1 || s != want {
		t.Fatalf("the new boot started %d runs and executed %d steps for a run of %d", n, s, want)
	}
}
