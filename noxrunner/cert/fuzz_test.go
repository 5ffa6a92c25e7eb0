package cert

import (
	"bytes"
	"context"
	"runtime"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
)

// Resource bounds FuzzVerifyResources holds every input to. A verification
// of n bytes may allocate at most fuzzAllocPerByte·n + fuzzAllocBase
// bytes, and do at most fuzzWorkPerByte·n + fuzzWorkBase units of work,
// where a unit is a call walked, a byte read, a node added (or its bound
// computed) or a digest computed: each is constant time or one hemera
// permutation, so the work is a bound on the time. (Fuzzing measured at
// most 50 bytes allocated and 1.6 units of work per byte, away from the
// base.)
const (
	fuzzMaxInput     = 64 << 10
	fuzzAllocPerByte = NodeBytes
	fuzzAllocBase    = 256 << 10
	fuzzWorkPerByte  = 8
	fuzzWorkBase     = 4 * (MaxProgramNodes + MaxInputs + 1)
)

// FuzzVerifyResources feeds arbitrary certificates of up to 64 KiB to
// Verify and checks on every input that the allocation and the work stay
// within a fixed multiple of the input's size, whether it is accepted or
// not. An input is a statement (the first byte picks one of a few real
// ones, or 0xff takes the statement from the input itself) and the rest
// of a certificate (call count and witness), verified for the job its
// statement describes: that is the cheapest way past the statement
// check, so that the witness is what gets fuzzed.
func FuzzVerifyResources(f *testing.F) {
	var heads [][]byte
	for _, c := range []struct {
		program string
		inputs  []uint64
	}{
		{add2, []uint64{1, 2}}, {rich, []uint64{7, 11}}, {hashChain, nil}, {hashList, nil},
		{hashTree, []uint64{3}}, {hostile.DeepBranch(), []uint64{2}},
	} {
		raw := prove(f, c.program, c.inputs, 1<<20).Certificate
		st, _ := ReadStatement(raw)
		head := appendStatement(nil, st)
		f.Add(byte(len(heads)), raw[len(head):])
		heads = append(heads, head)
	}
	for _, raw := range [][]byte{
		hostile.NestedResult(1000, 1000),
		hostile.NestedResultClaimingBudget(1000, 1000),
		hostile.PendingStack(1000, 1000),
	} {
		f.Add(byte(0xff), raw)
	}
	f.Fuzz(func(t *testing.T, which byte, rest []byte) {
		b := rest
		if int(which) < len(heads) {
			b = append(append([]byte(nil), heads[which]...), rest...)
		}
		if len(b) > fuzzMaxInput {
			return
		}
		var exp Expect
		if st, err := ReadStatement(b); err == nil {
			exp = expectOf(st)
		}
		v := &verifier{ctx: context.Background(), r: &reader{b: b}, maxNodes: DefaultMaxNodes}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _, err := v.verify(exp)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		if limit := uint64(fuzzAllocPerByte*len(b) + fuzzAllocBase); alloc > limit {
			t.Fatalf("%d bytes allocated %d, over %d (%v)", len(b), alloc, limit, err)
		}
		var nodes int
		if v.t != nil {
			nodes = int(v.t.len())
		}
		work := int(v.entered) + v.r.pos + 2*nodes + v.digested + v.checks.n
		if limit := fuzzWorkPerByte*len(b) + fuzzWorkBase; work > limit {
			t.Fatalf("%d bytes took %d units of work, over %d (%d calls, %d nodes, %d digests; %v)",
				len(b), work, limit, v.entered, nodes, v.digested, err)
		}
		// Each digest once, whatever GOMAXPROCS; a check per operand
		// node and kind.
		if v.digested > nodes || v.checks.n > checkKinds*nodes || uint64(v.checks.n) > v.entered {
			t.Fatalf("%d digests and %d hash checks for %d nodes and %d calls", v.digested, v.checks.n, nodes, v.entered)
		}

		// Streamed, the same verdict within the same bounds, and no more
		// read than the bytes the verification got to, plus one window.
		src := &countingReader{r: bytes.NewReader(b)}
		sv := &verifier{ctx: context.Background(), r: newStreamReader(src, int64(len(b))), maxNodes: DefaultMaxNodes}
		runtime.ReadMemStats(&before)
		_, _, serr := sv.verify(exp)
		runtime.ReadMemStats(&after)
		if (err == nil) != (serr == nil) || err != nil && err.Error() != serr.Error() {
			t.Fatalf("held whole: %v; streamed: %v", err, serr)
		}
		alloc = after.TotalAlloc - before.TotalAlloc
		if limit := uint64(fuzzAllocPerByte*len(b) + fuzzAllocBase); alloc > limit {
			t.Fatalf("streamed, %d bytes allocated %d, over %d (%v)", len(b), alloc, limit, err)
		}
		if used := sv.r.at(); src.read > used+streamWindow || used != int64(v.r.pos) {
			t.Fatalf("streamed, read %d bytes and used %d; held whole, used %d", src.read, used, v.r.pos)
		}
	})
}
