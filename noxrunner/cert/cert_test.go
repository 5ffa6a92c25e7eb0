package cert

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/internal/vectors"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

func parse(t testing.TB, s string) noun.Noun {
	t.Helper()
	n, err := noun.ParseWith(s, noun.ParseOptions{Literals: noun.CanonicalLiterals})
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return n
}

// expectOf is the job a certificate's own statement describes.
func expectOf(st *Statement) Expect {
	return Expect{Program: st.Program, Inputs: st.Inputs, Output: st.Outputs, Budget: st.Budget}
}

// verifySelf verifies b for the job its own statement describes, as a
// check of a certificate file without a saved job does.
func verifySelf(b []byte) (*Statement, error) {
	st, err := ReadStatement(b)
	if err != nil {
		return nil, err
	}
	st, _, err = Verify(context.Background(), b, expectOf(st), Bounds{})
	return st, err
}

func prove(t testing.TB, program string, inputs []uint64, budget uint64) *Run {
	t.Helper()
	run, err := Prove(context.Background(), parse(t, program), inputs, budget, ProveOptions{})
	if err != nil {
		t.Fatalf("prove %s: %v", program, err)
	}
	return run
}

// add2 adds its two inputs: the subject is [x2 [x1 0]].
const add2 = "[5 [[0 2] [0 6]]]"

func TestProveVerifyRoundTrip(t *testing.T) {
	run := prove(t, add2, []uint64{3, 5}, 100)
	exp := Expect{Program: noun.AppendTokens(nil, parse(t, add2)), Inputs: []uint64{3, 5}, Output: []uint64{8}, Budget: 100}
	st, checked, err := Verify(context.Background(), run.Certificate, exp, Bounds{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Outputs) != 1 || st.Outputs[0] != 8 || st.Reductions != 3 || st.Budget != 100 {
		t.Fatalf("statement %+v", st)
	}
	if !bytes.Equal(st.Program, run.Statement.Program) {
		t.Fatal("program tokens differ")
	}
	if checked != (Checked{Program: true, Inputs: true, Output: true, Budget: true}) {
		t.Fatalf("checked %+v", checked)
	}
}

// wrapCase turns a vector case into a program that first quotes its object:
// [2 [[1 OBJECT] [1 FORMULA]]].
func wrapCase(c vectors.Case) string { return "[2 [[1 " + c.Object + "] [1 " + c.Formula + "]]]" }

// vectorProgram is a reference case as the certificate tests prove it:
// wrapped (wrapCase), under its budget and 3 (the wrapping's cost).
type vectorProgram struct {
	id     string
	prog   noun.Noun
	budget uint64
}

// okVectors are the reference cases that end with a result, of group
// ("" for all), that a certificate can state: canonical literals (the
// others are refused at this boundary) and a program within the
// statement's limits.
func okVectors(t testing.TB, group string) []vectorProgram {
	cases, err := vectors.Load()
	if err != nil {
		t.Fatal(err)
	}
	if group != "" {
		cases = vectors.Group(cases, group)
	}
	var ok []vectorProgram
	for _, c := range cases {
		if c.Expect.Status != "ok" {
			continue
		}
		prog, err := noun.ParseWith(wrapCase(c), noun.ParseOptions{Literals: noun.CanonicalLiterals})
		if err != nil {
			continue
		}
		if _, err := noun.Measure(prog, MaxProgramNodes, MaxProgramDepth); err != nil {
			continue
		}
		ok = append(ok, vectorProgram{c.ID, prog, c.Budget + 3})
	}
	return ok
}

// TestVectorsCertify proves and verifies every reference case that ends
// with a result and fits the statement limits, and checks the certified
// result against native execution.
func TestVectorsCertify(t *testing.T) {
	proved := 0
	for _, c := range okVectors(t, "") {
		prog, budget := c.prog, c.budget
		native, _ := reduce.New(reduce.Config{Provider: reduce.Public{}}).Reduce(context.Background(), noun.Zero, prog, budget)
		run, err := Prove(context.Background(), prog, nil, budget, ProveOptions{})
		if native.Status != reduce.OK {
			if err == nil {
				t.Fatalf("%s: proved a run that does not succeed natively", c.id)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.id, err)
		}
		st, err := verifySelf(run.Certificate)
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
	t.Logf("%d cases proved and verified", proved)
}

func TestNotProvable(t *testing.T) {
	for _, c := range []struct {
		program string
		budget  uint64
		want    error
	}{
		{"[8 [1 0]]", 100, ErrNotProvable},
		{"[8 [1 2]]", 10, ErrNotProvable},
		{"[16 [[1 1] [1 0]]]", 100, reduce.ErrUnsupportedService},
		{"[17 [[1 1] [1 0]]]", 100, reduce.ErrUnsupportedService},
	} {
		_, err := Prove(context.Background(), parse(t, c.program), nil, c.budget, ProveOptions{})
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.program, err, c.want)
		}
	}
}

