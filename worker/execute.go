package worker

import (
	"context"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// execute reduces the program on the subject of the job's inputs in the
// public profile: the public provider (a reached call or look aborts before
// it is charged), the profile's depth limit (the same as prove's, so that
// execute and prove agree on every program), the job's budget, and the
// memory guard of its memory limit (or of the worker's default).
func (w *Worker) execute(ctx context.Context, job *protocol.AdmittedJob) (outcome, error) {
	limits := job.Spec.Limits
	m := reduce.New(reduce.Config{
		Provider:   reduce.Public{},
		DepthLimit: cert.DepthLimit,
		MaxCells:   maxCells(w.dataOf(job)),
	})
	out, err := m.Reduce(ctx, noun.Subject(job.Spec.Inputs), job.Program.Formula, limits.Reductions)
	if err != nil {
		return outcome{}, err
	}
	if err := outcomeError(out, limits.Reductions, m.DepthExceeded()); err != nil {
		return outcome{}, err
	}
	atoms, err := noun.AppendAtoms(nil, out.Result, protocol.MaxResultOutputs)
	if err != nil {
		return outcome{}, fmt.Errorf("%w: the result has more than %d atoms", ErrOutputTooLarge, protocol.MaxResultOutputs)
	}
	return outcome{output: atoms, reductions: out.Cost(limits.Reductions), budget: limits.Reductions}, nil
}

// outcomeError maps a reduction that ended without a result: a halt means
// the budget ran out; an error outcome is the program's own failure, named
// by its kind (TypeError, AxisError, InvZero, Unavailable, Malformed,
// CallRejected). A Malformed that is the depth limit (deep) says so:
// nothing in the formula is malformed then.
func outcomeError(out reduce.Outcome, budget uint64, deep bool) error {
	switch out.Status {
	case reduce.OK:
		return nil
	case reduce.Halt:
		return protocol.Errorf(protocol.CodeBudgetExhausted, "the budget of %d reductions ran out", budget)
	case reduce.Error:
		if deep && out.Kind == reduce.Malformed {
			return protocol.Errorf(protocol.CodeExecutionFailed, "nox error %s (the reduction went deeper than the depth limit of %d)", out.Kind, cert.DepthLimit)
		}
		return protocol.Errorf(protocol.CodeExecutionFailed, "nox error %s", out.Kind)
	}
	return protocol.Errorf(protocol.CodeInternalError, "unknown reduction status %d", out.Status)
}
