package cert

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/hemera"
)

// A digest step's result depends on a digest: hash (pattern 15: result
// = hash-data of HashData(digest(x))) and axis 0 (result = hash-data of
// digest(o)). The run must compute these one after another, because each
// operand is the previous step's result; the certificate discloses every
// result, so the verifier checks each result's shape during its walk and
// defers the digest itself, to compute the digests once and check them
// on every core after the walk.
//
// The deferred checks are kept per operand node: ids are canonical, so
// two steps of the same kind on the same operand are the same check, and
// a second, different result for it is wrong at once. A node is the
// operand of at most one check of each kind, so what the checks hold
// grows with the node table and is charged to the node bound with it
// (NodeBytes): a run of millions of digest steps over a table of a
// hundred nodes defers at most two hundred checks.

// checkKinds is the number of kinds of digest check: axis 0 and hash.
const checkKinds = 2

// digestChecks holds the deferred checks: the result to check for each
// operand id and kind (0: none; node 0 is an atom, never hash-data), in
// pages of checkPage ids allocated as operands appear in them, so that
// the checks of a large table cost no copies as it grows and nothing
// where it has no operand.
type digestChecks struct {
	pages [][]uint32
	n     int // checks held
}

const checkPage = 1 << 8

// slot is where the check of operand id and kind is, allocating its page.
func (c *digestChecks) slot(id uint32, kind int) *uint32 {
	p := int(id / checkPage)
	if p >= len(c.pages) {
		c.pages = append(c.pages, make([][]uint32, p+1-len(c.pages))...)
	}
	if c.pages[p] == nil {
		c.pages[p] = make([]uint32, checkPage*checkKinds)
	}
	return &c.pages[p][int(id%checkPage)*checkKinds+kind]
}

// reset drops every check and keeps the pages, cleared, for the next
// ones: a v2 walk empties its checks at every collection, and the pages
// of the slots its table reuses would otherwise be allocated again.
func (c *digestChecks) reset() {
	if c.n == 0 {
		return
	}
	for _, p := range c.pages {
		clear(p)
	}
	c.n = 0
}

// slots is the number of slots, a page's worth for every page whether
// allocated or not.
func (c *digestChecks) slots() int { return len(c.pages) * checkPage * checkKinds }

// at is the result of slot i (0: no check); its operand is i/checkKinds,
// its kind i%checkKinds.
func (c *digestChecks) at(i int) uint32 {
	p := c.pages[i/(checkPage*checkKinds)]
	if p == nil {
		return 0
	}
	return p[i%(checkPage*checkKinds)]
}

// deferHash records a digest check; the result's shape is checked now.
func (v *verifier) deferHash(operand, result uint32, hash bool) {
	if !v.isHashShape(result) {
		v.r.fail("digest step result is not hash-data")
		return
	}
	kind := 0
	if hash {
		kind = 1
	}
	switch slot := v.checks.slot(operand, kind); *slot {
	case 0:
		*slot = result
		v.checks.n++
	case result: // the same check again
	default:
		v.r.fail("digest step result differs from an earlier one of the same operand")
	}
}

// parallelDigests is the number of digests (or checks) from which the
// verifier spreads them over the cores: about a hundred microseconds.
const parallelDigests = 64

// checkHashes runs the deferred checks: every operand's digest is
// computed once, children first, into one structure that all cores
// share (digests.go), then each check compares its result with it. The
// error does not depend on which check fails or on scheduling.
func (v *verifier) checkHashes() error {
	c := &v.checks
	if c.n == 0 {
		return nil
	}
	d := newDigestSet(v.t, c, v.digests)
	v.digests = d
	v.digested += d.computeAll(v.ctx)
	if err := v.ctx.Err(); err != nil {
		return fmt.Errorf("verification stopped: %w", err)
	}
	var bad atomic.Bool
	spread(c.slots(), c.n, func(from, to int) {
		// A hash check's digest is permuted once more; those
		// permutations are independent, so they run in pairs
		// (hemera.HashData2), the first of a pair waiting in held.
		held := -1
		var heldDigest hemera.Digest
		for i := from; i < to; i++ {
			result := c.at(i)
			if result == 0 {
				continue
			}
			if i%256 == 0 && (bad.Load() || v.ctx.Err() != nil) {
				return
			}
			dg := d.of(uint32(i / checkKinds))
			switch {
			case i%checkKinds == 0:
				if !v.isHashData(result, dg) {
					bad.Store(true)
					return
				}
			case held < 0:
				held, heldDigest = i, dg
			default:
				h1, h2 := hemera.HashData2(heldDigest, dg)
				if !v.isHashData(c.at(held), h1) || !v.isHashData(result, h2) {
					bad.Store(true)
					return
				}
				held = -1
			}
		}
		if held >= 0 && !v.isHashData(c.at(held), hemera.HashData(heldDigest)) {
			bad.Store(true)
		}
	})
	if err := v.ctx.Err(); err != nil {
		return fmt.Errorf("verification stopped: %w", err)
	}
	if bad.Load() {
		return rejectf("a digest step's result is wrong")
	}
	return nil
}

// spread runs work over [0, n) in chunks, on as many goroutines as
// spreadOver(items) allows (items: how many of the n are real work), the
// first chunk on the calling goroutine.
func spread(n, items int, work func(from, to int)) {
	workers := spreadOver(items)
	if workers <= 1 {
		work(0, n)
		return
	}
	chunk := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { work(min(w*chunk, n), min((w+1)*chunk, n)) })
	}
	work(0, min(chunk, n))
	wg.Wait()
}

// spreadOver is how many goroutines share n digests or checks: one per
// parallelDigests, at most GOMAXPROCS and at most the CPUs this process
// may run on (more goroutines than CPUs only add switching: at
// GOMAXPROCS 16 on 2 CPUs, 16 goroutines cost a third more CPU for the
// same digests).
func spreadOver(n int) int {
	return min(runtime.GOMAXPROCS(0), runtime.NumCPU(), n/parallelDigests+1)
}

// isHashShape reports whether id is [[a b] [c d]] with atoms a..d.
func (v *verifier) isHashShape(id uint32) bool {
	t := v.t
	if t.isAtom(id) {
		return false
	}
	l, r := t.head[id], t.tail[id]
	return !t.isAtom(l) && !t.isAtom(r) && t.isAtom(t.head[l]) && t.isAtom(t.tail[l]) && t.isAtom(t.head[r]) && t.isAtom(t.tail[r])
}
