package pluginclient

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/protocol/pluginserver"
	"github.com/cyberia-to/cyber-supervisor/protocol/workerpb"
)

// fakeService runs whatever the test puts in run.
type fakeService struct {
	run      func(ctx context.Context, req protocol.RunRequest) (protocol.Result, error)
	describe func() (protocol.Capabilities, protocol.WorkerDescriptor, error)
	shutdown atomic.Int32
}

func (f *fakeService) Describe(context.Context) (protocol.Capabilities, protocol.WorkerDescriptor, error) {
	if f.describe != nil {
		return f.describe()
	}
	return testCaps(), testDescriptor(), nil
}

func (f *fakeService) Run(ctx context.Context, req protocol.RunRequest) (protocol.Result, error) {
	return f.run(ctx, req)
}

func (f *fakeService) Shutdown(context.Context) error {
	f.shutdown.Add(1)
	return nil
}

// pluginPair serves svc with pluginserver on a unix socket and connects
// go-plugin's client to it (reattaching, as to a running plugin), so every
// test runs the worker side the supervisor meets.
func pluginPair(t *testing.T, svc protocol.Service) (*Client, *testServer) {
	t.Helper()
	return pluginPairWith(t, svc, nil)
}

// pluginPairWith is pluginPair with setup applied to the server before it
// serves (pluginserver.Server.Handle).
func pluginPairWith(t *testing.T, svc protocol.Service, setup func(*pluginserver.Server)) (*Client, *testServer) {
	t.Helper()
	ts := startServerWith(t, svc, setup)
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  Handshake,
		Plugins:          PluginMap(),
		Reattach:         &plugin.ReattachConfig{Protocol: plugin.ProtocolGRPC, ProtocolVersion: protocol.PluginProtocolVersion, Addr: ts.addr, Pid: os.Getpid(), Test: true},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.NewNullLogger(),
		GRPCDialOptions:  DialOptions,
	})
	rpc, err := client.Client()
	if err != nil {
		t.Fatal(err)
	}
	// Closing the protocol client sends go-plugin's controller Shutdown,
	// which stops the server. (Kill does nothing to a reattached test
	// plugin.)
	t.Cleanup(func() {
		_ = rpc.Close()
		ts.wait(t)
	})
	c, err := Dispense(rpc)
	if err != nil {
		t.Fatal(err)
	}
	return c, ts
}

// testServer is a pluginserver.Server serving in this process.
type testServer struct {
	srv  *pluginserver.Server
	addr net.Addr
	done chan struct{}
}

