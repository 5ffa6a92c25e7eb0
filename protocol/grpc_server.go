package protocol

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/cyberia-to/cyber-supervisor/protocol/workerpb"
)

// server adapts a Service to the generated gRPC interface. Everything that
// leaves it is contract JSON; every panic in the Service is recovered here,
// because a worker that dies mid-call tells the supervisor less than one
// that reports its own failure.
type server struct {
	workerpb.UnimplementedWorkerServer
	svc      Service
	grpc     *grpc.Server
	grace    time.Duration
	stopOnce sync.Once
}

func newServer(svc Service, s *grpc.Server, grace time.Duration) *server {
	return &server{svc: svc, grpc: s, grace: grace}
}

func (s *server) Describe(ctx context.Context, _ *workerpb.DescribeRequest) (*workerpb.DescribeResponse, error) {
	caps, desc, err := s.describe(ctx)
	if err == nil {
		err = caps.Validate()
	}
	if err == nil {
		if derr := desc.Validate(); derr != nil {
			err = Errorf(CodeInternalError, "the worker's own descriptor is invalid: %s", AsError(derr).Message)
		}
	}
	if err != nil {
		return &workerpb.DescribeResponse{ErrorJson: errorJSON(AsError(err))}, nil
	}
	cb, err := caps.MarshalJSON()
	if err != nil {
		return &workerpb.DescribeResponse{ErrorJson: errorJSON(Errorf(CodeInternalError, "encoding capabilities"))}, nil
	}
	db, err := desc.MarshalJSON()
	if err != nil {
		return &workerpb.DescribeResponse{ErrorJson: errorJSON(Errorf(CodeInternalError, "encoding the descriptor"))}, nil
	}
	return &workerpb.DescribeResponse{CapabilitiesJson: cb, DescriptorJson: db}, nil
}

func (s *server) describe(ctx context.Context) (c Capabilities, d WorkerDescriptor, err error) {
	defer recoverAs(&err, "describing the worker")
	return s.svc.Describe(ctx)
}

func (s *server) Shutdown(ctx context.Context, _ *workerpb.ShutdownRequest) (*workerpb.ShutdownResponse, error) {
	if err := s.shutdown(ctx); err != nil {
		return &workerpb.ShutdownResponse{ErrorJson: errorJSON(AsError(err))}, nil
	}
	s.stopOnce.Do(func() { go s.stopAfterReply() })
	return &workerpb.ShutdownResponse{}, nil
}

func (s *server) shutdown(ctx context.Context) (err error) {
	defer recoverAs(&err, "shutting down")
	return s.svc.Shutdown(ctx)
}

// stopAfterReply stops the gRPC server once the Shutdown reply is out.
// GracefulStop waits for running handlers, the Shutdown handler among them,
// so the reply is written first; go-plugin's stdio and broker streams never
// finish by themselves, hence the hard stop after the grace period.
func (s *server) stopAfterReply() {
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(s.grace):
		s.grpc.Stop()
	}
}

func (s *server) Run(stream workerpb.Worker_RunServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err // the client is gone; nobody to answer
	}
	out := &runSender{stream: stream}
	start := first.GetStart()
	if start == nil {
		return out.final(failureEvent(Errorf(CodeInvalidJob, "run: the first message must be Start")))
	}
	req := RunRequest{JobSpec: start.JobSpecJson, Attempt: start.Attempt, WorkDir: start.WorkDir}
	if err := req.Validate(); err != nil {
		return out.final(failureEvent(AsError(err)))
	}
	// The run's context ends with the call's (client cancel, lost
	// connection) or on a Cancel message, whichever comes first.
	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	if err := out.send(&workerpb.RunEvent{Event: &workerpb.RunEvent_Accepted{Accepted: &workerpb.Accepted{}}}); err != nil {
		return err
	}
	go watchCancel(stream, out, cancel)
	res, err := s.run(ctx, req)
	if err != nil {
		return out.final(failureEvent(runError(ctx, err)))
	}
	if err := res.Validate(); err != nil {
		return out.final(failureEvent(AsError(err)))
	}
	b, err := res.MarshalJSON()
	if err != nil {
		return out.final(failureEvent(Errorf(CodeInternalError, "encoding the result")))
	}
	return out.final(&workerpb.RunEvent{Event: &workerpb.RunEvent_Result{Result: &workerpb.Result{ResultJson: b}}})
}

func (s *server) run(ctx context.Context, req RunRequest) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			// Deterministic code that panicked on this job will panic
			// again: not retryable, unlike other internal errors.
			res, err = Result{}, &Error{Code: CodeInternalError, Message: "the worker panicked while running the job"}
		}
	}()
	return s.svc.Run(ctx, req)
}

// watchCancel reads the rest of the client's stream: a Cancel cancels the
// run's context and is then acknowledged, once. It returns when the stream
// ends, which at the latest is when the Run handler returns.
func watchCancel(stream workerpb.Worker_RunServer, out *runSender, cancel context.CancelCauseFunc) {
	for {
		in, err := stream.Recv()
		if err != nil {
			// EOF is a half-close: the client has nothing more to say,
			// which is not a cancellation. Other errors end the call, and
			// with it the run's context.
			return
		}
		switch m := in.Msg.(type) {
		case *workerpb.RunInput_Cancel:
			reason := SafeMessage(m.Cancel.GetReason())
			if reason == "" {
				reason = "requested by the supervisor"
			}
			cancel(Errorf(CodeCancelled, "cancelled: %s", reason))
			out.ack()
		case *workerpb.RunInput_Start:
			cancel(Errorf(CodeInvalidJob, "run: a second Start on one run"))
		}
	}
}

// runError maps what Service.Run returned. A bare context error after the
// run's context ended is reported as that context's cause: the Cancel's
// *Error, or cancelled when the call itself went away.
func runError(ctx context.Context, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		if errors.As(context.Cause(ctx), &e) {
			return e
		}
		return Errorf(CodeCancelled, "cancelled")
	}
	return AsError(err)
}

// runSender serializes sends on the server stream (gRPC allows one sender
// at a time) and enforces the event order: no CancelAck after the final
// event, exactly one final event.
type runSender struct {
	mu     sync.Mutex
	stream workerpb.Worker_RunServer
	acked  bool
	done   bool
}

func (r *runSender) send(ev *workerpb.RunEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stream.Send(ev)
}

func (r *runSender) ack() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.acked || r.done {
		return
	}
	r.acked = true
	_ = r.stream.Send(&workerpb.RunEvent{Event: &workerpb.RunEvent_CancelAck{CancelAck: &workerpb.CancelAck{}}})
}

// final sends the last event. A send error is not returned: the run is
// over either way, and a client that left cannot be told.
func (r *runSender) final(ev *workerpb.RunEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return nil
	}
	r.done = true
	_ = r.stream.Send(ev)
	return nil
}

func failureEvent(e *Error) *workerpb.RunEvent {
	return &workerpb.RunEvent{Event: &workerpb.RunEvent_Failure{Failure: &workerpb.Failure{ErrorJson: errorJSON(e)}}}
}

func errorJSON(e *Error) []byte {
	b, err := e.MarshalJSON()
	if err != nil {
		return []byte(`{"code":"internal_error","message":"unencodable error","retryable":true}`)
	}
	return b
}

// recoverAs turns a panic into an internal_error in *err.
func recoverAs(err *error, what string) {
	if p := recover(); p != nil {
		*err = &Error{Code: CodeInternalError, Message: "the worker panicked while " + what}
	}
}
