package cert

import (
	"bytes"
	"context"
	"testing"
)

// TestV2DerivedResultsAreInterned checks the prover's shortcut: it
// takes the result of a compose, a branch or a cons from its children's
// slots instead of interning it (writeResultV2), which must write
// exactly what interning every result writes (exitResultV2, the
// forgery tests' encoder), with collections at several thresholds and
// on every corpus program (loops, pairs that come back, hashes, a tree
// that is kept).
func TestV2DerivedResultsAreInterned(t *testing.T) {
	ctx := context.Background()
	for _, c := range loadCorpus(t, "1e5") {
		prog := corpusProgram(t, c.program)
		inputs := []uint64{c.input}
		rr := record(t, prog, inputs, corpusBudget)
		for _, wmin := range []uint64{0, 4096, 64, 1} {
			var fast bytes.Buffer
			run, _, err := proveTo(ctx, &fast, prog, inputs, corpusBudget, ProveOptions{wmin: wmin})
			if err != nil {
				t.Fatalf("%s, wmin %d: %v", c.program, wmin, err)
			}
			w := wmin
			if w == 0 {
				w = CollectMinNodes
			}
			interned := rr.encodeV2(t, w, -1, rr.program, &run.Statement, uint64(len(rr.events)))
			if !bytes.Equal(fast.Bytes(), interned) {
				at := 0
				for at < min(fast.Len(), len(interned)) && fast.Bytes()[at] == interned[at] {
					at++
				}
				t.Fatalf("%s, wmin %d: the prover's certificate (%d bytes) differs from the interned encoding (%d bytes) at byte %d",
					c.program, wmin, fast.Len(), len(interned), at)
			}
		}
	}
}