func startServerWith(t *testing.T, svc protocol.Service, setup func(*pluginserver.Server)) *testServer {
	t.Helper()
	// Not t.TempDir: its path can exceed a socket path's 107 bytes.
	dir, err := os.MkdirTemp("", "plugin-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{srv: pluginserver.NewServer(svc, 0), addr: l.Addr(), done: make(chan struct{})}
	if setup != nil {
		setup(ts.srv)
	}
	go func() {
		defer close(ts.done)
		if err := ts.srv.Serve(l); err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	t.Cleanup(ts.srv.Stop)
	return ts
}

// stopped reports whether Serve returned within d.
func (ts *testServer) stopped(d time.Duration) bool {
	select {
	case <-ts.done:
		return true
	case <-time.After(d):
		return false
	}
}

func (ts *testServer) wait(t *testing.T) {
	if !ts.stopped(5 * time.Second) {
		t.Error("the test server did not stop")
	}
}

// rawConn is a plain gRPC connection to the server, for requests the
// Client would never send.
func rawConn(t *testing.T, ts *testServer) *grpc.ClientConn {
	conn, err := grpc.NewClient("passthrough:///unused",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", ts.addr.String())
		}),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func testRequest(t testing.TB) protocol.RunRequest {
	return protocol.RunRequest{JobSpec: testSpec(t, protocol.OpExecute, nil), Attempt: 1, WorkDir: "/work/job-1/attempt-1"}
}

// ctxT bounds a call only against a hang: under -race on two loaded
// cores a 6 MiB job spec alone took 6.8 s (0.5 s without the detector),
// so a tighter bound would be a timing assertion.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
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
	svc.describe = func() (protocol.Capabilities, protocol.WorkerDescriptor, error) {
		return protocol.Capabilities{}, protocol.WorkerDescriptor{}, protocol.Errorf(protocol.CodeIOError, "probe failed")
	}
	_, _, err = c.Describe(ctxT(t))
	wantCode(t, err, protocol.CodeIOError, "probe failed")
	svc.describe = func() (protocol.Capabilities, protocol.WorkerDescriptor, error) {
		c := testCaps()
		c.SecretProofs = true // a dishonest backend is stopped at the source
		return c, testDescriptor(), nil
	}
	_, _, err = c.Describe(ctxT(t))
	wantCode(t, err, protocol.CodeInternalError, "secret_proofs")
	svc.describe = func() (protocol.Capabilities, protocol.WorkerDescriptor, error) { panic("describe boom") }
	_, _, err = c.Describe(ctxT(t))
	wantCode(t, err, protocol.CodeInternalError, "panicked")
}

func TestRunResultRoundTrip(t *testing.T) {
	want := testResult()
	var got protocol.RunRequest
	svc := &fakeService{run: func(_ context.Context, req protocol.RunRequest) (protocol.Result, error) {
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
		run   func(context.Context, protocol.RunRequest) (protocol.Result, error)
		code  protocol.Code
		inMsg string
		retry bool
	}{
		{"typed", func(context.Context, protocol.RunRequest) (protocol.Result, error) {
			return protocol.Result{}, protocol.Errorf(protocol.CodeBudgetExhausted, "budget 1000 exhausted")
		}, protocol.CodeBudgetExhausted, "budget 1000", false},
		{"wrapped typed", func(context.Context, protocol.RunRequest) (protocol.Result, error) {
			return protocol.Result{}, errors.Join(errors.New("noise"), protocol.Errorf(protocol.CodeMemoryExhausted, "oom"))
		}, protocol.CodeMemoryExhausted, "oom", true},
		{"untyped", func(context.Context, protocol.RunRequest) (protocol.Result, error) {
			return protocol.Result{}, errors.New("open /home/secret: denied")
		}, protocol.CodeInternalError, "internal error", true},
		{"panic", func(context.Context, protocol.RunRequest) (protocol.Result, error) {
			panic("boom")
		}, protocol.CodeInternalError, "panicked", false},
		{"nil-map panic", func(context.Context, protocol.RunRequest) (protocol.Result, error) {
			var m map[string]int
			//lint:ignore SA5000 the panic is what this case serves
			m["x"]++
			return protocol.Result{}, nil
		}, protocol.CodeInternalError, "panicked", false},
		{"inconsistent result", func(context.Context, protocol.RunRequest) (protocol.Result, error) {
			r := testResult()
			r.Reductions = r.Budget + 1
			return r, nil
		}, protocol.CodeExecutionFailed, "exceed", false},
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
			if protocol.AsError(err).Retryable != c.retry {
				t.Fatalf("retryable = %v", protocol.AsError(err).Retryable)
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
	svc := &fakeService{run: func(ctx context.Context, _ protocol.RunRequest) (protocol.Result, error) {
		close(started)
		<-ctx.Done()
		cause.Store(context.Cause(ctx))
		return protocol.Result{}, ctx.Err() // a bare context error: the glue reports the cause
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
	wantCode(t, err, protocol.CodeCancelled, "operator?request")
	if !errors.Is(cause.Load().(error), protocol.ErrCancelled) {
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
	svc := &fakeService{run: func(context.Context, protocol.RunRequest) (protocol.Result, error) {
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
	svc := &fakeService{run: func(ctx context.Context, _ protocol.RunRequest) (protocol.Result, error) {
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return protocol.Result{}, ctx.Err()
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
	wantCode(t, err, protocol.CodeCancelled, "")
}

func TestWaitBoundedByItsContext(t *testing.T) {
	release := make(chan struct{})
	svc := &fakeService{run: func(context.Context, protocol.RunRequest) (protocol.Result, error) {
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
	svc := &fakeService{run: func(context.Context, protocol.RunRequest) (protocol.Result, error) { return testResult(), nil }}
	c, ts := pluginPair(t, svc)
	// The client checks its request before sending it.
	for _, req := range []protocol.RunRequest{
		{JobSpec: nil, Attempt: 1, WorkDir: "/w"},
		{JobSpec: []byte("{}"), Attempt: 0, WorkDir: "/w"},
		{JobSpec: []byte("{}"), Attempt: 1, WorkDir: "w"},
		{JobSpec: []byte("{}"), Attempt: 1, WorkDir: "/w/../x"},
	} {
		_, err := c.Start(ctxT(t), req)
		wantCode(t, err, protocol.CodeInvalidJob, "run:")
	}
	// The server checks it too, and a first message that is not Start.
	raw := workerpb.NewWorkerClient(rawConn(t, ts))
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
		wantCode(t, protocol.ParseError(f.ErrorJson), protocol.CodeInvalidJob, "run:")
	}
}

func TestShutdown(t *testing.T) {
	svc := &fakeService{}
	c, ts := pluginPair(t, svc)
	if err := c.Shutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if svc.shutdown.Load() != 1 {
		t.Fatal("Service.Shutdown not called")
	}
	if !ts.stopped(5 * time.Second) {
		t.Fatal("the server did not stop after Shutdown")
	}
}

type failingShutdown struct{ fakeService }

func (f *failingShutdown) Shutdown(context.Context) error {
	return protocol.Errorf(protocol.CodeIOError, "flush failed")
}

func TestShutdownRefused(t *testing.T) {
	c, ts := pluginPair(t, &failingShutdown{})
	wantCode(t, c.Shutdown(ctxT(t)), protocol.CodeIOError, "flush failed")
	if ts.stopped(100 * time.Millisecond) {
		t.Fatal("the server stopped although Shutdown failed")
	}
}

func TestWorkerGone(t *testing.T) {
	started := make(chan struct{})
	svc := &fakeService{run: func(ctx context.Context, _ protocol.RunRequest) (protocol.Result, error) {
		close(started)
		<-ctx.Done()
		return protocol.Result{}, ctx.Err()
	}}
	c, ts := pluginPair(t, svc)
	run, err := c.Start(ctxT(t), testRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	ts.srv.Stop() // the worker process dies
	_, err = run.Wait(ctxT(t))
	if code := protocol.CodeOf(err); code != protocol.CodeIOError && code != protocol.CodeInternalError {
		t.Fatalf("lost worker: %v", err)
	}
	_, _, err = c.Describe(ctxT(t))
	wantCode(t, err, protocol.CodeIOError, "unavailable")
}

// A maximal job spec (a verify job with an artifact near its cap) exceeds
// gRPC's default 4 MiB; the server's receive limit and the client's call
// options make room for it.
func TestLargeJobSpec(t *testing.T) {
	svc := &fakeService{run: func(_ context.Context, req protocol.RunRequest) (protocol.Result, error) {
		if _, err := protocol.ParseJobSpec(req.JobSpec); err != nil {
			return protocol.Result{}, err
		}
		return testResult(), nil
	}}
	c, _ := pluginPair(t, svc)
	artifact := make([]byte, 6<<20)
	spec := testSpec(t, protocol.OpVerify, artifact)
	run, err := c.Start(ctxT(t), protocol.RunRequest{JobSpec: spec, Attempt: 1, WorkDir: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Wait(ctxT(t)); err != nil {
		t.Fatal(err)
	}
}

// A result larger than gRPC's initial 64 KiB flow-control window reaches
// the client: the worker's server waits for window updates.
func TestLargeResult(t *testing.T) {
	want := testResult()
	want.Output = make([]uint64, 4096)
	for i := range want.Output {
		want.Output[i] = 18446744069414584320 - uint64(i)
	}
	svc := &fakeService{run: func(context.Context, protocol.RunRequest) (protocol.Result, error) { return want, nil }}
	c, _ := pluginPair(t, svc)
	for i := 0; i < 3; i++ {
		run, err := c.Start(ctxT(t), testRequest(t))
		if err != nil {
			t.Fatal(err)
		}
		res, err := run.Wait(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(res, want) {
			t.Fatal("the large result changed on the way")
		}
	}
}