// rich exercises every pattern the public profile allows, so tampering
// touches every kind of step: the results are consed into one list.
var rich = consAll(
	"[8 [0 2]]", "[15 [0 6]]", "[9 [[0 2] [0 6]]]", "[10 [[0 2] [0 6]]]",
	"[11 [[0 2] [1 12]]]", "[12 [[0 2] [1 6]]]", "[13 [0 2]]", "[14 [[0 2] [1 3]]]",
	"[0 0]", "[7 [[0 2] [0 6]]]", "[6 [[0 2] [0 6]]]", "[4 [[1 0] [[1 1] [1 2]]]]",
	"[2 [[0 1] [1 [0 2]]]]", "[1 [5 6]]",
)

func consAll(fs ...string) string {
	out := fs[len(fs)-1]
	for i := len(fs) - 2; i >= 0; i-- {
		out = "[3 [" + fs[i] + " " + out + "]]"
	}
	return out
}

func TestTampering(t *testing.T) {
	inputs := []uint64{7, 11}
	run := prove(t, rich, inputs, 10_000)
	good := run.Certificate
	exp := Expect{Program: run.Statement.Program, Inputs: inputs, Output: run.Statement.Outputs, Budget: 10_000}
	if _, _, err := Verify(context.Background(), good, exp, Bounds{}); err != nil {
		t.Fatalf("untampered: %v", err)
	}

	// rejected reports whether the bytes fail verification for the saved
	// job, with the right error class: the statement is compared with the
	// job first (ErrMismatch), the witness checked after (ErrRejected).
	rejected := func(b []byte) error {
		_, _, err := verifyBoth(t, b, exp, Bounds{})
		if err != nil && !errors.Is(err, ErrRejected) && !errors.Is(err, ErrMismatch) {
			t.Fatalf("verification error without ErrRejected or ErrMismatch: %v", err)
		}
		return err
	}
	reencode := func(mut func(s *Statement)) []byte {
		st, err := verifySelf(good)
		if err != nil {
			t.Fatal(err)
		}
		cp := *st
		cp.Inputs = append([]uint64(nil), st.Inputs...)
		cp.Outputs = append([]uint64(nil), st.Outputs...)
		cp.Program = append([]byte(nil), st.Program...)
		mut(&cp)
		head := appendStatement(nil, st)
		return append(appendStatement(nil, &cp), good[len(head):]...)
	}
	other := prove(t, add2, []uint64{3, 5}, 10_000)
	named := map[string][]byte{
		"program":        reencode(func(s *Statement) { s.Program = other.Statement.Program }),
		"input 1":        reencode(func(s *Statement) { s.Inputs[0]++ }),
		"input 2":        reencode(func(s *Statement) { s.Inputs[1]++ }),
		"extra input":    reencode(func(s *Statement) { s.Inputs = append(s.Inputs, 1) }),
		"reductions":     reencode(func(s *Statement) { s.Reductions-- }),
		"budget up":      reencode(func(s *Statement) { s.Budget++ }),
		"budget down":    reencode(func(s *Statement) { s.Budget = s.Reductions }),
		"trailing bytes": append(append([]byte(nil), good...), 0),
		"magic":          append([]byte("CYNXTRC2"), good[len(Magic):]...),
		"another job":    other.Certificate,
	}
	for i := range run.Statement.Outputs {
		named["output "+string(rune('0'+i))] = reencode(func(s *Statement) { s.Outputs[i] ^= 1 })
	}
	// The profile id is inside the encoding: change one letter.
	prof := bytes.Replace(good, []byte(Profile), []byte("cyber-nox-public-trace-v2"), 1)
	named["profile id"] = prof
	for name, b := range named {
		if err := rejected(b); err == nil {
			t.Errorf("tampered %s: accepted", name)
		}
	}
	// Every truncation.
	for n := 0; n < len(good); n++ {
		if err := rejected(good[:n]); err == nil {
			t.Fatalf("truncation to %d bytes accepted", n)
		}
	}
	// Every single-byte change anywhere, statement and witness alike.
	for i := range good {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			b := append([]byte(nil), good...)
			b[i] ^= x
			if err := rejected(b); err == nil {
				t.Fatalf("byte %d ^ %#x accepted", i, x)
			}
		}
	}
}

