package hostile_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

// TestTraceIsTheProversCertificate: the tracer writes byte for byte the
// certificate cert.Prove writes for the same program and budget, on
// small sizes of both digest attacks, so the large ones it writes in
// milliseconds are the certificates of real runs.
func TestTraceIsTheProversCertificate(t *testing.T) {
	cases := []struct {
		name    string
		program string
		budget  uint64
		traced  []byte
	}{
		{"axis zero 1", hostile.AxisZeroProgram(1), hostile.AxisZeroBudget(1), hostile.AxisZero(1)},
		{"axis zero 8", hostile.AxisZeroProgram(8), hostile.AxisZeroBudget(8), hostile.AxisZero(8)},
		{"shared 3/2", hostile.SharedOperandProgram(3, 2), hostile.SharedOperandBudget(3, 2), hostile.SharedOperand(3, 2)},
		{"shared 9/7", hostile.SharedOperandProgram(9, 7), hostile.SharedOperandBudget(9, 7), hostile.SharedOperand(9, 7)},
	}
	for _, c := range cases {
		p, err := noun.Parse(c.program)
		if err != nil {
			t.Fatal(err)
		}
		run, err := cert.Prove(context.Background(), p, nil, c.budget, cert.ProveOptions{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !bytes.Equal(run.Certificate, c.traced) {
			n := 0
			for n < min(len(run.Certificate), len(c.traced)) && run.Certificate[n] == c.traced[n] {
				n++
			}
			t.Fatalf("%s: traced %d bytes, proved %d, first difference at %d", c.name, len(c.traced), len(run.Certificate), n)
		}
		t.Logf("%s: %d bytes, %d reductions", c.name, len(c.traced), run.Statement.Reductions)
	}
}
