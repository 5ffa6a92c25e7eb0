package fencing

import (
	"sync"
	"testing"
)

// TestRaceOneClaimOneCall: 64 goroutines dispatch at once — half of them
// copies of the one token Prepare made, half permits of their own for
// the same attempt (as if preparation had been bypassed) — and exactly
// one claim is recorded and the act runs exactly once. Run with -race.
func TestRaceOneClaimOneCall(t *testing.T) {
	for round := range 5 {
		h := newHarness(t)
		h.grant(tagCount)
		h.bind()
		p := h.install(callOnInput(tagCount), tagCount)
		inv := h.invoke(p, uint64(round))
		op := h.awaiting(inv)
		tok, err := h.e.Prepare(ctx, inv.ID)
		h.must(err)
		meta := tok.Metadata()
		const n = 64
		var wg sync.WaitGroup
		start := make(chan struct{})
		results := make([]*Result, n)
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if i%2 == 0 {
					results[i], errs[i] = h.e.Dispatch(ctx, tok)
				} else {
					results[i], errs[i] = h.e.dispatch(ctx, meta)
				}
			}()
		}
		close(start)
		wg.Wait()
		ok := 0
		for i, err := range errs {
			if err == nil {
				ok++
				if results[i].Outcome == nil {
					t.Fatalf("the winning dispatch has no outcome: %s", results[i].Unknown)
				}
				continue
			}
			if e, isRefusal := AsRefusal(err); !isRefusal || (e.Refusal != UnknownOutcome && e.Refusal != Conflict) {
				t.Fatalf("dispatch %d: %v", i, err)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d dispatches succeeded, want 1", round, ok)
		}
		wantCalls(t, "64 racing dispatches", h.count, 1)
		if h.claimOf(op.ID, 1) == nil {
			t.Fatal("no claim")
		}
		if !tok.Consumed() {
			t.Fatal("the token is not consumed")
		}
	}
}