func TestWitnessElementsAreChecked(t *testing.T) {
	// Replace each witness reference by every other small back-reference:
	// the rules pin every result, so none may pass.
	run := prove(t, rich, []uint64{7, 11}, 10_000)
	st, _ := verifySelf(run.Certificate)
	start := len(appendStatement(nil, st))
	r := &reader{b: run.Certificate, pos: start}
	r.uvarint() // call count
	checked := 0
	for r.pos < len(r.b) && checked < 200 {
		pos := r.pos
		x := r.uvarint()
		if x < refBack {
			if x == refAtom {
				r.uvarint()
			}
			continue
		}
		for alt := uint64(refBack); alt < refBack+20; alt++ {
			if alt == x {
				continue
			}
			b := append(append(append([]byte(nil), run.Certificate[:pos]...), appendUvarint(nil, alt)...), run.Certificate[r.pos:]...)
			if _, err := verifySelf(b); err == nil {
				t.Fatalf("witness ref at %d changed %d→%d accepted", pos, x, alt)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no witness references found")
	}
}

func TestHostileWitnessIsBounded(t *testing.T) {
	// A witness that defines a chain of pairs a million deep: decoding and
	// digesting it must neither recurse nor run away.
	st := Statement{Program: noun.AppendTokens(nil, parse(t, "[15 [1 0]]")), Budget: 100, Reductions: 26}
	b := appendStatement(nil, &st)
	b = appendUvarint(b, 2)
	for range 1_000_000 {
		b = append(b, refPair)
	}
	if _, err := verifySelf(b); !errors.Is(err, ErrRejected) {
		t.Fatalf("deep chain: %v", err)
	}
	// Call count larger than the data.
	b = appendStatement(nil, &st)
	b = appendUvarint(b, 1<<40)
	if _, err := verifySelf(b); !errors.Is(err, ErrRejected) {
		t.Fatalf("huge call count: %v", err)
	}
}

func FuzzVerify(f *testing.F) {
	for _, p := range []string{add2, rich, "[1 0]", "[15 [0 1]]"} {
		run, err := Prove(context.Background(), parse(f, p), []uint64{1, 2}, 10_000, ProveOptions{})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(run.Certificate)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := verifySelf(b)
		if self, serr := ReadStatement(b); serr == nil {
			verifyBoth(t, b, expectOf(self), Bounds{}) // streamed, the same verdict
		}
		if err != nil {
			if !errors.Is(err, ErrRejected) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error without ErrRejected: %v", err)
			}
			return
		}
		// Anything accepted re-encodes to itself (canonical) and is a true
		// statement: native execution agrees.
		prog, _, err := noun.DecodeTokens(st.Program, MaxProgramNodes, MaxProgramDepth)
		if err != nil {
			t.Fatal(err)
		}
		native, err := reduce.New(reduce.Config{Provider: reduce.Public{}}).Reduce(context.Background(), noun.Subject(st.Inputs), prog, st.Budget)
		if err != nil || native.Status != reduce.OK || native.Cost(st.Budget) != st.Reductions {
			t.Fatalf("accepted certificate disagrees with native execution: %+v %v", native, err)
		}
		run, err := Prove(context.Background(), prog, st.Inputs, st.Budget, ProveOptions{})
		if err != nil || !bytes.Equal(run.Certificate, b) {
			t.Fatalf("accepted certificate is not the canonical one")
		}
	})
}
