package cert

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"testing/iotest"

	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
)

// chunkReader delivers r in reads of 1 to 13 bytes, so that a streamed
// verification refills its window at every kind of position (inside a
// varint, inside the program tokens, between steps).
type chunkReader struct {
	r    io.Reader
	next int
	read int64 // bytes delivered
}

func (c *chunkReader) Read(p []byte) (int, error) {
	c.next = c.next%13 + 1
	n, err := c.r.Read(p[:min(len(p), c.next)])
	c.read += int64(n)
	return n, err
}

// countingReader counts what a verification read of its source.
type countingReader struct {
	r    io.Reader
	read int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}

// stuckReader returns neither data nor an error, forever.
type stuckReader struct{}

func (stuckReader) Read([]byte) (int, error) { return 0, nil }

// verifyBoth verifies b held whole and streamed in small reads and fails
// the test unless both give the same verdict: the same statement, or the
// same error (message included, so the same byte offset).
func verifyBoth(t testing.TB, b []byte, exp Expect, bounds Bounds) (*Statement, Checked, error) {
	t.Helper()
	st, checked, err := Verify(context.Background(), b, exp, bounds)
	sst, schecked, serr := VerifyFrom(context.Background(), &chunkReader{r: bytes.NewReader(b)}, int64(len(b)), exp, bounds)
	switch {
	case (err == nil) != (serr == nil):
		t.Fatalf("held whole: %v; streamed: %v", err, serr)
	case err != nil && err.Error() != serr.Error():
		t.Fatalf("held whole: %v; streamed: %v", err, serr)
	case err == nil && (checked != schecked || !sameStatement(st, sst)):
		t.Fatalf("held whole: %+v %+v; streamed: %+v %+v", st, checked, sst, schecked)
	}
	return st, checked, err
}

func sameStatement(a, b *Statement) bool {
	return bytes.Equal(a.Program, b.Program) && slices.Equal(a.Inputs, b.Inputs) && slices.Equal(a.Outputs, b.Outputs) &&
		a.Reductions == b.Reductions && a.Budget == b.Budget
}

// TestStreamedVerificationIsTheSame: every honest certificate of the
// vectors and of the test programs verifies streamed as held whole, and
// every tampering of TestTampering's kinds (each truncation, each
// single-byte change) is refused streamed with the same error at the
// same byte.
func TestStreamedVerificationIsTheSame(t *testing.T) {
	for _, c := range []struct {
		program string
		inputs  []uint64
	}{
		{add2, []uint64{3, 5}}, {rich, []uint64{7, 11}}, {hashChain, nil}, {hashList, nil},
		{hashTree, []uint64{4}}, {hostile.DeepBranch(), []uint64{3}},
	} {
		run := prove(t, c.program, c.inputs, 1<<20)
		exp := expectOf(&run.Statement)
		if _, _, err := verifyBoth(t, run.Certificate, exp, Bounds{}); err != nil {
			t.Fatalf("%s: %v", c.program, err)
		}
		if len(run.Certificate) > 4096 {
			continue
		}
		for n := range len(run.Certificate) {
			if _, _, err := verifyBoth(t, run.Certificate[:n], exp, Bounds{}); err == nil {
				t.Fatalf("%s: truncation to %d bytes accepted", c.program, n)
			}
		}
		for i := range run.Certificate {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				b := bytes.Clone(run.Certificate)
				b[i] ^= x
				if _, _, err := verifyBoth(t, b, exp, Bounds{}); err == nil {
					t.Fatalf("%s: byte %d ^ %#x accepted", c.program, i, x)
				}
			}
		}
	}
	// A program of thousands of token bytes: the statement's longest
	// field crosses many refills.
	long := "[1 123456789]"
	for range 8 { // 256 leaves, depth 25
		long = "[3 [" + long + " " + long + "]]"
	}
	run := prove(t, long, nil, 1<<20)
	if len(run.Statement.Program) < 4000 {
		t.Fatalf("program of %d token bytes", len(run.Statement.Program))
	}
	if _, _, err := verifyBoth(t, run.Certificate, expectOf(&run.Statement), Bounds{}); err != nil {
		t.Fatal(err)
	}
}

