package cert

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

// chainTwice runs the hash chain of d links twice: the second run makes
// the nodes of the first again, which a collection in between dropped.
func chainTwice(t testing.TB, d string) *recordedRun {
	chain := strings.TrimSpace(mustRead(t, "testdata/corpus/hashchain.nox"))
	quoted := "[2 [[1 [" + d + " 0]] [1 " + chain + "]]]"
	return record(t, parse(t, consAll(quoted, quoted)), nil, 1_000_000)
}

// TestV2CollectionsMustMatch: a prover that collects where the verifier
// does not (a smaller threshold) defines again nodes the verifier still
// holds, and one that does not collect where the verifier does refers to
// nodes the verifier dropped: both are rejected, where the first such
// reference is read. Fails before v2; fails if the verifier accepted a
// redefinition or resolved a reference to a dropped node.
func TestV2CollectionsMustMatch(t *testing.T) {
	rr := chainTwice(t, "5")
	calls := uint64(len(rr.events))
	exp := Expect{Program: rr.st.Program, Inputs: rr.st.Inputs, Budget: rr.st.Budget}
	for _, c := range []struct {
		prover, verifier uint64
		want             string
	}{
		{48, 1 << 20, "defined twice"},            // an extra collection
		{1 << 20, 48, "reference to a collected"}, // a missing one
	} {
		b := rr.encodeV2(t, c.prover, -1, noun.Zero, &rr.st, calls)
		honest := rr.encodeV2(t, c.verifier, -1, noun.Zero, &rr.st, calls)
		if bytes.Equal(b, honest) {
			t.Fatalf("thresholds %d and %d give the same certificate", c.prover, c.verifier)
		}
		if _, err := verifyV2All(t, honest, exp, Bounds{wmin: c.verifier}); err != nil {
			t.Fatalf("honest: %v", err)
		}
		_, err := verifyV2All(t, b, exp, Bounds{wmin: c.verifier})
		if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("prover threshold %d, verifier %d: %v, want rejected (%s)", c.prover, c.verifier, err, c.want)
		}
	}
}

// TestV2TrailerAndEnd: a trailer that lies about the calls, the
// reductions or the outputs, bytes after it, or a certificate cut
// anywhere in it is rejected; a valid certificate of another output is
// ErrMismatch. Fails before v2.
func TestV2TrailerAndEnd(t *testing.T) {
	rr := chainTwice(t, "3")
	calls := uint64(len(rr.events))
	exp := Expect{Program: rr.st.Program, Inputs: rr.st.Inputs, Budget: rr.st.Budget}
	honest := rr.encodeV2(t, 64, -1, noun.Zero, &rr.st, calls)
	if _, err := verifyV2All(t, honest, exp, Bounds{wmin: 64}); err != nil {
		t.Fatalf("honest: %v", err)
	}
	lie := func(f func(st *Statement, calls *uint64)) []byte {
		st := rr.st
		st.Outputs = slices.Clone(st.Outputs)
		c := calls
		f(&st, &c)
		return rr.encodeV2(t, 64, -1, noun.Zero, &st, c)
	}
	cases := map[string][]byte{
		"calls+1":        lie(func(_ *Statement, c *uint64) { *c++ }),
		"calls-1":        lie(func(_ *Statement, c *uint64) { *c-- }),
		"reductions+1":   lie(func(st *Statement, _ *uint64) { st.Reductions++ }),
		"reductions-1":   lie(func(st *Statement, _ *uint64) { st.Reductions-- }),
		"output changed": lie(func(st *Statement, _ *uint64) { st.Outputs[0]++ }),
		"output added":   lie(func(st *Statement, _ *uint64) { st.Outputs = append(st.Outputs, 0) }),
		"output dropped": lie(func(st *Statement, _ *uint64) { st.Outputs = st.Outputs[1:] }),
		"a byte after":   append(slices.Clone(honest), 0),
		"two after":      append(slices.Clone(honest), 2, 2),
	}
	for cut := len(honest) - 1; cut > len(honest)-40; cut-- {
		cases["cut at "+string(rune('0'+(len(honest)-cut)%10))+"/"+string(rune('0'+(len(honest)-cut)/10))] = honest[:cut]
	}
	for name, b := range cases {
		if _, err := verifyV2All(t, b, exp, Bounds{wmin: 64}); !errors.Is(err, ErrRejected) {
			t.Errorf("%s: %v, want rejected", name, err)
		}
	}
	other := exp
	other.Output = slices.Clone(rr.st.Outputs)
	other.Output[0]++
	if _, err := verifyV2All(t, honest, other, Bounds{wmin: 64}); !errors.Is(err, ErrMismatch) {
		t.Errorf("another expected output: %v, want mismatch", err)
	}
	other.Output = rr.st.Outputs
	if st, err := verifyV2All(t, honest, other, Bounds{wmin: 64}); err != nil || !sameStatement(st, &rr.st) {
		t.Errorf("the expected output: %+v %v", st, err)
	}
}

