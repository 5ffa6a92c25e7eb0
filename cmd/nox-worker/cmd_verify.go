package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/worker"
)

// cmdVerify checks a certificate file. A job needs every expectation, and
// the user may give only some, so the command first decodes the
// certificate's own statement (only the prefix that holds it, within the
// size --budget allows; nothing in it is trusted), fills in what the user did not
// give from it, and then runs the same verify job a supervisor would
// send, which checks the statement against those expectations before it
// walks the witness; that job is what the result reports. --budget bounds
// the certificate's budget (as in joy); the job then requires that exact
// budget.
func cmdVerify(ctx context.Context, w *worker.Worker, o *options, pos []string) (any, humanFn, error) {
	path, err := onePositional("verify", "CERT", pos)
	if err != nil {
		return nil, nil, err
	}
	if err := checkBudget(o.budget); err != nil {
		return nil, nil, err
	}
	var claim []uint64
	if o.claim != nil {
		if claim, err = protocol.ParseValues(*o.claim); err != nil {
			return nil, nil, usageError("--claim: %s", protocol.AsError(err).Message)
		}
		if len(claim) == 0 {
			return nil, nil, usageError("--claim needs at least one value")
		}
	}
	file, err := openCertificateFile(path, o.artifactLimit)
	if err != nil {
		return nil, nil, err
	}
	defer file.Close()
	// The job names exactly one profile: the one asked for, or the one
	// the certificate's magic names (the verify job then checks the
	// certificate under it, and refuses another profile's).
	profile := o.profile
	if profile == "" {
		if profile, err = file.profile(); err != nil {
			return nil, nil, certificateError(err)
		}
	}
	st, err := file.statement(w, o.budget)
	if err != nil {
		return nil, nil, err
	}
	if st.Budget > o.budget {
		return nil, nil, protocol.Errorf(protocol.CodeClaimMismatch,
			"the certificate's budget %d exceeds --budget %d", st.Budget, o.budget)
	}
	checked := checkedJSON{Program: o.program != "", Claim: claim != nil, Budget: true}
	var bundle []byte
	if checked.Program {
		bundle, err = loadProgram(o.program)
	} else {
		bundle, err = bundleOf(st)
	}
	if err != nil {
		return nil, nil, err
	}
	inputs := st.Inputs
	if o.inputValues != nil || o.inputFile != "" {
		checked.Inputs = true
		if inputs, err = loadInputs(o); err != nil {
			return nil, nil, err
		}
	}
	spec := cliJob(protocol.OpVerify, profile, bundle, inputs, st.Budget)
	spec.ExpectedOutput = claim
	spec.Limits.ArtifactBytes = o.artifactLimit
	res, err := file.verify(ctx, w, spec)
	if err != nil {
		return nil, nil, err
	}
	result := verifyJSON{
		Kind:    res.Kind,
		Mode:    "execution_certificate",
		Profile: res.Profile,
		Artifact: artifactJSON{
			Path: path, Size: u64(file.size), SHA256: fmt.Sprintf("%x", res.Verification.ArtifactSHA256),
		},
		Program:      programOf(res.ProgramIdentity),
		Inputs:       u64s(inputs),
		Output:       u64s(res.Output),
		Reductions:   u64(res.Reductions),
		Budget:       u64(res.Budget),
		BudgetBound:  u64(o.budget),
		Checked:      checked,
		ClaimChecked: checked.Claim,
	}
	human := func(stdout, _ io.Writer) {
		list := func(vs []uint64) string { return "[" + strings.ReplaceAll(protocol.FormatValues(vs), ",", ", ") + "]" }
		source := func(given bool, flag string) string {
			if given {
				return "checked against " + flag
			}
			return "from the certificate, not checked"
		}
		fmt.Fprintf(stdout, "Verification: PASS (%s; public execution, complete witness, not zero-knowledge)\n", res.Profile)
		fmt.Fprintf(stdout, "Program:    %s (%s)\n", result.Program.Particle, source(checked.Program, "--program"))
		fmt.Fprintf(stdout, "Input:      %s (%s)\n", list(inputs), source(checked.Inputs, "the given inputs"))
		fmt.Fprintf(stdout, "Output:     %s (%s)\n", list(res.Output), source(checked.Claim, "--claim"))
		fmt.Fprintf(stdout, "Reductions: %d (budget %d, at most --budget %d)\n", res.Reductions, res.Budget, o.budget)
		fmt.Fprintf(stdout, "Artifact:   sha256 %s\n", result.Artifact.SHA256)
		fmt.Fprintln(stdout, "(This summary is for people and may change; programs use --format json.)")
	}
	return result, human, nil
}

// bundleOf wraps the certificate's own program into a bundle, for a
// verification that was given no --program. The statement was verified,
// so its tokens decode.
func bundleOf(st *cert.Statement) ([]byte, error) {
	f, _, err := noun.DecodeTokens(st.Program, protocol.MaxFormulaNodes, protocol.MaxFormulaDepth)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeProofRejected, "certificate: program tokens do not decode")
	}
	text, err := noun.AppendText(nil, f, protocol.MaxAssemblyBytes)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeProofRejected, "certificate: program text exceeds %d bytes", protocol.MaxAssemblyBytes)
	}
	return protocol.WrapNox("certificate.nox", text)
}

// certificateError is a certificate that names no profile, in the
// contract's codes: a frame over the bound is artifact_too_large, any
// other unreadable one proof_rejected.
func certificateError(err error) error {
	var pe *protocol.Error
	switch {
	case errors.As(err, &pe):
		return pe
	case errors.Is(err, artifacts.ErrTooLarge):
		return protocol.Errorf(protocol.CodeArtifactTooLarge, "the certificate decompresses beyond the bound")
	}
	return protocol.Errorf(protocol.CodeProofRejected, "the certificate is not a valid zstd frame")
}
