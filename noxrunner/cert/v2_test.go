package cert

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// proveV2 proves program into a v2 certificate held in memory.
func proveV2(t testing.TB, program noun.Noun, inputs []uint64, budget uint64, opt ProveOptions) (*Run, []byte) {
	t.Helper()
	var buf bytes.Buffer
	run, err := ProveTo(context.Background(), &buf, program, inputs, budget, opt)
	if err != nil {
		t.Fatalf("prove v2: %v", err)
	}
	if run.Certificate != nil {
		t.Fatal("ProveTo returned a certificate in memory")
	}
	return run, buf.Bytes()
}

// verifyV2All verifies b held whole, streamed with its length and
// streamed without it, and fails the test unless all three give the same
// verdict (the same statement, or the same error message).
func verifyV2All(t testing.TB, b []byte, exp Expect, bounds Bounds) (*Statement, error) {
	t.Helper()
	st, checked, err := Verify(context.Background(), b, exp, bounds)
	for _, size := range []int64{int64(len(b)), -1} {
		sst, schecked, serr := VerifyFrom(context.Background(), &chunkReader{r: bytes.NewReader(b)}, size, exp, bounds)
		switch {
		case (err == nil) != (serr == nil):
			t.Fatalf("size %d: held whole: %v; streamed: %v", size, err, serr)
		case err != nil && err.Error() != serr.Error():
			t.Fatalf("size %d: held whole: %v; streamed: %v", size, err, serr)
		case err == nil && (checked != schecked || !sameStatement(st, sst)):
			t.Fatalf("size %d: held whole: %+v %+v; streamed: %+v %+v", size, st, checked, sst, schecked)
		}
	}
	return st, err
}

// roundTripV2 proves program in v2 under collection threshold wmin (0:
// the profile's), verifies it three ways, and checks the statement
// against v1's.
func roundTripV2(t testing.TB, program noun.Noun, inputs []uint64, budget, wmin uint64) []byte {
	t.Helper()
	run, b := proveV2(t, program, inputs, budget, ProveOptions{wmin: wmin})
	st, err := verifyV2All(t, b, expectOf(&run.Statement), Bounds{wmin: wmin})
	if err != nil {
		t.Fatalf("verify v2 (wmin %d): %v", wmin, err)
	}
	if !sameStatement(st, &run.Statement) {
		t.Fatalf("verified %+v, proved %+v", st, run.Statement)
	}
	return b
}

// TestV2CorpusRoundTrip: every corpus program at the smoke size proves
// to a v2 certificate that verifies, with the statement v1 proves, under
// the profile's threshold and under small ones that collect the table
// hundreds of times. Fails before v2 (ProveTo did not exist).
func TestV2CorpusRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, c := range loadCorpus(t, "1e5") {
		t.Run(c.program, func(t *testing.T) {
			prog := corpusProgram(t, c.program)
			inputs := []uint64{c.input}
			v1, err := Prove(ctx, prog, inputs, corpusBudget, ProveOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, wmin := range []uint64{0, 4096, 64, 1} {
				b := roundTripV2(t, prog, inputs, corpusBudget, wmin)
				st, _, err := Verify(ctx, b, expectOf(&v1.Statement), Bounds{wmin: wmin})
				if err != nil || !sameStatement(st, &v1.Statement) {
					t.Fatalf("wmin %d: v1's statement %+v, v2 verified %+v, %v", wmin, v1.Statement, st, err)
				}
			}
		})
	}
}

// TestV2VectorsRoundTrip proves and verifies in v2 every reference case
// v1 certifies, collecting at a small threshold.
func TestV2VectorsRoundTrip(t *testing.T) {
	proved := 0
	for _, c := range okVectors(t, "") {
		prog, budget := c.prog, c.budget
		native, _ := reduce.New(reduce.Config{Provider: reduce.Public{}}).Reduce(context.Background(), noun.Zero, prog, budget)
		if native.Status != reduce.OK {
			continue
		}
		wmin := uint64(1 + proved%16)
		run, b := proveV2(t, prog, nil, budget, ProveOptions{wmin: wmin})
		st, _, err := Verify(context.Background(), b, expectOf(&run.Statement), Bounds{wmin: wmin})
		if err != nil {
			t.Fatalf("%s: verify: %v", c.id, err)
		}
		outs, _ := noun.AppendAtoms(nil, native.Result, MaxOutputs)
		if !slices.Equal(outs, st.Outputs) || st.Reductions != native.Cost(budget) {
			t.Fatalf("%s: certified %v/%d, native %v/%d", c.id, st.Outputs, st.Reductions, outs, native.Cost(budget))
		}
		proved++
	}
	if proved < 3000 {
		t.Fatalf("only %d cases certified", proved)
	}
}

// TestMaxEncodedV2For: a v2 certificate is never longer than the bound
// its budget gives, which saturates instead of wrapping.
func TestMaxEncodedV2For(t *testing.T) {
	for _, c := range loadCorpus(t, "1e5") {
		prog := corpusProgram(t, c.program)
		run, b := proveV2(t, prog, []uint64{c.input}, c.reductions, ProveOptions{})
		if uint64(len(b)) > MaxEncodedV2For(run.Statement.Budget) {
			t.Fatalf("%s: %d bytes, over MaxEncodedV2For(%d) = %d", c.program, len(b), run.Statement.Budget, MaxEncodedV2For(run.Statement.Budget))
		}
	}
	if MaxEncodedV2For(^uint64(0)) != ^uint64(0) || MaxEncodedV2For(^uint64(0)/MaxStepBytes) != ^uint64(0) {
		t.Fatal("MaxEncodedV2For wraps")
	}
}
