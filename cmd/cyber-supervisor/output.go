package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// leavingError is how a command that stopped waiting on a signal ends:
// code interrupted, a message that says what goes on, and with --format
// json the envelope's result naming it (left: {"job": ID, ...}).
type leavingError struct {
	msg  string
	left any
}

func (e *leavingError) Error() string { return e.msg }

// jobOutcome is a job's own error, reported by a command that did not
// cause it (result JOB, submit --wait of a job another command
// cancelled): a job that ended cancelled is exit 1 there, a failure to
// produce a result, not 130, which says this command was interrupted.
type jobOutcome struct{ err *protocol.Error }

func (e *jobOutcome) Error() string { return e.err.Error() }
func (e *jobOutcome) Unwrap() error { return e.err }

// exitFor is the exit status of err: its code's, from protocol's error
// table (docs/errors.md). The one exception is a job's own cancelled,
// reported by a command that did not cause it: exit 1, a job that
// produced no result, not 130, which says this command was interrupted.
func exitFor(err error) int {
	if err == nil {
		return protocol.ExitOK
	}
	var jo *jobOutcome
	if errors.As(err, &jo) && jo.err.Code == protocol.CodeCancelled {
		return protocol.ExitFailed
	}
	return protocol.ExitCode(envelopeError(err).Code)
}

// envelopeError is err with its code: the CLI's conditions and the
// supervisor's sentinels get theirs (the contract's, the API's or the
// CLI's own), and the retry hint is the code's unless said otherwise.
// Codes of the API and the CLI are kept, not folded into internal_error.
// A signal (SIGINT, SIGTERM, SIGHUP) that ended a command is interrupted
// (exit 130); nothing was cancelled by it: a command that was waiting
// says what it leaves running (leavingError). run, which cancels its job
// on a signal, ends with the job's own cancelled.
func envelopeError(err error) *protocol.Error {
	var (
		pe  *protocol.Error
		ue  *usageError
		nde *noDaemonError
		le  *leavingError
	)
	switch {
	case errors.As(err, &le):
		return protocol.Errorf(protocol.CodeInterrupted, "%s", protocol.SafeMessage(le.msg))
	case errors.As(err, &nde):
		return protocol.Errorf(protocol.CodeUnavailable, "%s", nde.Error())
	case errors.Is(err, store.ErrUnavailable):
		// The shared store (etcd) did not answer.
		return protocol.Errorf(protocol.CodeUnavailable, "%s", protocol.SafeMessage(err.Error()))
	case errors.As(err, &ue):
		return protocol.Errorf(protocol.CodeUsage, "%s", ue.Error())
	case errors.Is(err, store.ErrHostInUse):
		// Another daemon holds the host id: asking again changes nothing
		// until it stops, or the id is changed (not retryable).
		return &protocol.Error{Code: protocol.CodeBusy, Message: protocol.SafeMessage(err.Error())}
	case errors.Is(err, supervisor.ErrBusy), errors.Is(err, store.ErrLocked):
		return protocol.Errorf(protocol.CodeBusy, "%s", err)
	case errors.Is(err, launch.ErrIsolationUnavailable):
		// Required isolation this host cannot give: the limits asked for
		// are not enforceable here (exit 3), and asking again changes
		// nothing.
		return protocol.Errorf(protocol.CodeUnsupportedLimit, "%s", protocol.SafeMessage(err.Error()))
	case errors.Is(err, supervisor.ErrLocalJobs):
		// serve --store etcd://... on a home whose own store holds jobs:
		// the command line is to change (the message says how), and the
		// same one fails the same way (not busy: waiting changes nothing).
		return protocol.Errorf(protocol.CodeUsage, "%s", protocol.SafeMessage(err.Error()))
	case errors.Is(err, launch.ErrWorkerUnusable):
		// A worker binary the jail cannot run: the command line or the
		// build is wrong, and the same command fails the same way.
		return protocol.Errorf(protocol.CodeUsage, "%s", protocol.SafeMessage(err.Error()))
	case errors.Is(err, supervisor.ErrUnknownJob):
		return protocol.Errorf(protocol.CodeUnknownJob, "%s", err)
	case errors.Is(err, store.ErrNoStore):
		return protocol.Errorf(protocol.CodeNoStore, "%s (is --home right?)", err)
	case errors.Is(err, store.ErrCorrupt):
		// A damaged store: the message names the file and the page or
		// record, which is what the operator needs (docs/store.md).
		return protocol.Errorf(protocol.CodeStoreDamaged, "%s", protocol.SafeMessage(err.Error()))
	case errors.As(err, &pe):
		return pe
	case ioErrno(err):
		// The host's file system refused or failed (a read-only or full
		// disk, a file where a directory belongs): the operator's to fix.
		return protocol.Errorf(protocol.CodeIOError, "%s", protocol.SafeMessage(err.Error()))
	}
	// An error of the CLI's own making (a home it cannot create, a worker
	// binary it cannot find): its text is the operator's to read.
	return protocol.Errorf(protocol.CodeInternalError, "%s", protocol.SafeMessage(err.Error()))
}

