package protocol

import (
	"context"
	"errors"
	"net"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/cyberia-to/cyber-supervisor/protocol/workerpb"
)

// fakeService runs whatever the test puts in run.
type fakeService struct {
	run      func(ctx context.Context, req RunRequest) (Result, error)
	describe func() (Capabilities, WorkerDescriptor, error)
	shutdown atomic.Int32
}

func (f *fakeService) Describe(context.Context) (Capabilities, WorkerDescriptor, error) {
	if f.describe != nil {
		return f.describe()
	}
	return testCaps(), testDescriptor(), nil
}

func (f *fakeService) Run(ctx context.Context, req RunRequest) (Result, error) {
	return f.run(ctx, req)
}

func (f *fakeService) Shutdown(context.Context) error {
	f.shutdown.Add(1)
	return nil
}

func pluginPair(t *testing.T, svc Service) (*Client, *plugin.GRPCServer) {
	t.Helper()
	gc, gs := plugin.TestPluginGRPCConn(t, false, PluginMap(svc))
	t.Cleanup(func() { closePair(t, gc, gs) })
	c, err := Dispense(gc)
	if err != nil {
		t.Fatal(err)
	}
	return c, gs
}

// closePair closes the client, which stops the server through go-plugin's
// controller; stopping the server directly as well would race inside
// go-plugin.
func closePair(t *testing.T, gc *plugin.GRPCClient, gs *plugin.GRPCServer) {
	_ = gc.Close()
	select {
	case <-gs.DoneCh:
	case <-time.After(5 * time.Second):
		t.Error("the test server did not stop")
	}
}

