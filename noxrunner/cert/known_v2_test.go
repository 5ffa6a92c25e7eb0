package cert

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestV2KnownResultsAreNotWritten checks how a v2 certificate writes the
// results the verifier knows (docs/certificate.md, "Results the verifier
// knows"), on every corpus program: a compose's or a branch's result is
// not written, an axis's (non-zero address) or a quote's is the byte
// namedResultV2, and the certificate that writes every result as a
// reference (the v2 encoding before) is rejected where it first differs.
// It also checks the bound that the byte keeps: the walk makes fewer
// than two calls per byte of the certificate. Fails before the change:
// the verifier then rejected the certificate of the prover and of
// encodeV2, and accepted the one that references every result.
func TestV2KnownResultsAreNotWritten(t *testing.T) {
	ctx := context.Background()
	for _, c := range loadCorpus(t, "1e5") {
		prog := corpusProgram(t, c.program)
		inputs := []uint64{c.input}
		rr := record(t, prog, inputs, corpusBudget)
		exp := Expect{Program: rr.st.Program, Inputs: rr.st.Inputs, Budget: rr.st.Budget}
		calls := uint64(len(rr.events))
		forms := map[int]int{}
		for _, e := range rr.events {
			forms[e.form]++
		}
		if forms[resultDerived] == 0 || forms[resultNamed] == 0 {
			t.Fatalf("%s: %v calls of each form: the test wants all three", c.program, forms)
		}
		honest := rr.encodeV2(t, CollectMinNodes, -1, rr.program, &rr.st, calls)
		if _, err := verifyV2All(t, honest, exp, Bounds{}); err != nil {
			t.Fatalf("%s: %v", c.program, err)
		}
		var proved bytes.Buffer
		if _, _, err := proveTo(ctx, &proved, prog, inputs, corpusBudget, ProveOptions{}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(proved.Bytes(), honest) {
			t.Fatalf("%s: the prover's certificate differs from encodeV2's", c.program)
		}
		if uint64(len(honest)) <= calls/2 {
			t.Fatalf("%s: %d calls in %d bytes: the walk must read a byte per two calls", c.program, calls, len(honest))
		}
		referenced := rr.encodeAllReferenced(t, &rr.st, calls)
		_, err := verifyV2All(t, referenced, exp, Bounds{})
		if !errors.Is(err, ErrRejected) {
			t.Fatalf("%s: every result referenced: %v, want rejected", c.program, err)
		}
		t.Logf("%s: %d calls (%d not written, %d named, %d written), %d bytes; every result referenced: %d bytes, %v",
			c.program, calls, forms[resultDerived], forms[resultNamed], forms[resultWritten], len(honest), len(referenced),
			strings.TrimPrefix(err.Error(), "cert: "))
	}
}

// encodeAllReferenced encodes rr's run writing every call's result as a
// reference, as v2 did before the verifier's known results were left
// out.
func (rr *recordedRun) encodeAllReferenced(t testing.TB, st *Statement, calls uint64) []byte {
	t.Helper()
	var buf bytes.Buffer
	p := rr.startEncoder(&buf, CollectMinNodes, st)
	for _, e := range rr.events {
		if err := p.exitResultV2(resultWritten, e.result, e.depth); err != nil {
			t.Fatal(err)
		}
	}
	p.calls = calls
	if err := p.finishV2(st); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
