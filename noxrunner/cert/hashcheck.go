package cert

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/hemera"
)

// hashCheck is a deferred check of a step whose result depends on a
// digest: hash (pattern 15: result = hash-data of HashData(digest(x)))
// and axis 0 (result = hash-data of digest(o)). The run must compute
// these one after another, because each operand is the previous step's
// result; the certificate discloses every result, so the verifier can
// check them in any order, on every core. Digests are most of the cost
// of a hash-heavy run (a permutation is ~5 µs, the rest of a step tens of
// nanoseconds).
type hashCheck struct {
	operand, result uint32
	hash            bool // pattern 15 (else axis 0)
}

// deferHash records a digest check; the result's shape is checked now.
func (v *verifier) deferHash(operand, result uint32, hash bool) {
	if !v.isHashShape(result) {
		v.r.fail("digest step result is not hash-data")
		return
	}
	v.hashes = append(v.hashes, hashCheck{operand, result, hash})
}

// parallelHashChecks is the number of deferred checks from which the
// verifier spreads them over the cores.
const parallelHashChecks = 16

// checkHashes runs the deferred checks. The table is read-only by now, so
// workers share it; each keeps its own digest memo. The first failing
// check in step order is the one reported, so the error does not depend
// on scheduling.
func (v *verifier) checkHashes() error {
	n := len(v.hashes)
	if n == 0 {
		return nil
	}
	workers := min(runtime.GOMAXPROCS(0), n/parallelHashChecks+1)
	bad := make([]bool, n)
	chunk := (n + workers - 1) / workers
	sizes := make([]int, workers)
	check := func(w int) {
		memo := newDigestMemo(v.ctx, v.t)
		defer func() { sizes[w] = len(memo.m) }()
		for i := w * chunk; i < min((w+1)*chunk, n); i++ {
			// A check costs one permutation or a few thousand (a fresh
			// operand's whole subtree): look at the context now and then.
			if i%64 == 0 && v.ctx.Err() != nil {
				return
			}
			bad[i] = !v.hashOK(v.hashes[i], memo.digest)
		}
	}
	// The first chunk on this goroutine: with one worker, no other.
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { check(w) })
	}
	check(0)
	wg.Wait()
	for _, n := range sizes {
		v.digested += n
	}
	if err := v.ctx.Err(); err != nil {
		return fmt.Errorf("verification stopped: %w", err)
	}
	for _, b := range bad {
		if b {
			return rejectf("a digest step's result is wrong")
		}
	}
	return nil
}

func (v *verifier) hashOK(h hashCheck, digest func(uint32) hemera.Digest) bool {
	d := digest(h.operand)
	if h.hash {
		d = hemera.HashData(d)
	}
	return v.isHashData(h.result, d)
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

// digestMemo digests table nodes, remembering what it computed, for one
// goroutine (iteratively: a witness may nest as deep as it is long). A
// map, not a table-sized slice: only the operands' subtrees are needed.
// Atoms are memoised too (ids are unique, so unlike the VM the verifier
// can reuse an atom's digest).
type digestMemo struct {
	ctx   context.Context
	t     *table
	m     map[uint32]hemera.Digest
	stack []uint32
}

func newDigestMemo(ctx context.Context, t *table) *digestMemo {
	return &digestMemo{ctx: ctx, t: t, m: map[uint32]hemera.Digest{}}
}

func (d *digestMemo) digest(id uint32) hemera.Digest {
	t := d.t
	if r, ok := d.m[id]; ok {
		return r
	}
	if t.isAtom(id) {
		r := hemera.AtomDigest(t.val[id])
		d.m[id] = r
		return r
	}
	d.stack = append(d.stack[:0], id)
	for done := 1; len(d.stack) > 0; done++ {
		// One operand can be a fresh subtree of millions of nodes.
		if done%1024 == 0 && d.ctx.Err() != nil {
			return hemera.Digest{} // checkHashes reports the context's error
		}
		top := d.stack[len(d.stack)-1]
		if _, ok := d.m[top]; ok {
			d.stack = d.stack[:len(d.stack)-1]
			continue
		}
		h, tl := t.head[top], t.tail[top]
		_, hok := d.m[h]
		_, tok := d.m[tl]
		hok = hok || t.isAtom(h) // digest() below handles atoms directly
		tok = tok || t.isAtom(tl)
		if !hok {
			d.stack = append(d.stack, h)
		}
		if !tok {
			d.stack = append(d.stack, tl)
		}
		if hok && tok {
			d.m[top] = hemera.PairDigest(d.digest(h), d.digest(tl))
			d.stack = d.stack[:len(d.stack)-1]
		}
	}
	return d.m[id]
}
