package pluginclient

import (
	"context"
	"errors"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/protocol/workerpb"
)

// Client is the supervisor's side of the worker service. Everything a
// worker sends is parsed as untrusted input: bounded, strictly typed, codes
// checked, messages made safe.
type Client struct {
	rpc workerpb.WorkerClient
}

// NewClient wraps a connection to a worker.
func NewClient(cc grpc.ClientConnInterface) *Client {
	return &Client{rpc: workerpb.NewWorkerClient(cc)}
}

// callOpts let a job spec out; what comes back is bounded per method by
// the connection (bounds.go).
var callOpts = []grpc.CallOption{grpc.MaxCallSendMsgSize(protocol.MaxWireBytes)}

// Describe asks the worker for its capabilities and descriptor.
func (c *Client) Describe(ctx context.Context) (protocol.Capabilities, protocol.WorkerDescriptor, error) {
	resp, err := c.rpc.Describe(ctx, &workerpb.DescribeRequest{}, callOpts...)
	if err != nil {
		return protocol.Capabilities{}, protocol.WorkerDescriptor{}, transportError(ctx, err, "describe")
	}
	if len(resp.ErrorJson) > 0 {
		return protocol.Capabilities{}, protocol.WorkerDescriptor{}, protocol.ParseError(resp.ErrorJson)
	}
	caps, err := protocol.ParseCapabilities(resp.CapabilitiesJson)
	if err != nil {
		return protocol.Capabilities{}, protocol.WorkerDescriptor{}, err
	}
	desc, err := protocol.ParseDescriptor(resp.DescriptorJson)
	if err != nil {
		// A bad descriptor is a broken worker, not a bad job.
		return protocol.Capabilities{}, protocol.WorkerDescriptor{}, protocol.Errorf(protocol.CodeInternalError, "worker: %s", protocol.AsError(err).Message)
	}
	return *caps, *desc, nil
}

// Shutdown asks the worker to exit. It returns once the worker replied; the
// process exits shortly after, and the caller still reaps (or kills) it.
func (c *Client) Shutdown(ctx context.Context) error {
	resp, err := c.rpc.Shutdown(ctx, &workerpb.ShutdownRequest{}, callOpts...)
	if err != nil {
		return transportError(ctx, err, "shutdown")
	}
	if len(resp.ErrorJson) > 0 {
		return protocol.ParseError(resp.ErrorJson)
	}
	return nil
}

// Run is one attempt in progress on a worker.
type Run struct {
	stream workerpb.Worker_RunClient
	stop   context.CancelFunc
	sendMu sync.Mutex

	ack     chan struct{} // closed on CancelAck
	done    chan struct{} // closed when result or err is final
	result  protocol.Result
	err     error
	ackOnce sync.Once
}

// Start dispatches one attempt and returns once the worker accepted it. ctx
// governs the whole run, not just the start: cancelling it cancels the
// attempt in the worker. A worker that refuses the Start outright returns
// its *protocol.Error here.
func (c *Client) Start(ctx context.Context, req protocol.RunRequest) (*Run, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	sctx, stop := context.WithCancel(ctx)
	stream, err := c.rpc.Run(sctx, callOpts...)
	if err != nil {
		stop()
		return nil, transportError(ctx, err, "run")
	}
	start := &workerpb.RunInput{Msg: &workerpb.RunInput_Start{Start: &workerpb.Start{
		JobSpecJson: req.JobSpec, Attempt: req.Attempt, WorkDir: req.WorkDir,
	}}}
	// A failed send reports io.EOF; the stream's real status comes from
	// Recv, below.
	if err := stream.Send(start); err != nil && !errors.Is(err, io.EOF) {
		stop()
		return nil, transportError(ctx, err, "run")
	}
	ev, err := stream.Recv()
	if err != nil {
		stop()
		return nil, transportError(ctx, err, "run")
	}
	switch e := ev.Event.(type) {
	case *workerpb.RunEvent_Accepted:
	case *workerpb.RunEvent_Failure:
		stop()
		return nil, protocol.ParseError(e.Failure.GetErrorJson())
	default:
		stop()
		return nil, protocol.Errorf(protocol.CodeInternalError, "worker broke the run protocol: the first event was not Accepted")
	}
	r := &Run{stream: stream, stop: stop, ack: make(chan struct{}), done: make(chan struct{})}
	go r.receive(ctx)
	return r, nil
}

