package cert

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
)

// verifyInside verifies b for its own statement at GOMAXPROCS procs and
// returns the verifier, to look at what its digest checks held and did.
func verifyInside(t testing.TB, b []byte, procs int) (*verifier, error) {
	t.Helper()
	st, err := ReadStatement(b)
	if err != nil {
		t.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	v := &verifier{ctx: context.Background(), r: &reader{b: b}, maxNodes: DefaultMaxNodes}
	_, _, err = v.verify(expectOf(st))
	return v, err
}

// TestDigestChecksAreDeduplicated: the 2^16 axis-0 steps of the dense
// attack, all on the object 0, are one deferred check and one digest;
// forged (every step disclosing the same wrong hash-data), they are one
// failing check. Two axis-0 steps of one object that disclose different
// hash-data are rejected where the second is read. Before, every step
// queued a check of its own (65,536 of them here).
func TestDigestChecksAreDeduplicated(t *testing.T) {
	v, err := verifyInside(t, hostile.AxisZero(16), 2)
	if err != nil || v.checks.n != 1 || v.digested != 1 {
		t.Fatalf("axis zero: %v; %d checks, %d digests", err, v.checks.n, v.digested)
	}
	v, err = verifyInside(t, hostile.AxisZeroForged(16), 2)
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "digest step's result is wrong") || v.checks.n != 1 {
		t.Fatalf("forged axis zero: %v; %d checks", err, v.checks.n)
	}

	// [3 [[0 0] [0 0]]]: two axis-0 steps of the subject. The second
	// result, a back-reference to the first's hash-data, becomes a new
	// hash-data of other atoms.
	run := prove(t, "[3 [[0 0] [0 0]]]", []uint64{5}, 100)
	st, _ := ReadStatement(run.Certificate)
	head := len(appendStatement(nil, st))
	r := &reader{b: run.Certificate, pos: head}
	r.uvarint()
	starts := refStarts(t, run.Certificate[r.pos:])
	second := r.pos + starts[1]
	other := []byte{refPair, refPair}
	for i, v := range []uint64{1001, 1002, 1003, 1004} {
		if i == 2 {
			other = append(other, refPair)
		}
		other = appendUvarint(append(other, refAtom), v)
	}
	bad := append(append(append([]byte(nil), run.Certificate[:second]...), other...), run.Certificate[second+1:]...)
	_, _, err = Verify(context.Background(), bad, expectOf(st), Bounds{})
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "differs from an earlier one") {
		t.Fatalf("two results for one operand: %v", err)
	}
}

// TestDigestsComputedOnce: the shared-operand attack's digests are
// computed once each, children first, into one structure, so that their
// number (the verification's hemera work, a permutation each) is the
// same at GOMAXPROCS 1, 2 and 16 and at most the table's size, and the
// parallel result is the sequential one. Before, every worker of the
// parallel checks digested the shared list into its own memo: at 16, the
// list was digested 16 times.
func TestDigestsComputedOnce(t *testing.T) {
	raw := hostile.SharedOperand(sharedListDoublings, sharedHashDoublings)
	var want int
	for _, procs := range []int{1, 2, 16} {
		v, err := verifyInside(t, raw, procs)
		if err != nil {
			t.Fatalf("GOMAXPROCS %d: %v", procs, err)
		}
		nodes := int(v.t.len())
		t.Logf("GOMAXPROCS %d: %d nodes, %d checks, %d digests", procs, nodes, v.checks.n, v.digested)
		if procs == 1 {
			want = v.digested
		}
		if v.digested != want || v.digested > nodes || v.checks.n != 1<<sharedHashDoublings {
			t.Errorf("GOMAXPROCS %d: %d digests (%d at 1), %d checks, for %d nodes", procs, v.digested, want, v.checks.n, nodes)
		}
	}
	// Wrong digests are found by the parallel checks as by the
	// sequential ones.
	forged := hostile.SharedOperandForged(sharedListDoublings, sharedHashDoublings)
	for _, procs := range []int{1, 16} {
		if _, err := verifyInside(t, forged, procs); !errors.Is(err, ErrRejected) {
			t.Errorf("forged at GOMAXPROCS %d: %v", procs, err)
		}
	}
}