// TestStreamedSourceMustMatchItsLength: a source that delivers more than
// the declared length, less, or fails, is not a certificate of that
// length: rejected (or the source's error, wrapped).
func TestStreamedSourceMustMatchItsLength(t *testing.T) {
	run := prove(t, rich, []uint64{7, 11}, 10_000)
	good, exp := run.Certificate, expectOf(&run.Statement)
	size := int64(len(good))
	for name, c := range map[string]struct {
		src  io.Reader
		size int64
		want error
	}{
		"more than declared":  {bytes.NewReader(append(bytes.Clone(good), 0)), size, ErrRejected},
		"less than declared":  {bytes.NewReader(good[:len(good)-1]), size, ErrRejected},
		"declared one less":   {bytes.NewReader(good), size - 1, ErrRejected},
		"a failing source":    {io.MultiReader(bytes.NewReader(good[:100]), iotest.ErrReader(io.ErrClosedPipe)), size, io.ErrClosedPipe},
		"failing at its end":  {io.MultiReader(bytes.NewReader(good), iotest.ErrReader(io.ErrClosedPipe)), size, io.ErrClosedPipe},
		"over the format":     {bytes.NewReader(good), MaxEncodedBytes + 1, ErrTooLarge},
		"a negative length":   {bytes.NewReader(good), -1, ErrTooLarge},
		"data and EOF at end": {iotest.DataErrReader(bytes.NewReader(good)), size, nil},
		"a stuck source":      {stuckReader{}, size, io.ErrNoProgress},
		"stuck at its end":    {io.MultiReader(bytes.NewReader(good), stuckReader{}), size, ErrRejected},
	} {
		_, _, err := VerifyFrom(context.Background(), c.src, c.size, exp, Bounds{})
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	st, err := ReadStatementFrom(&chunkReader{r: bytes.NewReader(good)}, size)
	if err != nil || !sameStatement(st, &run.Statement) {
		t.Fatalf("ReadStatementFrom: %+v %v", st, err)
	}
}

// TestStreamedAttackReadsOneWindow: the nested-result attack streamed
// (32 MiB of content, 16 Mi pair definitions) is refused having read at
// most one window of it (64 KiB) and allocated at most 2 MiB (the node
// table's first size, for the calls its statement claims, is most of
// it); a certificate for another job, having read its statement.
func TestStreamedAttackReadsOneWindow(t *testing.T) {
	const budget = 1_000_000
	exp := quoteJob(t, budget)
	for name, raw := range map[string][]byte{
		"nested pairs":           hostile.NestedResult(hostile.NestedPairs, budget),
		"nested, claiming calls": hostile.NestedResultClaimingBudget(hostile.NestedPairs, budget),
		"pending stack":          hostile.PendingStack(2*hostile.NestedPairs, budget),
	} {
		src := &countingReader{r: bytes.NewReader(raw)}
		var err error
		alloc := allocated(func() { _, _, err = VerifyFrom(context.Background(), src, int64(len(raw)), exp, Bounds{}) })
		if !errors.Is(err, ErrRejected) || src.read > streamWindow || alloc > 2<<20 {
			t.Errorf("%s: %v after reading %d of %d bytes and allocating %d", name, err, src.read, len(raw), alloc)
		}
		t.Logf("%s: %v; read %d of %d bytes, allocated %d", name, err, src.read, len(raw), alloc)
	}
	raw := hostile.NestedResultClaimingBudget(hostile.NestedPairs, budget)
	other := exp
	other.Budget++
	src := &countingReader{r: bytes.NewReader(raw)}
	if _, _, err := VerifyFrom(context.Background(), src, int64(len(raw)), other, Bounds{}); !errors.Is(err, ErrMismatch) || src.read > streamWindow {
		t.Errorf("another job: %v after %d bytes", err, src.read)
	}
}