// TestV2HeaderFirst: a v2 certificate for another job (program, inputs
// or budget) is ErrMismatch once its header is read, before any step.
func TestV2HeaderFirst(t *testing.T) {
	run, b := proveV2(t, parse(t, add2), []uint64{3, 5}, 100, ProveOptions{})
	exp := expectOf(&run.Statement)
	for name, e := range map[string]Expect{
		"program": {Program: noun.AppendTokens(nil, parse(t, rich)), Inputs: exp.Inputs, Budget: exp.Budget},
		"inputs":  {Program: exp.Program, Inputs: []uint64{3, 6}, Budget: exp.Budget},
		"budget":  {Program: exp.Program, Inputs: exp.Inputs, Budget: 101},
	} {
		// Everything after the header is garbage: it must not be read.
		garbage := append(slices.Clone(b[:len(b)-4]), 0xff, 0xff, 0xff, 0xff)
		if _, err := verifyV2All(t, garbage, e, Bounds{}); !errors.Is(err, ErrMismatch) {
			t.Errorf("%s: %v, want mismatch", name, err)
		}
	}
	st, err := ReadStatement(b)
	if err != nil || !bytes.Equal(st.Program, run.Statement.Program) || st.Budget != 100 || st.Outputs != nil || st.Reductions != 0 {
		t.Fatalf("ReadStatement of v2: %+v %v", st, err)
	}
	st, err = ReadStatementFrom(&chunkReader{r: bytes.NewReader(b)}, -1)
	if err != nil || !slices.Equal(st.Inputs, []uint64{3, 5}) || st.Budget != 100 {
		t.Fatalf("ReadStatementFrom of v2: %+v %v", st, err)
	}
	if _, _, err := VerifyFrom(context.Background(), bytes.NewReader(run.Statement.Program), -1, exp, Bounds{}); !errors.Is(err, ErrRejected) && !errors.Is(err, ErrTooLarge) {
		t.Fatalf("not a certificate, unknown length: %v", err)
	}
}

// TestV2VerifyMemoryPerNode: verifying a v2 certificate allocates at most
// NodeBytes per slot of its table, as v1 (TestVerifyMemoryPerNode): the
// ids the table keeps for its collection (the slot's id, the live ids in
// order) fit in what v1's accounting left. Under the profile's threshold
// and under one that collects many times (then the batches of digest
// checks and the collections' scratch are allocated again each time, in
// proportion to the nodes defined since the last: counted per node
// defined). Fails if the v2 table's extra arrays grew by append's
// quarters or a collection allocated its indexes anew.
func TestV2VerifyMemoryPerNode(t *testing.T) {
	for _, c := range []struct {
		name    string
		program string
		inputs  []uint64
	}{
		{"hash tree", hashTree, []uint64{11}},
		{"deep cons", hostile.DeepBranch(), []uint64{11}},
	} {
		for _, wmin := range []uint64{0, 4096} {
			run, b := proveV2(t, parse(t, c.program), c.inputs, 1<<40, ProveOptions{wmin: wmin})
			v := &verifier{ctx: context.Background(), r: &reader{b: b}, maxNodes: DefaultMaxNodes, wminKnob: wmin}
			if _, _, err := v.verify(expectOf(&run.Statement)); err != nil {
				t.Fatal(err)
			}
			slots, defined := uint64(v.t.len()), v.t.gc.next
			var err error
			alloc := allocated(func() {
				_, _, err = Verify(context.Background(), b, expectOf(&run.Statement), Bounds{MaxNodes: slots, wmin: wmin})
			})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			t.Logf("%s, threshold %d: %d slots, %d defined, %d collections, %d bytes allocated (%.0f per slot, %.0f per node defined)",
				c.name, wmin, slots, defined, v.gc.collections, alloc, float64(alloc)/float64(slots), float64(alloc)/float64(defined))
			if alloc > defined*NodeBytes || (v.gc.collections == 0 && alloc > slots*NodeBytes) {
				t.Errorf("%s, threshold %d: %d bytes allocated for %d slots, %d nodes defined: over %d a node", c.name, wmin, alloc, slots, defined, NodeBytes)
			}
		}
	}
}
