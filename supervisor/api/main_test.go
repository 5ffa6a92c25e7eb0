package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/testbin"
	"github.com/cyberia-to/cyber-supervisor/internal/testenv"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
)

var (
	workerBin   string
	serverCount atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "api-test-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	workerBin = filepath.Join(dir, "nox-worker")
	for bin, pkg := range map[string]string{workerBin: "./cmd/nox-worker", filepath.Join(dir, "sandbox-gate"): "./cmd/sandbox-gate"} {
		if err := testbin.Build(root, pkg, bin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	code := m.Run()
	// Last in, first out, as testing runs them.
	for i := len(processCleanups) - 1; i >= 0; i-- {
		processCleanups[i]()
	}
	return code
}

// processCleanups are the cleanups of what lives as long as the process
// (the fuzz target's server).
var processCleanups []func()

// testServer is the real API server in front of a real supervisor (real
// store, real launcher with unisolated nox-worker processes) on a unix
// socket in a temporary home.
type testServer struct {
	sup    *supervisor.Supervisor
	srv    *Server
	sock   string
	client *Client
	logs   *testenv.Buffer
}

func startServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	ctx := context.Background()
	home := t.TempDir()
	logs := &testenv.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// A parent cgroup of the test's own, removed at the end (every boot of
	// a home shares it, so the supervisor leaves it).
	cgroup := fmt.Sprintf("cyber-api-test-%d-%d", os.Getpid(), serverCount.Add(1))
	l, err := launch.New(ctx, launch.Config{WorkerPath: workerBin, Home: home, Isolation: launch.IsolationOff, Logger: log, CgroupName: cgroup})
	if err != nil {
		t.Fatal(err)
	}
	sup, err := supervisor.Open(ctx, supervisor.Config{Home: home, Slots: 1, QueueLimit: 64, Launcher: l, Logger: log})
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	sup.Start()
	// A short socket path: sun_path holds 108 bytes.
	sockDir, err := os.MkdirTemp("", "api")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(sockDir, "s")
	srv, err := Listen(sup, sock, log, cfg)
	if err != nil {
		sup.Close(ctx)
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		<-served
		sup.Close(context.Background())
		os.RemoveAll(sockDir)
		for _, pattern := range []string{"/sys/fs/cgroup/*/" + cgroup, "/sys/fs/cgroup/*/*/*/" + cgroup} {
			dirs, _ := filepath.Glob(pattern)
			for _, d := range dirs {
				os.Remove(d)
			}
		}
		if n := srv.Stats().Panics.Load(); n > 0 {
			t.Errorf("%d handler panics:\n%s", n, logs)
		}
	})
	return &testServer{sup: sup, srv: srv, sock: sock, client: NewClient(sock), logs: logs}
}

// exchange sends raw request bytes on a new connection and reads one
// answer.
func (ts *testServer) exchange(t testing.TB, raw []byte) (*http.Response, []byte, error) {
	return ts.exchangeAs(t, raw, http.MethodGet)
}

// exchangeAs is exchange for a request of the given method (a HEAD answer
// has no body whatever its headers say).
func (ts *testServer) exchangeAs(t testing.TB, raw []byte, method string) (*http.Response, []byte, error) {
	t.Helper()
	c, err := net.Dial("unix", ts.sock)
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	// The request is written while the answer is read: a server that
	// answers before reading everything must not deadlock the test.
	go c.Write(raw)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp, body, err
}

// request sends one well-formed request.
func (ts *testServer) request(t testing.TB, method, target string, body []byte) (*http.Response, []byte) {
	t.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: supervisor\r\nConnection: close\r\n", method, target)
	if body != nil {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	b.Write(body)
	resp, rb, err := ts.exchange(t, b.Bytes())
	if err != nil {
		t.Fatalf("%s %.80s: %v", method, target, err)
	}
	return resp, rb
}

// apiError decodes an error answer, failing unless it is one.
func apiError(t testing.TB, body []byte) *protocol.Error {
	t.Helper()
	var eb ErrorBody
	if err := json.Unmarshal(body, &eb); err != nil || eb.Error == nil {
		t.Fatalf("not an error answer: %.200q (%v)", body, err)
	}
	return eb.Error
}

// answerable reports whether c is a code an answer of the API may carry:
// the contract's or the API's own, not the CLI's.
func answerable(c protocol.Code) bool {
	s, ok := protocol.LookupCode(c)
	return ok && s.Scope != protocol.ScopeCLI
}

const add2 = "[5 [[0 2] [0 6]]]"

// spec encodes an execute job spec.
func spec(t testing.TB, id string, inputs ...uint64) []byte {
	t.Helper()
	bundle, err := protocol.WrapNox(id, []byte(add2))
	if err != nil {
		t.Fatal(err)
	}
	js := protocol.JobSpec{Contract: protocol.ContractV1, JobID: id, Operation: protocol.OpExecute, Profile: protocol.ProfilePublicTrace,
		Program: protocol.ProgramSpec{Bundle: bundle}, Inputs: inputs, Limits: protocol.Limits{Reductions: 1000}}
	b, err := js.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jobCount(t testing.TB, ts *testServer) int {
	t.Helper()
	jobs, err := ts.client.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return len(jobs)
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
