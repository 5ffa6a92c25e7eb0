package cert

import (
	"bytes"
	"slices"
)

// Expect is what the node saved before dispatch. Self-contained validity
// is not enough: a valid certificate of some other computation must not
// satisfy a job.
type Expect struct {
	Program []byte   // canonical tokens of the saved program
	Inputs  []uint64 // saved public inputs
	Output  []uint64 // expected output; nil means not checked
	Budget  uint64   // the job's budget: the statement must carry exactly it
}

// Checked lists what Check compared, for the verification record.
type Checked struct {
	Program, Inputs, Output, Budget bool
}

// Check compares an authenticated statement with the saved job.
func (e Expect) Check(s *Statement) (Checked, error) {
	if !bytes.Equal(s.Program, e.Program) {
		return Checked{}, mismatchf("program differs from the saved job")
	}
	if !slices.Equal(s.Inputs, e.Inputs) {
		return Checked{}, mismatchf("inputs differ from the saved job")
	}
	if e.Output != nil && !slices.Equal(s.Outputs, e.Output) {
		return Checked{}, mismatchf("output differs from the expected output")
	}
	// Equality, not ≤: a successful run has the same cost under any larger
	// budget, so only equality ties the certificate to this job's budget.
	if s.Budget != e.Budget {
		return Checked{}, mismatchf("statement budget %d differs from the job's %d", s.Budget, e.Budget)
	}
	return Checked{Program: true, Inputs: true, Output: e.Output != nil, Budget: true}, nil
}
