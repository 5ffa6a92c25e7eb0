package cert

import (
	"bytes"
	"context"
	"runtime"
	"testing"
)

// TestV2VerifierHeldIsBounded: verifying a v2 hash chain, whose table is
// collected many times (a small Wmin), what the verifier holds at the
// end (held) and what it allocates over the whole walk do not grow with
// the chain: eight times the links cost the same, within a few pages.
// The digest checks run at every collection reuse the arrays of the
// last ones, and the checks their pages. Fails before the reuse: each
// collection allocated its digest set and its check pages anew (about
// 2.5 MB more allocated for the longer chain).
func TestV2VerifierHeldIsBounded(t *testing.T) {
	ctx := context.Background()
	prog := corpusProgram(t, "hashchain")
	const wmin = 1 << 10
	verify := func(d uint64) (held, allocated uint64, collections int) {
		var cert bytes.Buffer
		run, _, err := proveTo(ctx, &cert, prog, []uint64{d}, corpusBudget, ProveOptions{wmin: wmin})
		if err != nil {
			t.Fatal(err)
		}
		exp := expectOf(&run.Statement)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		v := &verifier{ctx: ctx, r: newStreamReader(bytes.NewReader(cert.Bytes()), -1), maxNodes: DefaultMaxNodes, wminKnob: wmin}
		if _, _, err := v.verify(exp); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return v.held(), after.TotalAlloc - before.TotalAlloc, v.gc.collections
	}
	smallHeld, smallAlloc, smallN := verify(9)
	largeHeld, largeAlloc, largeN := verify(12)
	t.Logf("2^9 links: held %d bytes, allocated %d, %d collections; 2^12 links: held %d, allocated %d, %d collections",
		smallHeld, smallAlloc, smallN, largeHeld, largeAlloc, largeN)
	if largeN < 4*smallN {
		t.Fatalf("%d and %d collections: the longer chain was to be collected many more times", smallN, largeN)
	}
	if largeHeld > smallHeld+64<<10 || largeAlloc > smallAlloc+256<<10 {
		t.Fatalf("eight times the links: held %d -> %d bytes, allocated %d -> %d", smallHeld, largeHeld, smallAlloc, largeAlloc)
	}
}
