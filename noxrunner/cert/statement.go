package cert

import (
	"bytes"
	"io"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

// Statement is what a certificate proves: applying Program to the subject
// of Inputs under Budget ends with Outputs after Reductions.
type Statement struct {
	Program    []byte   // canonical token encoding (noun.AppendTokens)
	Inputs     []uint64 // canonical field values
	Outputs    []uint64 // the result's atoms, left to right
	Reductions uint64   // budget − remaining
	Budget     uint64
}

// Particle of the program: the second half of program identity.
func (s *Statement) Particle() ([32]byte, error) {
	n, _, err := noun.DecodeTokens(s.Program, MaxProgramNodes, MaxProgramDepth)
	if err != nil {
		return [32]byte{}, err
	}
	return n.Particle(), nil
}

func appendStatement(b []byte, s *Statement) []byte {
	b = append(b, Magic...)
	b = appendUvarint(b, uint64(len(Profile)))
	b = append(b, Profile...)
	b = appendUvarint(b, uint64(len(s.Program)))
	b = append(b, s.Program...)
	b = appendUvarint(b, uint64(len(s.Inputs)))
	for _, x := range s.Inputs {
		b = appendUvarint(b, x)
	}
	b = appendUvarint(b, uint64(len(s.Outputs)))
	for _, x := range s.Outputs {
		b = appendUvarint(b, x)
	}
	b = appendUvarint(b, s.Reductions)
	b = appendUvarint(b, s.Budget)
	return b
}

// readStatement decodes and bounds-checks the statement. It checks the
// encoding only; the verifier checks the meaning.
func readStatement(r *reader) *Statement {
	s := readProgram(r, Magic, Profile)
	if s == nil {
		return nil
	}
	s.Inputs = readValues(r, MaxInputs, "input")
	s.Outputs = readValues(r, MaxOutputs, "output")
	s.Reductions = r.uvarint()
	s.Budget = r.uvarint()
	if r.err != nil {
		return nil
	}
	if s.Reductions > s.Budget {
		r.fail("reductions exceed the budget")
		return nil
	}
	return s
}

// readProgram reads what both profiles begin with: the magic, the
// profile id and the program's tokens (checked, not built: the verifier
// interns the tokens directly). A nil Statement: r.err says why.
func readProgram(r *reader, magic, profile string) *Statement {
	if string(r.bytes(uint64(len(magic)))) != magic {
		r.fail("bad magic")
		return nil
	}
	if n := r.uvarint(); n != uint64(len(profile)) || string(r.bytes(n)) != profile {
		r.fail("profile is not " + profile)
		return nil
	}
	s := &Statement{}
	progLen := r.count(MaxProgramNodes*9, 1, "program byte")
	s.Program = r.bytes(uint64(progLen))
	if r.err != nil {
		return nil
	}
	used, err := noun.CheckTokens(s.Program, MaxProgramNodes, MaxProgramDepth)
	if err != nil || used != len(s.Program) {
		r.fail("program tokens invalid")
		return nil
	}
	// A streamed reader's window moves on; a whole certificate's bytes
	// stay as they are.
	if r.src != nil {
		s.Program = bytes.Clone(s.Program)
	}
	return s
}

func readValues(r *reader, max uint64, what string) []uint64 {
	n := r.count(max, 1, what)
	if r.err != nil {
		return nil
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = r.uvarint()
		if out[i] >= field.P {
			r.fail(what + " is not a canonical field value")
			return nil
		}
	}
	return out
}

// ReadStatement decodes the statement at the start of a certificate and
// verifies nothing: what it says is a claim until Verify has checked the
// witness. It reads only the statement (at most about 77 KiB), whatever
// follows it, and the statement it returns holds no reference to b; a
// caller that has no saved job of its own (a command-line check of a
// certificate file) takes its expectations from here.
//
// Of a v2 certificate (ProfileV2) it decodes the header: the program,
// inputs and budget; Outputs is nil and Reductions 0, as a v2
// certificate says them only in its trailer, at the end (Verify returns
// them verified).
func ReadStatement(b []byte) (*Statement, error) {
	r := &reader{b: b}
	st := readAnyStatement(r)
	if r.err != nil {
		return nil, r.err
	}
	st.Program = append([]byte(nil), st.Program...)
	return st, nil
}

// ReadStatementFrom is ReadStatement of a certificate of size bytes read
// from src (size < 0: unknown, for v2): it reads only as far as the
// statement (v2: the header) goes, and a window of at most 64 KiB.
func ReadStatementFrom(src io.Reader, size int64) (*Statement, error) {
	r := newStreamReader(src, size)
	st := readAnyStatement(r)
	if r.err != nil {
		return nil, r.err
	}
	return st, nil
}

// readAnyStatement reads a v1 statement or a v2 header.
func readAnyStatement(r *reader) *Statement {
	if r.isV2() {
		return readHeaderV2(r)
	}
	return readStatement(r)
}
