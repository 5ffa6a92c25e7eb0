package cert

import (
	"context"
	"errors"
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
// taken on the machine's side when the record is made, and so is what
// it needs of the formula (stepKindV2): the formula's cell is in the
// machine's cache, and a record is 24 bytes.
//
// Memory stays bounded: the batches are a fixed pool, and a machine that
// runs ahead of its prover waits for a free batch instead of growing a
// queue.

// Pipeline sizes: pipeBatches batches of pipeBatch records. A batch is
// a hundred microseconds or more of a loop's steps, so a hand-off (a
// channel send and receive, sometimes a goroutine's wakeup) costs little
// beside it; the pool's records are 384 KiB. (Batches of 1024 cost
// more than sequential steps on the loops, each hand-off waking the
// prover; 2048-16,384 measured within each other's spread:
// docs/proving.md.)
const (
	pipeBatch   = 4096
	pipeBatches = 4
	// stepRecordBytes is the size of a stepRecord, censusMarkBytes of
	// a censusMark.
	stepRecordBytes = 24
	censusMarkBytes = 24
	// pipeHeld is what the pool's batches cost at most (a census
	// mark a record), charged to heldV2.
	pipeHeld = pipeBatch * pipeBatches * (stepRecordBytes + censusMarkBytes)
)

// stepRecord is one step as the machine saw it: what stepV2 takes of
// Exit's arguments. Its result keeps its cells alive until the prover
// is done with it.
type stepRecord struct {
	result noun.Noun
	depth  int32
	kind   uint8 // stepKindV2 of the formula
}

// censusMark is a change of the machine's census count (and of the
// cells it held, which changes only then) from the step at of a batch
// on.
type censusMark struct {
	at                  int
	censuses, heldCells uint64
}

// stepBatch is a batch of records and the census marks among them.
type stepBatch struct {
	recs  []stepRecord // pipeBatch long
	marks []censusMark
}

// Pipeline modes, for the tests: pipelineMode forces the pipeline on or
// off, whatever ProveOptions.Pipeline says (pipelineAuto: usePipeline's
// rule).
const (
	pipelineAuto = iota
	pipelineOn
	pipelineOff
)

var pipelineMode = pipelineAuto

// usePipeline reports whether a v2 prove runs its prover on a second
// goroutine: when asked (ProveOptions.Pipeline) and two CPUs are usable
// (GOMAXPROCS and the CPUs this process may run on), the rule
// spreadOver applies to the verifier's digests. With one, the second
// goroutine would only take turns with the machine and add hand-offs.
func usePipeline(asked bool) bool {
	switch pipelineMode {
	case pipelineOn:
		return true
	case pipelineOff:
		return false
	}
	return asked && min(runtime.GOMAXPROCS(0), runtime.NumCPU()) >= 2
}

// provePipe is the machine's tracer in a pipelined prove.
type provePipe struct {
	p *prover
	m *reduce.Machine
	// cur is the batch the machine fills, n its records so far.
	cur *stepBatch
	n   int
	// censuses is the machine's census count at the last mark.
	censuses uint64
	// free holds the batches the prover is done with, full those it
	// has yet to record: each has room for the whole pool, so a send
	// never blocks. made counts the batches made so far: they are made
	// as the run needs them (a short run's prove makes one).
	free, full chan *stepBatch
	made       int
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
// panicked; ProveTo then panics with the prover's value (finish,
// abandon), so the error itself is never returned.
var errProverPanicked = errors.New("the prover panicked")

func newProvePipe(p *prover) *provePipe {
	return &provePipe{p: p, cur: newStepBatch(), made: 1,
		free: make(chan *stepBatch, pipeBatches), full: make(chan *stepBatch, pipeBatches),
		stop: make(chan struct{}), done: make(chan struct{})}
}

func newStepBatch() *stepBatch {
	return &stepBatch{recs: make([]stepRecord, pipeBatch)}
}

// start runs the prover goroutine; ctx is the run's.
func (q *provePipe) start(ctx context.Context) {
	q.ctx = ctx
	go q.record()
}

// Exit records a step for the prover (reduce.Tracer). The error is the
// prover's, noticed at a hand-off: a bound it hit, a write error.
func (q *provePipe) Exit(formula, result noun.Noun, depth int) error {
	b := q.cur
	if c := q.m.Censuses(); c != q.censuses {
		q.censuses = c
		b.marks = append(b.marks, censusMark{at: q.n, censuses: c, heldCells: q.m.Stats().Held})
	}
	b.recs[q.n] = stepRecord{result: result, depth: int32(depth), kind: stepKindV2(formula)}
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
	q.cur.recs = q.cur.recs[:q.n]
	q.full <- q.cur
	q.cur, q.n = nil, 0
	select {
	case b := <-q.free:
		q.cur = b
		return nil
	default:
	}
	if q.made < pipeBatches {
		q.cur = newStepBatch()
		q.made++
		return nil
	}
	select {
	case b := <-q.free:
		q.cur = b
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
	// The machine's census count and held cells at the step, as of
	// the last mark.
	var censuses, heldCells uint64
	for {
		var b *stepBatch
		var more bool
		select {
		case b, more = <-q.full:
		case <-q.stop:
			return
		}
		if !more {
			return // the machine is done
		}
		marks := b.marks
		for i := range b.recs {
			if len(marks) > 0 && marks[0].at == i {
				censuses, heldCells = marks[0].censuses, marks[0].heldCells
				marks = marks[1:]
			}
			r := &b.recs[i]
			if err := p.stepV2(r.kind, r.result, int(r.depth), censuses, heldCells); err != nil {
				q.err = err
				return
			}
		}
		clear(b.recs) // let go of the run's nouns
		b.recs, b.marks = b.recs[:pipeBatch], b.marks[:0]
		q.free <- b
	}
}

// finish hands the last records to the prover, waits until it has
// recorded them all and returns its error.
func (q *provePipe) finish() error {
	if q.n > 0 && q.cur != nil {
		q.cur.recs = q.cur.recs[:q.n]
		q.full <- q.cur
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