// receive reads events until the final one or until the stream breaks.
func (r *Run) receive(ctx context.Context) {
	defer r.stop()
	for {
		ev, err := r.stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				r.finish(protocol.Result{}, protocol.Errorf(protocol.CodeInternalError, "worker ended the run without a result"))
			} else {
				r.finish(protocol.Result{}, transportError(ctx, err, "run"))
			}
			return
		}
		switch e := ev.Event.(type) {
		case *workerpb.RunEvent_CancelAck:
			r.ackOnce.Do(func() { close(r.ack) })
		case *workerpb.RunEvent_Result:
			res, err := protocol.ParseResult(e.Result.GetResultJson())
			if err != nil {
				r.finish(protocol.Result{}, err)
			} else {
				r.finish(*res, nil)
			}
			return
		case *workerpb.RunEvent_Failure:
			r.finish(protocol.Result{}, protocol.ParseError(e.Failure.GetErrorJson()))
			return
		}
	}
}

func (r *Run) finish(res protocol.Result, err error) {
	r.result, r.err = res, err
	close(r.done)
}

// Done is closed when the run's outcome is known.
func (r *Run) Done() <-chan struct{} { return r.done }

// Cancel asks the worker to cancel the run and waits, within ctx, for the
// acknowledgement. It reports false with a nil error when the run ended
// before the worker saw the request (Wait then has the outcome), and false
// with ctx's error when no acknowledgement came in time: the caller's cue
// to escalate to a kill. The request is sent even when ctx has already
// ended; ctx bounds only the wait. Calling it again after an
// acknowledgement returns true at once.
func (r *Run) Cancel(ctx context.Context, reason string) (bool, error) {
	if r.acked() {
		return true, nil
	}
	select {
	case <-r.done:
		return r.acked(), nil
	default:
	}
	msg := &workerpb.RunInput{Msg: &workerpb.RunInput_Cancel{Cancel: &workerpb.Cancel{Reason: protocol.SafeMessage(reason)}}}
	r.sendMu.Lock()
	err := r.stream.Send(msg)
	r.sendMu.Unlock()
	if err != nil {
		// The stream is over; its outcome is on its way to Wait.
		select {
		case <-r.done:
		case <-ctx.Done():
			return false, ctx.Err()
		}
		return r.acked(), nil
	}
	select {
	case <-r.ack:
		return true, nil
	case <-r.done:
		return r.acked(), nil
	case <-ctx.Done():
		return r.acked(), ctx.Err()
	}
}

func (r *Run) acked() bool {
	select {
	case <-r.ack:
		return true
	default:
		return false
	}
}

// Wait returns the run's result, or its failure as a *protocol.Error (a lost
// connection is io_error; the run's context ending is cancelled or
// deadline_exceeded). ctx bounds only the waiting: when it ends first, Wait
// returns ctx's error and the run goes on.
func (r *Run) Wait(ctx context.Context) (protocol.Result, error) {
	select {
	case <-r.done:
		return r.result, r.err
	case <-ctx.Done():
		return protocol.Result{}, ctx.Err()
	}
}

// transportError maps a gRPC failure. The status text comes from the
// transport or the worker and is not repeated; the code says enough.
func transportError(ctx context.Context, err error, call string) *protocol.Error {
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return protocol.Errorf(protocol.CodeDeadlineExceeded, "%s: deadline exceeded", call)
		}
		return protocol.Errorf(protocol.CodeCancelled, "%s: cancelled", call)
	}
	switch c := status.Code(err); c {
	case codes.Canceled:
		return protocol.Errorf(protocol.CodeCancelled, "%s: cancelled", call)
	case codes.DeadlineExceeded:
		return protocol.Errorf(protocol.CodeDeadlineExceeded, "%s: deadline exceeded", call)
	case codes.Unavailable, codes.Aborted:
		return protocol.Errorf(protocol.CodeIOError, "%s: worker unavailable (%s)", call, c)
	case codes.ResourceExhausted:
		// Past a receive limit (bounds.go): the worker broke the
		// protocol, as with any other malformed reply.
		return protocol.Errorf(protocol.CodeInternalError, "%s: a message larger than the protocol allows", call)
	default:
		return protocol.Errorf(protocol.CodeInternalError, "%s: gRPC call failed (%s)", call, c)
	}
}