func testRequest(t testing.TB) RunRequest {
	return RunRequest{JobSpec: []byte(specJSON(t, nil, "")), Attempt: 1, WorkDir: "/work/job-1/attempt-1"}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestDescribe(t *testing.T) {
	svc := &fakeService{}
	c, _ := pluginPair(t, svc)
	caps, desc, err := c.Describe(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(caps, testCaps()) || !desc.Equal(testDescriptor()) {
		t.Fatalf("describe: %+v %+v", caps, desc)
	}
	svc.describe = func() (Capabilities, WorkerDescriptor, error) {
		return Capabilities{}, WorkerDescriptor{}, Errorf(CodeIOError, "probe failed")
	}
	_, _, err = c.Describe(ctxT(t))
	wantCode(t, err, CodeIOError, "probe failed")
	svc.describe = func() (Capabilities, WorkerDescriptor, error) {
		c := testCaps()
		c.SecretProofs = true // a dishonest backend is stopped at the source
		return c, testDescriptor(), nil
	}
	_, _, err = c.Describe(ctxT(t))
	wantCode(t, err, CodeInternalError, "secret_proofs")
	svc.describe = func() (Capabilities, WorkerDescriptor, error) { panic("describe boom") }
	_, _, err = c.Describe(ctxT(t))
	wantCode(t, err, CodeInternalError, "panicked")
}

func TestRunResultRoundTrip(t *testing.T) {
	want := testResult()
	var got RunRequest
	svc := &fakeService{run: func(_ context.Context, req RunRequest) (Result, error) {
		got = req
		return want, nil
	}}
	c, _ := pluginPair(t, svc)
	req := testRequest(t)
	run, err := c.Start(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Wait(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("result:\n%+v\n%+v", res, want)
	}
	if !reflect.DeepEqual(got, req) {
		t.Fatalf("request:\n%+v\n%+v", got, req)
	}
	// A finished run cannot be cancelled, and says so without error.
	if ack, err := run.Cancel(ctxT(t), "late"); ack || err != nil {
		t.Fatalf("cancel after the end: %v %v", ack, err)
	}
}

func TestRunFailures(t *testing.T) {
	cases := []struct {
		name  string
		run   func(context.Context, RunRequest) (Result, error)
		code  Code
		inMsg string
		retry bool
	}{
		{"typed", func(context.Context, RunRequest) (Result, error) {
			return Result{}, Errorf(CodeBudgetExhausted, "budget 1000 exhausted")
		}, CodeBudgetExhausted, "budget 1000", false},
		{"wrapped typed", func(context.Context, RunRequest) (Result, error) {
			return Result{}, errors.Join(errors.New("noise"), Errorf(CodeMemoryExhausted, "oom"))
		}, CodeMemoryExhausted, "oom", true},
		{"untyped", func(context.Context, RunRequest) (Result, error) {
			return Result{}, errors.New("open /home/secret: denied")
		}, CodeInternalError, "internal error", true},
		{"panic", func(context.Context, RunRequest) (Result, error) {
			panic("boom")
		}, CodeInternalError, "panicked", false},
		{"nil-map panic", func(context.Context, RunRequest) (Result, error) {
			var m map[string]int
			m["x"]++
			return Result{}, nil
		}, CodeInternalError, "panicked", false},
		{"inconsistent result", func(context.Context, RunRequest) (Result, error) {
			r := testResult()
			r.Reductions = r.Budget + 1
			return r, nil
		}, CodeExecutionFailed, "exceed", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			client, _ := pluginPair(t, &fakeService{run: c.run})
			run, err := client.Start(ctxT(t), testRequest(t))
			if err != nil {
				t.Fatal(err)
			}
			_, err = run.Wait(ctxT(t))
			wantCode(t, err, c.code, c.inMsg)
			if AsError(err).Retryable != c.retry {
				t.Fatalf("retryable = %v", AsError(err).Retryable)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("untyped error text crossed the boundary: %v", err)
			}
			// The worker survives and serves the next call.
			if _, _, err := client.Describe(ctxT(t)); err != nil {
				t.Fatalf("after the failure: %v", err)
			}
		})
	}
}

func TestCancelAcknowledged(t *testing.T) {
	started := make(chan struct{})
	var cause atomic.Value
	svc := &fakeService{run: func(ctx context.Context, _ RunRequest) (Result, error) {
		close(started)
		<-ctx.Done()
		cause.Store(context.Cause(ctx))
		return Result{}, ctx.Err() // a bare context error: the glue reports the cause
	}}
	c, _ := pluginPair(t, svc)
	run, err := c.Start(ctxT(t), testRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	ack, err := run.Cancel(ctxT(t), "operator\nrequest")
	if err != nil || !ack {
		t.Fatalf("cancel: ack=%v err=%v", ack, err)
	}
	_, err = run.Wait(ctxT(t))
	wantCode(t, err, CodeCancelled, "operator?request")
	if !errors.Is(cause.Load().(error), ErrCancelled) {
		t.Fatalf("service saw cause %v", cause.Load())
	}
	if ack, err := run.Cancel(ctxT(t), "again"); !ack || err != nil {
		t.Fatalf("second cancel: %v %v", ack, err)
	}
}

func TestCancelNotAcknowledgedInTime(t *testing.T) {
	// A service that ignores cancellation still gets its context
	// cancelled and the glue still acknowledges: the acknowledgement means
	// "delivered", the kill deadline is the supervisor's business. Here the
	// caller's own deadline expires before it looks.
	release := make(chan struct{})
	svc := &fakeService{run: func(context.Context, RunRequest) (Result, error) {
		<-release
		return testResult(), nil
	}}
	c, _ := pluginPair(t, svc)
	run, err := c.Start(ctxT(t), testRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if ack, err := run.Cancel(expired, "x"); err == nil && !ack {
		t.Fatal("neither ack nor error")
	}
	if ack, err := run.Cancel(ctxT(t), "x"); !ack || err != nil {
		t.Fatalf("cancel: %v %v", ack, err)
	}
	close(release)
	// The service returned a result despite the cancel; it is reported as
	// is, and the supervisor discards late results by its own rules.
	if _, err := run.Wait(ctxT(t)); err != nil {
		t.Fatalf("wait: %v", err)
	}
}

func TestCancelThroughContext(t *testing.T) {
	started := make(chan struct{})
	stopped := make(chan error, 1)
	svc := &fakeService{run: func(ctx context.Context, _ RunRequest) (Result, error) {
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return Result{}, ctx.Err()
	}}
	c, _ := pluginPair(t, svc)
	ctx, cancel := context.WithCancel(context.Background())
	run, err := c.Start(ctx, testRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	cancel()
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("service context: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the service's context was not cancelled")
	}
	_, err = run.Wait(ctxT(t))
	wantCode(t, err, CodeCancelled, "")
}

func TestWaitBoundedByItsContext(t *testing.T) {
	release := make(chan struct{})
	svc := &fakeService{run: func(context.Context, RunRequest) (Result, error) {
		<-release
		return testResult(), nil
	}}
	c, _ := pluginPair(t, svc)
	run, err := c.Start(ctxT(t), testRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := run.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait: %v", err)
	}
	close(release)
	if _, err := run.Wait(ctxT(t)); err != nil {
		t.Fatalf("the run did not go on: %v", err)
	}
}

func TestStartRefused(t *testing.T) {
	svc := &fakeService{run: func(context.Context, RunRequest) (Result, error) { return testResult(), nil }}
	c, gs := pluginPair(t, svc)
	// The client checks its request before sending it.
	for _, req := range []RunRequest{
		{JobSpec: nil, Attempt: 1, WorkDir: "/w"},
		{JobSpec: []byte("{}"), Attempt: 0, WorkDir: "/w"},
		{JobSpec: []byte("{}"), Attempt: 1, WorkDir: "w"},
		{JobSpec: []byte("{}"), Attempt: 1, WorkDir: "/w/../x"},
	} {
		_, err := c.Start(ctxT(t), req)
		wantCode(t, err, CodeInvalidJob, "run:")
	}
	_ = gs
	// The server checks it too, and a first message that is not Start.
	raw := workerpb.NewWorkerClient(dispenseConn(t, svc))
	for _, first := range []*workerpb.RunInput{
		{Msg: &workerpb.RunInput_Cancel{Cancel: &workerpb.Cancel{}}},
		{Msg: &workerpb.RunInput_Start{Start: &workerpb.Start{JobSpecJson: []byte("{}"), Attempt: 0, WorkDir: "/w"}}},
	} {
		stream, err := raw.Run(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := stream.Send(first); err != nil {
			t.Fatal(err)
		}
		ev, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		f := ev.GetFailure()
		if f == nil {
			t.Fatalf("event %v, want Failure", ev)
		}
		wantCode(t, ParseError(f.ErrorJson), CodeInvalidJob, "run:")
	}
}

func dispenseConn(t *testing.T, svc Service) *grpc.ClientConn {
	gc, gs := plugin.TestPluginGRPCConn(t, false, PluginMap(svc))
	t.Cleanup(func() { closePair(t, gc, gs) })
	return gc.Conn
}

func TestShutdown(t *testing.T) {
	svc := &fakeService{}
	c, gs := pluginPair(t, svc)
	if err := c.Shutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if svc.shutdown.Load() != 1 {
		t.Fatal("Service.Shutdown not called")
	}
	select {
	case <-gs.DoneCh:
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not stop after Shutdown")
	}
}

type failingShutdown struct{ fakeService }

func (f *failingShutdown) Shutdown(context.Context) error {
	return Errorf(CodeIOError, "flush failed")
}

func TestShutdownRefused(t *testing.T) {
	c, gs := pluginPair(t, &failingShutdown{})
	wantCode(t, c.Shutdown(ctxT(t)), CodeIOError, "flush failed")
	select {
	case <-gs.DoneCh:
		t.Fatal("the server stopped although Shutdown failed")
	case <-time.After(100 * time.Millisecond):
	}
}

func TestWorkerGone(t *testing.T) {
	started := make(chan struct{})
	svc := &fakeService{run: func(ctx context.Context, _ RunRequest) (Result, error) {
		close(started)
		<-ctx.Done()
		return Result{}, ctx.Err()
	}}
	c, gs := pluginPair(t, svc)
	run, err := c.Start(ctxT(t), testRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	gs.Stop() // the worker process dies
	_, err = run.Wait(ctxT(t))
	if code := CodeOf(err); code != CodeIOError && code != CodeInternalError {
		t.Fatalf("lost worker: %v", err)
	}
	_, _, err = c.Describe(ctxT(t))
	wantCode(t, err, CodeIOError, "unavailable")
}

// A maximal job spec (a verify job with an artifact near its cap) exceeds
// gRPC's default 4 MiB; NewGRPCServer and the client's call options make
// room for it.
func TestLargeJobSpec(t *testing.T) {
	lis := bufconn.Listen(1 << 20)
	s := NewGRPCServer(nil)
	svc := &fakeService{run: func(_ context.Context, req RunRequest) (Result, error) {
		if _, err := ParseJobSpec(req.JobSpec); err != nil {
			return Result{}, err
		}
		return testResult(), nil
	}}
	p := &Plugin{Impl: svc}
	if err := p.GRPCServer(nil, s); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(lis) }()
	defer s.Stop()
	conn, err := grpc.Dial("bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	artifact := make([]byte, 6<<20)
	spec := specJSON(t, map[string]string{"operation": `"verify"`, "artifact": `"` + b64(artifact) + `"`}, "")
	run, err := NewClient(conn).Start(ctxT(t), RunRequest{JobSpec: []byte(spec), Attempt: 1, WorkDir: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Wait(ctxT(t)); err != nil {
		t.Fatal(err)
	}
}
