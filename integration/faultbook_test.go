package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// faultRounds is a fault test's rounds (FAULT_ROUNDS, else def: a smoke
// run) and the seed of its random choices (FAULT_SEED, to replay a run's
// choices; its timing is not replayed), logged so a failure can be.
func faultRounds(t *testing.T, def int) (rounds int, seed uint64) {
	rounds = def
	if v, err := strconv.Atoi(os.Getenv("FAULT_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	seed = uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("FAULT_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("FAULT_SEED=%d, %d rounds", seed, rounds)
	return rounds, seed
}

// faultBook is what a fault test's clients did and saw, kept to check
// the store's promises against after every fault (TestServeFaults for
// one home, TestClusterServeFaults for several hosts).
type faultBook struct {
	t   *testing.T
	mu  sync.Mutex
	rng *rand.Rand
	// specs: every job submitted; submitted: the ids a daemon answered
	// a submission of; removed: the ids gc removed; ended: the jobs last
	// seen terminal.
	specs              map[string][]byte
	submitted, removed map[string]bool
	ended              map[string]*apitypes.Job
	seq                int
}

func newFaultBook(t *testing.T, seed, salt uint64) *faultBook {
	return &faultBook{t: t, rng: rand.New(rand.NewPCG(seed, seed^salt)),
		specs: map[string][]byte{}, submitted: map[string]bool{}, removed: map[string]bool{}, ended: map[string]*apitypes.Job{}}
}

func (b *faultBook) intN(n int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rng.IntN(n)
}

// draw is a client's next move: a new job id (prefix, round, a
// sequence), the ids it may cancel (answered) or submit again
// (removed), and a choice below n.
func (b *faultBook) draw(prefix string, round, n int) (id string, recent, gone []string, pick int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	for s := range b.submitted {
		recent = append(recent, s)
	}
	for s := range b.removed {
		gone = append(gone, s)
	}
	return fmt.Sprintf("%s%d-%d", prefix, round, b.seq), recent, gone, b.rng.IntN(n)
}

// submit submits spec through c and notes the id once a daemon answered.
func (b *faultBook) submit(ctx context.Context, c *api.Client, id string, spec []byte, retry *apitypes.RetryRequest) {
	b.mu.Lock()
	b.specs[id] = spec
	b.mu.Unlock()
	if _, err := c.Submit(ctx, spec, 0, retry); err == nil {
		b.mu.Lock()
		b.submitted[id] = true
		b.mu.Unlock()
	}
}

// collect runs gc through c and notes what it removed.
func (b *faultBook) collect(ctx context.Context, c *api.Client) {
	rep, err := c.GC(ctx, 0, "")
	if err != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range rep.Removed {
		b.removed[r.JobID] = true
		delete(b.submitted, r.JobID)
	}
}

// resubmitRemoved submits a removed job's own payload again through c
// (where names c): only the tombstone refuses it.
func (b *faultBook) resubmitRemoved(ctx context.Context, c *api.Client, gone []string, where string) {
	old := gone[b.intN(len(gone))]
	b.mu.Lock()
	spec := b.specs[old]
	b.mu.Unlock()
	_, err := c.Submit(ctx, spec, 0, nil)
	var pe *protocol.Error
	if err == nil || (errors.As(err, &pe) && pe.Code != protocol.CodeInvalidJob && pe.Code != protocol.CodeBusy) {
		b.t.Errorf("a removed job's id %s submitted again%s: %v", old, where, err)
	}
}

// checkJob checks one listed job as it is now (b.mu held): not one gc
// removed, no problem jobProblems finds, unchanged if it had ended. It
// returns the job's state.
func (b *faultBook) checkJob(when string, st *apitypes.JobStatus, ev []apitypes.Event) lifecycle.State {
	t, j := b.t, st.Job
	if b.removed[j.JobID] {
		t.Errorf("%s: job %s removed by gc is listed again", when, j.JobID)
	}
	for _, p := range jobProblems(st, ev) {
		t.Errorf("%s: job %s: %s", when, j.JobID, p)
	}
	// An ended job stays as it ended, but for one move: a cancel ends an
	// unknown job cancelled (README, cancel), with no new attempt.
	old := b.ended[j.JobID]
	cancelledUnknown := old != nil && old.State == lifecycle.Unknown && j.State == lifecycle.Cancelled && old.Attempts == j.Attempts
	if old != nil && !cancelledUnknown && (old.State != j.State || old.Attempts != j.Attempts ||
		old.AcceptedAttempt != j.AcceptedAttempt || !bytes.Equal(old.Result, j.Result)) {
		t.Errorf("%s: job %s ended %s after %d attempt(s), now %s after %d", when, j.JobID, old.State, old.Attempts, j.State, j.Attempts)
	}
	if j.State.Terminal() {
		b.ended[j.JobID] = &j
	}
	return j.State
}
