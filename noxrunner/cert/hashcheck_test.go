package cert

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/hemera"
)

// hashChainChecks builds, in a fresh table, a hash chain of links links
// from the atom 9 (each link the hash-data of HashData(digest(previous)),
// deferred as a hash check of the previous link) plus, on every third
// link, an axis-0 check of it; the link lieAt (if ≥ 0) has its two halves
// swapped, and the chain goes on from the swapped node, so that exactly
// one check is wrong. It returns the verifier holding the checks.
func hashChainChecks(t *testing.T, links, lieAt int) *verifier {
	t.Helper()
	tb := newTable(64)
	v := &verifier{ctx: context.Background(), r: &reader{}, t: tb, maxNodes: DefaultMaxNodes}
	hashData := func(d hemera.Digest) uint32 {
		node := func(a, b uint64) uint32 {
			ia, _ := tb.atom(a)
			ib, _ := tb.atom(b)
			id, _ := tb.pair(ia, ib)
			return id
		}
		l, r := node(d[0], d[1]), node(d[2], d[3])
		id, _ := tb.pair(l, r)
		return id
	}
	// digest is the particle of a node, computed here independently of
	// the verifier's digest set.
	var digest func(id uint32) hemera.Digest
	digest = func(id uint32) hemera.Digest {
		if tb.isAtom(id) {
			return hemera.AtomDigest(tb.val[id])
		}
		return hemera.PairDigest(digest(tb.head[id]), digest(tb.tail[id]))
	}
	h, _ := tb.atom(9)
	for k := range links {
		d := hemera.HashData(digest(h))
		if k == lieAt {
			d = hemera.Digest{d[2], d[3], d[0], d[1]}
		}
		next := hashData(d)
		v.deferHash(h, next, true)
		h = next
		if k%3 == 1 {
			v.deferHash(h, hashData(digest(h)), false)
		}
	}
	if v.r.err != nil {
		t.Fatal(v.r.err)
	}
	return v
}

// TestEachWrongHashIsFound: the verifier computes the digests of its
// deferred checks two at a time (by level: hemera.AtomDigest2 and
// PairDigest2) and runs its hash checks in pairs (HashData2), the first
// of a pair held while axis-0 checks pass between. A chain with one
// wrong link is rejected wherever that link is (first or second of a
// pair, the last one left over), for an odd and an even number of hash
// checks, at GOMAXPROCS 1 and 2; the honest chain is accepted. A pairing
// that checked a result against its partner's digest, or dropped the
// one left over, fails it (checked by breaking each by hand); the code
// before the pairing passes it, as it must.
func TestEachWrongHashIsFound(t *testing.T) {
	for _, procs := range []int{1, 2} {
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			for _, links := range []int{9, 10, 200} {
				if err := hashChainChecks(t, links, -1).checkHashes(); err != nil {
					t.Fatalf("GOMAXPROCS %d, %d links, honest: %v", procs, links, err)
				}
				for lie := range links {
					if links > 20 && lie%17 != 0 && lie < links-2 {
						continue
					}
					err := hashChainChecks(t, links, lie).checkHashes()
					if !errors.Is(err, ErrRejected) {
						t.Fatalf("GOMAXPROCS %d, %d links, link %d wrong: %v, want rejected", procs, links, lie, err)
					}
				}
			}
		}()
	}
}
