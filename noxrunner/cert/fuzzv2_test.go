package cert

import (
	"bytes"
	"context"
	"runtime"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
)

// FuzzVerifyV2 feeds arbitrary v2 certificates of up to 64 KiB to the
// verifier, held whole, streamed with their length and streamed without
// it, and checks on every input that the three give the same verdict,
// that nothing panics, and that allocation and work stay within the
// bounds FuzzVerifyResources holds v1 to (collections and the digest
// checks before them included). An input is a header (the first byte
// picks one of a few real ones, 0xff takes the whole certificate from
// the input) and the rest (witness and trailer); the second byte picks
// the collection threshold (the profile's, or a small one, so that the
// fuzzer reaches collections in 64 KiB). The seeds are real
// certificates, whose rest is verified for the job their header says.
func FuzzVerifyV2(f *testing.F) {
	var heads [][]byte
	for _, c := range []struct {
		program string
		inputs  []uint64
	}{
		{add2, []uint64{1, 2}}, {rich, []uint64{7, 11}}, {hashChain, nil}, {hashList, nil},
		{hashTree, []uint64{3}}, {hostile.DeepBranch(), []uint64{2}},
	} {
		for _, wmin := range fuzzV2Wmins {
			_, raw := proveV2(f, parse(f, c.program), c.inputs, 1<<20, ProveOptions{wmin: wmin})
			st, err := ReadStatement(raw)
			if err != nil {
				f.Fatal(err)
			}
			head := appendHeaderV2(nil, st.Program, st.Inputs, st.Budget)
			f.Add(byte(len(heads)), byte(len(heads)*7), raw[len(head):])
			if len(raw) <= fuzzMaxInput {
				f.Add(byte(0xff), byte(len(heads)), raw)
			}
		}
		_, raw := proveV2(f, parse(f, c.program), c.inputs, 1<<20, ProveOptions{})
		st, _ := ReadStatement(raw)
		heads = append(heads, appendHeaderV2(nil, st.Program, st.Inputs, st.Budget))
	}
	f.Fuzz(func(t *testing.T, which, threshold byte, rest []byte) {
		b := rest
		if int(which) < len(heads) {
			b = append(append([]byte(nil), heads[which]...), rest...)
		}
		if len(b) > fuzzMaxInput {
			return
		}
		wmin := fuzzV2Wmins[int(threshold)%len(fuzzV2Wmins)]
		var exp Expect
		if st, err := ReadStatement(b); err == nil {
			exp = expectOf(st)
		}
		v := &verifier{ctx: context.Background(), r: &reader{b: b}, maxNodes: DefaultMaxNodes, wminKnob: wmin}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _, err := v.verify(exp)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		if limit := uint64(fuzzAllocPerByte*len(b) + fuzzAllocBase); alloc > limit {
			t.Fatalf("%d bytes allocated %d, over %d (%v)", len(b), alloc, limit, err)
		}
		var defined int
		if v.t != nil && v.t.gc != nil {
			defined = int(v.t.gc.next)
		}
		// A collection marks what it keeps, at most the nodes defined
		// since the last one plus as many (the threshold doubles).
		work := int(v.entered) + v.r.pos + 2*defined + v.digested + v.checks.n
		if limit := fuzzWorkPerByte*len(b) + fuzzWorkBase; work > limit {
			t.Fatalf("%d bytes took %d units of work, over %d (%d calls, %d defined, %d digests; %v)",
				len(b), work, limit, v.entered, defined, v.digested, err)
		}
		sizes := []int64{int64(len(b))}
		if bytes.HasPrefix(b, []byte(MagicV2)) {
			// Only v2 may be read without its length.
			sizes = append(sizes, -1)
		}
		for _, size := range sizes {
			src := &countingReader{r: bytes.NewReader(b)}
			sv := &verifier{ctx: context.Background(), r: newStreamReader(src, size), maxNodes: DefaultMaxNodes, wminKnob: wmin}
			_, _, serr := sv.verify(exp)
			if (err == nil) != (serr == nil) || err != nil && err.Error() != serr.Error() {
				t.Fatalf("size %d: held whole: %v; streamed: %v", size, err, serr)
			}
			if used := sv.r.at(); src.read > used+streamWindow {
				t.Fatalf("size %d: streamed, read %d bytes and used %d", size, src.read, used)
			}
		}
	})
}

// fuzzV2Wmins are the collection thresholds FuzzVerifyV2 picks from.
var fuzzV2Wmins = []uint64{0, 4, 64}
