package fencing

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// tagSlow is an act that says when it starts, waits to be let go, and
// then, as an act must, gives up if its context has ended by then.
const tagSlow = 0xAC750000000000F1

type slowAct struct {
	entered chan struct{}
	gate    chan struct{}
}

func (s *slowAct) fn(ctx context.Context, c hostact.Call) hostact.Result {
	s.entered <- struct{}{}
	select {
	case <-s.gate:
	case <-ctx.Done():
	}
	if ctx.Err() != nil {
		return hostact.Failed("slow: cancelled")
	}
	return hostact.Value(noun.Atom(7))
}

func registerSlow(h *harness) *slowAct {
	s := &slowAct{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	h.must(h.acts.Register("slow", tagSlow, s.fn))
	return s
}

func callAct(tag uint64) string { return fmt.Sprintf("[16 [[1 %d] [1 0]]]", tag) }

// TestCancelledDispatchGoesThrough: a dispatch whose context ends after
// its attempt was recorded (a daemon's shutdown, a CLI's SIGTERM) still
// claims the attempt and calls the act: the attempt is durable, and
// stopping there would leave an unknown attempt the owner must
// reconcile although the act never ran.
func TestCancelledDispatchGoesThrough(t *testing.T) {
	h := newHarness(t)
	h.grant(hostact.TagEmit)
	h.bind()
	p := h.install(callAct(hostact.TagEmit), hostact.TagEmit)
	inv := h.invoke(p)
	h.awaiting(inv)
	tok, err := h.e.Prepare(ctx, inv.ID)
	h.must(err)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	res, err := h.e.Dispatch(cctx, tok)
	h.must(err)
	if res.Outcome == nil || res.Outcome.Kind != store.OutcomeValue || atomOf(t, res.Outcome.Value) != 1 {
		t.Fatalf("a cancelled dispatch: %+v", res)
	}
	if h.claimOf(res.Operation, res.Attempt) == nil {
		t.Fatal("no claim")
	}
}

// TestShutdownLetsTheActFinish: a drive cancelled while its act runs
// (the daemon's SIGTERM) lets the act finish with a context that has not
// ended: its outcome is the act's value, recorded, and the invocation
// goes on at the next drive. Before, the act saw the shutdown's
// cancellation and failed, and the invocation failed with it.
func TestShutdownLetsTheActFinish(t *testing.T) {
	h := newHarness(t)
	slow := registerSlow(h)
	inv, cancel, done := driveIntoSlow(h, slow)
	cancel()
	close(slow.gate)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled drive: %v", err)
	}
	v := h.view(inv.ID)
	if v.Status.Terminal() || len(v.Operations) != 1 || v.Operations[0].Attempts[0].Outcome == nil ||
		v.Operations[0].Attempts[0].Outcome.Kind != store.OutcomeValue {
		t.Fatalf("after the shutdown: %s %v, operations %+v", v.Status, v.Error, v.Operations)
	}
	got := h.drive(inv)
	if got.Status != store.InvocationCompleted || len(got.Output) != 1 || got.Output[0] != 7 {
		t.Fatalf("the next drive: %s %v output %v", got.Status, got.Error, got.Output)
	}
}

// TestActGraceEnds: an act that does not finish by itself sees its
// context end ActGrace after its drive was cancelled, so a shutdown is
// still bounded; what it answers then (here a failure) is its outcome.
func TestActGraceEnds(t *testing.T) {
	h := newHarness(t)
	slow := registerSlow(h)
	e, err := New(Config{Store: h.st.Fencing(), Trust: h.st.Trust(), Vault: h.e.vault, Acts: h.acts, Boot: "boot-grace", Version: "test",
		DeviceID: "test-device", ActGrace: time.Millisecond})
	h.must(err)
	h.e = e
	inv, cancel, done := driveIntoSlow(h, slow)
	cancel() // the gate stays shut: only the grace ends the act
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled drive: %v", err)
	}
	o := h.view(inv.ID).Operations[0].Attempts[0].Outcome
	if o == nil || o.Kind != store.OutcomeFailed || o.Message != "slow: cancelled" {
		t.Fatalf("the act's outcome after its grace: %+v", o)
	}
	if _, err := New(Config{Store: h.st.Fencing(), Trust: h.st.Trust(), Vault: h.e.vault, Acts: h.acts, Boot: "b", ActGrace: -1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("a negative grace: %v", err)
	}
}

// driveIntoSlow grants and installs a prog that calls the slow act,
// invokes it and drives it in the background until the act has been
// entered; cancel cancels that drive, done gives its error.
func driveIntoSlow(h *harness, slow *slowAct) (inv *store.Invocation, cancel context.CancelFunc, done <-chan error) {
	h.grant(tagSlow)
	h.bind()
	inv = h.invoke(h.install(callAct(tagSlow), tagSlow))
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { _, err := h.e.Drive(cctx, inv.ID); errc <- err }()
	<-slow.entered
	return inv, cancel, errc
}
