package protocol

import (
	"encoding/json"
	"io"
)

// EnvelopeSchema is the schema of the CLI's machine output.
const EnvelopeSchema = "cyber/cli/v1"

// Envelope is the one JSON object a CLI command prints with --format json:
// ok with a result, or not ok with an error; the other is null, except
// for a command that failed and still has something to say about what it
// leaves behind (cyber-supervisor's code interrupted: a command that
// stopped waiting on a signal names in result what goes on running; see
// WriteEnvelopeLeaving). Readers ignore unknown keys inside result.
type Envelope struct {
	Schema  string          `json:"schema"`
	Command string          `json:"command"`
	OK      bool            `json:"ok"`
	Result  json.RawMessage `json:"result"`
	Error   *Error          `json:"error"`
}

// NewEnvelope builds the envelope of a command's outcome. A non-nil err
// wins over result and is mapped onto the contract's error set (see
// AsError); a result that cannot be encoded becomes internal_error.
func NewEnvelope(command string, result any, err error) Envelope {
	env := Envelope{Schema: EnvelopeSchema, Command: command, Result: json.RawMessage("null")}
	if err == nil {
		b, merr := marshalCompact(result)
		if merr != nil {
			err = Errorf(CodeInternalError, "encoding the result")
		} else {
			env.OK, env.Result = true, b
		}
	}
	if err != nil {
		env.Error = AsError(err)
	}
	return env
}

// ExitCode is the process status that goes with the envelope.
func (e Envelope) ExitCode() int {
	if e.OK || e.Error == nil {
		return ExitOK
	}
	return ExitCode(e.Error.Code)
}

// WriteEnvelope writes the envelope of a command's outcome to w as exactly
// one JSON object and a newline, and returns the exit status to use.
func WriteEnvelope(w io.Writer, command string, result any, err error) (int, error) {
	env := NewEnvelope(command, result, err)
	b, merr := marshalCompact(env)
	if merr != nil {
		return ExitFailed, merr
	}
	if _, werr := w.Write(append(b, '\n')); werr != nil {
		return ExitFailed, werr
	}
	return env.ExitCode(), nil
}

// WriteEnvelopeLeaving is WriteEnvelope of a failed command (err non-nil)
// whose result names what it leaves behind: ok is false, error is err's,
// and result is left (null when left is nil).
func WriteEnvelopeLeaving(w io.Writer, command string, left any, err error) (int, error) {
	env := NewEnvelope(command, nil, err)
	if left != nil {
		b, merr := marshalCompact(left)
		if merr != nil {
			return ExitFailed, merr
		}
		env.Result = b
	}
	b, merr := marshalCompact(env)
	if merr != nil {
		return ExitFailed, merr
	}
	if _, werr := w.Write(append(b, '\n')); werr != nil {
		return ExitFailed, werr
	}
	return env.ExitCode(), nil
}
