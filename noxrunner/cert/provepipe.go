package cert

import (
	"context"
	"fmt"
	"runtime"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// The v2 prover's pipeline: with two CPUs, the machine runs on ProveTo's
// goroutine and only records what each step needs into a batch, and a
// second goroutine does the prover's step (stepV2) on every record, in
// the order the machine made them, and alone writes to w. The
// certificate is the sequential prover's, byte for byte: the step is the
// same function, fed the same arguments in the same order; what it would
// have read from the machine (its census count and what it held) is
// taken on the machine's side when the record is made.
//
// Memory stays bounded: the batches are a fixed pool, and a machine that
// runs ahead of its prover waits for a free batch instead of growing a
// queue.

// Pipeline sizes: pipeBatches batches of pipeBatch records. A batch is a
// few hundred microseconds of a loop's steps, so a hand-off (a channel
// send and receive, sometimes a goroutine's wakeup) costs little beside
// it; the pool is under half a MiB.
const (
	pipeBatch   = 2048
	pipeBatches = 4
	// stepRecordBytes is the size of a stepRecord.
	stepRecordBytes = 56
	// pipeHeld is what the pool's batches cost, charged to heldV2.
	pipeHeld = pipeBatch * pipeBatches * stepRecordBytes
)

// stepRecord is one step as the machine saw it: Exit's arguments, and
// the machine's census count and held cells at that step. Its nouns
// keep their cells alive until the prover is done with them.
type stepRecord struct {
	formula, result     noun.Noun
	depth               int
	censuses, heldCells uint64
}

// Pipeline modes, for the tests: pipelineMode forces the pipeline on or
// off (pipelineAuto: usePipeline's rule).
const (
	pipelineAuto = iota
	pipelineOn
	pipelineOff
)

var pipelineMode = pipelineAuto

// usePipeline reports whether a v2 prove runs its prover on a second
// goroutine: when two CPUs are usable (GOMAXPROCS and the CPUs this
// process may run on), the rule spreadOver applies to the verifier's
// digests. With one, the second goroutine would only take turns with
// the machine and add hand-offs.
func usePipeline() bool {
	switch pipelineMode {
	case pipelineOn:
		return true
	case pipelineOff:
		return false
	}
	return min(runtime.GOMAXPROCS(0), runtime.NumCPU()) >= 2
}

// provePipe is the machine's tracer in a pipelined prove.
type provePipe struct {
	p *prover
	m *reduce.Machine
	// cur is the batch the machine fills, n its records so far.
	cur []stepRecord
	n   int
	// free holds the batches the prover is done with, full those it
	// has yet to record: each has room for the whole pool, so a send
	// never blocks.
	free, full chan []stepRecord
	// stop is closed to make the prover goroutine return before it has
	// recorded every batch (the machine failed); done is closed when
	// it has returned, and then err is its error and panicked what it
	// panicked with.
	stop, done chan struct{}
	err        error
	panicked   any
	ctx        context.Context
}

// errProverPanicked stops the machine when the prover goroutine has
// panicked; ProveTo then panics with the prover's value.
var errProverPanicked = fmt.Errorf("%w: the prover panicked", ErrNotProvable)

func newProvePipe(p *prover) *provePipe {
	q := &provePipe{p: p, cur: make([]stepRecord, pipeBatch),
		free: make(chan []stepRecord, pipeBatches), full: make(chan []stepRecord, pipeBatches),
		stop: make(chan struct{}), done: make(chan struct{})}
	for range pipeBatches - 1 {
		q.free <- make([]stepRecord, pipeBatch)
	}
	return q
}

// start runs the prover goroutine; ctx is the run's.
func (q *provePipe) start(ctx context.Context) {
	q.ctx = ctx
	go q.record()
}

// Exit records a step for the prover (reduce.Tracer). The error is the
// prover's, noticed at a hand-off: a bound it hit, a write error.
func (q *provePipe) Exit(formula, result noun.Noun, depth int) error {
	q.cur[q.n] = stepRecord{formula: formula, result: result, depth: depth,
		censuses: q.m.Censuses(), heldCells: q.m.Stats().Held}
	q.n++
	if q.n < pipeBatch {
		return nil
	}
	return q.handOff()
}

// handOff gives the full batch to the prover and takes a free one,
// waiting for it when the prover is behind.
func (q *provePipe) handOff() error {
	select {
	case <-q.done:
		return q.err
	default:
	}
	q.full <- q.cur[:q.n]
	q.cur, q.n = nil, 0
	select {
	case b := <-q.free:
		q.cur = b[:pipeBatch]
		return nil
	case <-q.done:
		return q.err
	case <-q.ctx.Done():
		// As the machine reports it: the prover may be stuck in a
		// write that the cancellation is about to end.
		return fmt.Errorf("%w: %w", reduce.ErrCancelled, q.ctx.Err())
	}
}

// record is the prover goroutine: the prover's step on every record, in
// order, until the machine is done (full closed), the prover fails, or
// ProveTo stops it.
func (q *provePipe) record() {
	defer close(q.done)
	defer func() {
		if v := recover(); v != nil {
			q.panicked, q.err = v, errProverPanicked
		}
	}()
	p := q.p
	for {
		var b []stepRecord
		var more bool
		select {
		case b, more = <-q.full:
		case <-q.stop:
			return
		}
		if !more {
			return // the machine is done
		}
		for i := range b {
			r := &b[i]
			if err := p.stepV2(r.formula, r.result, r.depth, r.censuses, r.heldCells); err != nil {
				q.err = err
				return
			}
		}
		clear(b) // let go of the run's nouns
		q.free <- b
	}
}

// finish hands the last records to the prover, waits until it has
// recorded them all and returns its error.
func (q *provePipe) finish() error {
	if q.n > 0 && q.cur != nil {
		q.full <- q.cur[:q.n]
	}
	q.cur, q.n = nil, 0
	close(q.full)
	<-q.done
	q.rethrow()
	return q.err
}

// abandon stops the prover and waits for it to return: the run failed.
func (q *provePipe) abandon() {
	close(q.stop)
	<-q.done
	q.rethrow()
}

// rethrow panics on ProveTo's goroutine with what the prover goroutine
// panicked with, as a sequential prove would have.
func (q *provePipe) rethrow() {
	if q.panicked != nil {
		panic(q.panicked)
	}
}