// report prints a command's outcome: the cyber/cli/v1 envelope with
// --format json (every number in its result a decimal string), else the
// human form (human may be nil); it returns what RunE returns.
func (a *app) report(command string, result any, err error, human func()) error {
	if a.json() {
		var res any
		if err == nil {
			raw, merr := json.Marshal(result)
			if merr == nil {
				raw, merr = decimalStrings(raw)
			}
			if merr != nil {
				err = protocol.Errorf(protocol.CodeInternalError, "encoding the result: %v", merr)
			}
			res = json.RawMessage(raw)
		}
		var envErr error
		if err != nil {
			envErr = a.suggesting(envelopeError(err))
		}
		var werr error
		if le := (*leavingError)(nil); errors.As(err, &le) && le.left != nil {
			// What the interrupted command leaves running, by name.
			raw, merr := json.Marshal(le.left)
			if merr == nil {
				raw, merr = decimalStrings(raw)
			}
			if merr != nil {
				raw = nil
			}
			_, werr = protocol.WriteEnvelopeLeaving(a.stdout, command, json.RawMessage(raw), envErr)
		} else {
			_, werr = protocol.WriteEnvelope(a.stdout, command, res, envErr)
		}
		if werr != nil {
			return exitStatus(protocol.ExitFailed)
		}
		return statusOf(exitFor(err))
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "cyber-supervisor %s: %s\n", command, humanText(a.suggesting(envelopeError(err))))
		return statusOf(exitFor(err))
	}
	if human != nil {
		human()
	}
	return nil
}

func statusOf(code int) error {
	if code == protocol.ExitOK {
		return nil
	}
	return exitStatus(code)
}

// humanText is an error as a person reads it: "code: message", or just
// the message when it already starts with the code.
func humanText(e *protocol.Error) string {
	if e.Message == "" {
		return string(e.Code)
	}
	return e.Error()
}

// decimalStrings rewrites every JSON number in raw as a decimal string
// ("n":1 → "n":"1"), keeping the order of keys: the envelope's rule that
// every integer is a string, whatever produced the result.
func decimalStrings(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out bytes.Buffer
	// Per open container: whether it is an object, whether its next
	// token is a key, and whether nothing was written in it yet.
	type frame struct{ object, key, first bool }
	var stack []frame
	sep := func() {
		if len(stack) == 0 {
			return
		}
		f := &stack[len(stack)-1]
		switch {
		case f.object && !f.key: // a value after its key
			out.WriteByte(':')
			f.key = true
			return
		case f.object:
			f.key = false
		}
		if !f.first {
			out.WriteByte(',')
		}
		f.first = false
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				sep()
				out.WriteByte(byte(t))
				stack = append(stack, frame{object: t == '{', key: true, first: true})
			default:
				out.WriteByte(byte(t))
				stack = stack[:len(stack)-1]
			}
			continue
		case json.Number:
			tok = t.String()
		}
		sep()
		b, err := json.Marshal(tok)
		if err != nil {
			return nil, err
		}
		out.Write(b)
	}
	return out.Bytes(), nil
}

// suggestedCommand is how a message of the daemon or the fencing engine
// names a command it suggests: "`cyber-supervisor neuron init`".
const suggestedCommand = "`cyber-supervisor "

// suggesting is e with the commands its message suggests naming the home
// when --home named it (homeCLI), so that the suggestion acts on this
// home and not on the default one; a suggestion that names a home
// already is left alone.
func (a *app) suggesting(e *protocol.Error) *protocol.Error {
	if a.home == "" || !strings.Contains(e.Message, suggestedCommand) {
		return e
	}
	home, err := supervisor.ResolveHome(a.home)
	if err != nil {
		return e
	}
	parts := strings.Split(e.Message, suggestedCommand)
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		if strings.HasPrefix(p, "--home ") {
			b.WriteString(suggestedCommand + p)
			continue
		}
		b.WriteString("`" + a.homeCLI(home) + " " + p)
	}
	c := *e
	c.Message = b.String()
	return &c
}
