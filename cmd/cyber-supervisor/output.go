package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// exitFor maps an error to the shared exit codes: contract codes through
// protocol.ExitCode, plus the API's own busy/unknown job and an absent
// daemon.
func exitFor(err error) int {
	var pe *protocol.Error
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, supervisor.ErrBusy), errors.Is(err, api.ErrUnavailable), errors.Is(err, store.ErrLocked):
		return exitBusy
	case errors.Is(err, supervisor.ErrUnknownJob):
		return exitUsage
	case errors.Is(err, store.ErrCorrupt):
		return protocol.ExitStoreDamaged
	case errors.As(err, &pe):
		switch pe.Code {
		case api.CodeBusy:
			return exitBusy
		case api.CodeUnknownJob:
			return exitUsage
		}
		return protocol.ExitCode(pe.Code)
	}
	return exitFailed
}

// envelopeError keeps API codes (busy, unknown_job) in the envelope
// instead of folding them into internal_error.
func envelopeError(err error) error {
	switch {
	case errors.Is(err, supervisor.ErrBusy), errors.Is(err, api.ErrUnavailable), errors.Is(err, store.ErrLocked):
		return &protocol.Error{Code: api.CodeBusy, Message: err.Error(), Retryable: true}
	case errors.Is(err, supervisor.ErrUnknownJob):
		return &protocol.Error{Code: api.CodeUnknownJob, Message: err.Error()}
	case errors.Is(err, store.ErrCorrupt):
		return &protocol.Error{Code: protocol.CodeIOError, Message: protocol.SafeMessage(err.Error())}
	}
	return err
}

// report prints a command's outcome: the cyber/cli/v1 envelope in json
// format, else the human form; it returns the exit code.
func (c *cli) report(format, command string, result any, err error, human func()) int {
	if format == "json" {
		if _, werr := protocol.WriteEnvelope(c.stdout, command, result, envelopeError(err)); werr != nil {
			return exitFailed
		}
		return exitFor(err)
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "cyber-supervisor %s: %v\n", command, err)
		return exitFor(err)
	}
	if human != nil {
		human()
	}
	return exitOK
}

// printResult is the human form of an accepted result: the output values
// on stdout, one per line; the rest on stderr.
func (c *cli) printResult(raw []byte, sandboxes string) {
	res, err := protocol.ParseResult(raw)
	if err != nil {
		fmt.Fprintf(c.stderr, "cannot read the result: %v\n", err)
		return
	}
	for _, v := range res.Output {
		fmt.Fprintln(c.stdout, v)
	}
	switch res.Kind {
	case protocol.KindExecution:
		fmt.Fprintf(c.stderr, "Executed in %d reductions (a local computation, not a certificate)\n", res.Reductions)
	case protocol.KindExecutionCertificate:
		where := ""
		if res.Artifact != nil && sandboxes != "" {
			where = " " + filepath.Join(sandboxes, res.JobID, fmt.Sprintf("%d", res.Attempt), res.Artifact.Name)
		}
		fmt.Fprintf(c.stderr, "Proved in %d reductions and verified by the supervisor (%s); certificate%s\n", res.Reductions, res.Profile, where)
	case protocol.KindVerification:
		fmt.Fprintf(c.stderr, "Certificate verified by the supervisor: %d reductions (%s)\n", res.Reductions, res.Profile)
	}
}
