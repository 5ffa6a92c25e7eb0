package pluginserver

import (
	"context"
	"errors"
	"io"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// run serves one Run call: Start, then at most Cancels from the client;
// Accepted, a CancelAck once if a Cancel came while running, and exactly
// one Result or Failure from the worker. Every panic in the Service is
// recovered, because a worker that dies mid-call tells the supervisor less
// than one that reports its own failure.
func (s *Server) run(ctx context.Context, c *call) {
	first, err := c.recv()
	if err != nil {
		c.fail(requestError(err))
		return
	}
	in, err := decodeRunInput(first)
	if err != nil {
		c.fail(requestError(err))
		return
	}
	out := &runSender{c: c}
	if in.start == nil {
		out.final(eventFailure, errorJSON(protocol.Errorf(protocol.CodeInvalidJob, "run: the first message must be Start")))
		return
	}
	req := protocol.RunRequest{JobSpec: in.start.jobSpec, Attempt: in.start.attempt, WorkDir: in.start.workDir}
	if err := req.Validate(); err != nil {
		out.final(eventFailure, errorJSON(protocol.AsError(err)))
		return
	}
	// The run's context ends with the call's (client cancel, lost
	// connection, grpc-timeout) or on a Cancel message, whichever is first.
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if err := c.send(encodeRunEvent(eventAccepted, nil)); err != nil {
		return // the client is gone
	}
	go watchCancel(c, out, cancel)
	res, err := s.runRecovered(rctx, req)
	if err != nil {
		out.final(eventFailure, errorJSON(runError(rctx, err)))
		return
	}
	if err := res.Validate(); err != nil {
		out.final(eventFailure, errorJSON(protocol.AsError(err)))
		return
	}
	b, err := res.MarshalJSON()
	if err != nil {
		out.final(eventFailure, errorJSON(protocol.Errorf(protocol.CodeInternalError, "encoding the result")))
		return
	}
	out.final(eventResult, b)
}

func (s *Server) runRecovered(ctx context.Context, req protocol.RunRequest) (res protocol.Result, err error) {
	defer recoverAs(&err, "running the job") // res stays zero: the return never ran
	return s.svc.Run(ctx, req)
}

// watchCancel reads the rest of the client's stream: a Cancel is
// acknowledged, once, and then cancels the run's context. It returns when
// the stream ends, at the latest when the handler returns
// (stream.handlerDone).
func watchCancel(c *call, out *runSender, cancel context.CancelCauseFunc) {
	for {
		msg, err := c.recv()
		if err != nil {
			// EOF is a half-close: the client has nothing more to say,
			// which is not a cancellation. Other errors end the call, and
			// with it the run's context.
			if err != io.EOF {
				cancel(nil)
			}
			return
		}
		in, err := decodeRunInput(msg)
		switch {
		case err != nil:
			cancel(protocol.Errorf(protocol.CodeInvalidJob, "run: a malformed message after Start"))
		case in.cancel != nil:
			reason := protocol.SafeMessage(in.cancel.reason)
			if reason == "" {
				reason = "requested by the supervisor"
			}
			// Acknowledged first: the cancel can end the run at once, and
			// an acknowledgement after the final event is never sent, so
			// cancelling first let the client see the run end without an
			// acknowledgement of a cancel that ended it (CI met this in
			// pluginclient's TestCancelAcknowledged).
			out.ack()
			cancel(protocol.Errorf(protocol.CodeCancelled, "cancelled: %s", reason))
		case in.start != nil:
			cancel(protocol.Errorf(protocol.CodeInvalidJob, "run: a second Start on one run"))
		}
	}
}

// runError maps what Service.Run returned. A bare context error after the
// run's context ended is reported as that context's cause: the Cancel's
// *Error, or cancelled when the call itself went away.
func runError(ctx context.Context, err error) *protocol.Error {
	var e *protocol.Error
	if errors.As(err, &e) {
		return e
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		if errors.As(context.Cause(ctx), &e) {
			return e
		}
		return protocol.Errorf(protocol.CodeCancelled, "cancelled")
	}
	return protocol.AsError(err)
}

// runSender enforces the event order on the response stream: no CancelAck
// after the final event, exactly one final event.
type runSender struct {
	c     *call
	acked bool
}

func (r *runSender) ack() {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	if r.acked || r.c.finished {
		return
	}
	r.acked = true
	_ = r.c.sendLocked(encodeRunEvent(eventCancelAck, nil))
}

// final sends the last event and the call's OK status. A send error is
// not reported: the run is over either way, and a client that left cannot
// be told.
func (r *runSender) final(num int, payload []byte) {
	r.c.reply(encodeRunEvent(num, payload))
}
