package supervisor

import (
	"context"
	"strings"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// judgeFailure decides what a failed attempt (no result) means, rather
// than taking the worker's word for it:
//   - retryable is the code's own rule (docs/supervisor.md, Retries),
//     never the worker's flag; a memory_exhausted the worker's own cell
//     guard decided (the cgroup did not kill it) is deterministic: the
//     same job runs out the same way, so it is not retried by default;
//   - a verify job whose certificate the worker refused is checked by
//     the node's own verifier: when it refuses it too, the attempt (and
//     the job) is rejected with the node's reason; when it accepts it,
//     the worker is wrong (internal_error);
//   - an execution that read a part of its subject that does not exist
//     says how many inputs the job gave.
func (s *Supervisor) judgeFailure(spec *protocol.JobSpec, prog *savedProgram, out outcome) outcome {
	e := *out.err
	e.Retryable = e.Code.Retryable()
	switch {
	case e.Code == protocol.CodeMemoryExhausted && !out.exit.OOMKilled:
		e.Retryable = false
		e.Message += " (decided by the worker's cell guard: deterministic, not retried by default)"
	case e.Code == protocol.CodeExecutionFailed:
		protocol.ExplainAxisError(&e, len(spec.Inputs))
	case spec.Operation == protocol.OpVerify && (e.Code == protocol.CodeProofRejected || e.Code == protocol.CodeClaimMismatch):
		expect, perr := s.expectFor(spec, prog)
		if perr == nil {
			_, _, _, perr = s.verifySpecCertificate(context.Background(), spec, expect)
		}
		switch {
		case perr == nil:
			e = *protocol.Errorf(protocol.CodeInternalError, "the worker refused a certificate the node's verifier accepts (%s)", e.Message)
		case perr.Code == protocol.CodeProofRejected, perr.Code == protocol.CodeClaimMismatch, perr.Code == protocol.CodeArtifactTooLarge:
			out.state, e = lifecycle.Rejected, *perr
		}
	}
	out.err = &e
	return out
}

// expectFor is what the node compares a certificate's statement with:
// the saved program, inputs, expected output and budget.
func (s *Supervisor) expectFor(spec *protocol.JobSpec, prog *savedProgram) (cert.Expect, *protocol.Error) {
	if prog == nil {
		p, err := protocol.ParseBundle(spec.Program.Bundle)
		if err != nil {
			return cert.Expect{}, protocol.Errorf(protocol.CodeInternalError, "read frozen bundle: %v", err)
		}
		prog = &savedProgram{tokens: p.Tokens, identity: p.Identity()}
	}
	return cert.Expect{Program: prog.tokens, Inputs: spec.Inputs, Output: spec.ExpectedOutput, Budget: spec.Limits.Reductions}, nil
}

// describe is an error as events show it: "code: message", or the
// message alone when it begins with the code ("cancelled before
// acceptance": the code is not said twice).
func describe(e *protocol.Error) string {
	switch {
	case e == nil:
		return ""
	case e.Message == "":
		return string(e.Code)
	case strings.HasPrefix(e.Message, string(e.Code)):
		return e.Message
	}
	return e.Error()
}
