package api

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

func dial(t testing.TB, ts *testServer) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", ts.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByServer reports whether the server closed c (within a generous
// deadline), reading and discarding whatever it answered first.
func closedByServer(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := io.Copy(io.Discard, c)
	return err == nil // EOF
}

// At the cap, a newcomer takes the place of the connection that has waited
// longest without a request in progress.
func TestConnectionCapEvictsTheLongestWaiting(t *testing.T) {
	ts := startServer(t, Config{MaxConns: 8, HeaderTimeout: time.Hour})
	var slow []net.Conn
	for range 8 {
		c := dial(t, ts)
		// A request line and half a header, then nothing.
		if _, err := c.Write([]byte("GET /v1/jobs HTTP/1.1\r\nHo")); err != nil {
			t.Fatal(err)
		}
		slow = append(slow, c)
		waitFor(t, "the connection to be held", func() bool { return ts.srv.OpenConns() == len(slow) })
	}
	if _, err := ts.client.List(context.Background(), ""); err != nil {
		t.Fatalf("a prompt client at the cap: %v", err)
	}
	if !closedByServer(slow[0]) {
		t.Fatal("the longest waiting connection was not the one closed")
	}
	if n := ts.srv.Stats().Evicted.Load(); n != 1 {
		t.Fatalf("%d evicted, want 1", n)
	}
	if n := ts.srv.OpenConns(); n > 8 {
		t.Fatalf("%d connections held, cap 8", n)
	}
	// The others still hold their place and can finish their request.
	if _, err := slow[7].Write([]byte("st: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(slow[7]), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a slow client that finished: %v %v", resp, err)
	}
}

// With every connection in a request, a newcomer is answered busy.
func TestConnectionCapAnswersBusyWhenAllAreServed(t *testing.T) {
	ts := startServer(t, Config{MaxConns: 3, LongPoll: 3 * time.Second})
	ctx := context.Background()
	// A job that is never finished quickly: the poll on it waits.
	if _, err := ts.client.Submit(ctx, spinSpec(t, "spin"), 0, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job to run", func() bool {
		st, err := ts.client.Status(ctx, "spin")
		return err == nil && st.Job.State == "running"
	})
	// The client's kept-alive connection would be the one evicted.
	ts.client.http.CloseIdleConnections()
	waitFor(t, "the client's connection to close", func() bool { return ts.srv.OpenConns() == 0 })
	for range 3 {
		c := dial(t, ts)
		fmt.Fprintf(c, "GET /v1/jobs/spin/wait?seen=running HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	waitFor(t, "three polls in progress", func() bool { return ts.srv.OpenConns() == 3 })
	waitFor(t, "their headers to be in (StateActive: none waits)", func() bool {
		ts.srv.conns.mu.Lock()
		defer ts.srv.conns.mu.Unlock()
		return len(ts.srv.conns.conns) == 3 && ts.srv.conns.waiting.Len() == 0
	})
	resp, body := ts.request(t, http.MethodGet, "/v1/capabilities", nil)
	e := apiError(t, body)
	if resp.StatusCode != http.StatusServiceUnavailable || e.Code != protocol.CodeBusy || !e.Retryable {
		t.Fatalf("%d %s, want 503 busy", resp.StatusCode, body)
	}
	if ts.srv.Stats().Refused.Load() == 0 || ts.srv.Stats().Evicted.Load() != 0 {
		t.Fatalf("refused %d, evicted %d", ts.srv.Stats().Refused.Load(), ts.srv.Stats().Evicted.Load())
	}
	ts.client.Cancel(ctx, "spin", "")
}

// spinSpec is a job that runs for minutes unless cancelled: spin.nox of
// integration/testdata (F(n) = F(n-1) + F(n-1), 2^n calls) on n = 60.
func spinSpec(t testing.TB, id string) []byte {
	t.Helper()
	const f = "[4 [[9 [[0 3] [1 0]]] [[1 0] [5 [[2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]] [2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]]]]]]]"
	prog := "[2 [[3 [[1 " + f + "] [0 2]]] [1 " + f + "]]]"
	bundle, err := protocol.WrapNox(id, []byte(prog))
	if err != nil {
		t.Fatal(err)
	}
	js := protocol.JobSpec{Contract: protocol.ContractV1, JobID: id, Operation: protocol.OpExecute, Profile: protocol.ProfilePublicTrace,
		Program: protocol.ProgramSpec{Bundle: bundle}, Inputs: []uint64{60}, Limits: protocol.Limits{Reductions: 1 << 62}}
	b, err := js.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHeaderBodyAndIdleTimeouts(t *testing.T) {
	ts := startServer(t, Config{HeaderTimeout: 200 * time.Millisecond, BodyTimeout: 200 * time.Millisecond, IdleTimeout: 200 * time.Millisecond})
	// Nothing sent, and half a header: closed after the header timeout.
	silent := dial(t, ts)
	half := dial(t, ts)
	half.Write([]byte("GET /v1/jobs HTTP/1.1\r\nHost: x\r\n"))
	for name, c := range map[string]net.Conn{"silent": silent, "half a header": half} {
		if !closedByServer(c) {
			t.Errorf("%s: not closed", name)
		}
	}
	// A body that stops: answered invalid_job once the body timeout passes.
	c := dial(t, ts)
	c.Write([]byte("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"spec\":"))
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if e := apiError(t, body); resp.StatusCode != http.StatusBadRequest || !strings.Contains(e.Message, "sent too slowly") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	// An idle kept-alive connection is closed after the idle timeout.
	idle := dial(t, ts)
	idle.Write([]byte("GET /v1/capabilities HTTP/1.1\r\nHost: x\r\n\r\n"))
	br := bufio.NewReader(idle)
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatal(resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	idle.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection: %v, want EOF", err)
	}
	waitFor(t, "no connection held", func() bool { return ts.srv.OpenConns() == 0 })
}

// Bodies beyond the per-request allowance share a budget; a large body
// waits for it without holding any, and small submissions never wait.
func TestBodyBudget(t *testing.T) {
	ts := startServer(t, Config{BodyBudget: protocol.MaxSubmissionBytes, BodyTimeout: 2 * time.Second})
	free := func() int64 {
		ts.srv.budget.mu.Lock()
		defer ts.srv.budget.mu.Unlock()
		return ts.srv.budget.free
	}
	// A maximal submission that sends its headers and nothing more holds
	// the whole budget until its body times out.
	hog := dial(t, ts)
	fmt.Fprintf(hog, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", protocol.MaxSubmissionBytes)
	waitFor(t, "the hog to hold the budget", func() bool { return free() <= BodyAllowance })
	// A small submission goes through at once.
	if _, err := ts.client.Submit(context.Background(), spec(t, "small", 1, 1), 0, nil); err != nil {
		t.Fatalf("small submission during the hog: %v", err)
	}
	// A large one waits until the hog's body times out, then goes through.
	big := append([]byte(`{"spec":`), spec(t, "big", 1, 1)...)
	big = append(big, bytes.Repeat([]byte(" "), 1<<20)...)
	big = append(big, '}')
	answered := make(chan int, 1)
	go func() {
		resp, body := ts.request(t, http.MethodPost, "/v1/jobs", big)
		if resp.StatusCode != http.StatusCreated {
			t.Errorf("large submission after the hog: %d %s", resp.StatusCode, body)
		}
		answered <- resp.StatusCode
	}()
	select {
	case <-answered:
		t.Fatal("the large submission did not wait for the budget")
	case <-time.After(300 * time.Millisecond):
	}
	if !closedByServer(hog) {
		t.Fatal("the hog was not closed")
	}
	<-answered
	waitFor(t, "the budget to return", func() bool { return free() == protocol.MaxSubmissionBytes })
	// A wait for budget that ends with the body timeout is busy.
	if e := protocol.AsError(bodyError(context.DeadlineExceeded, 1)); e.Code != protocol.CodeBusy || !e.Retryable {
		t.Fatalf("%+v", e)
	}
}

func TestConfigValidated(t *testing.T) {
	for _, c := range []Config{
		{MaxConns: -1}, {MaxConns: 1 << 30}, {HeaderTimeout: -time.Second}, {BodyTimeout: 2 * time.Hour},
		{IdleTimeout: time.Microsecond}, {WriteTimeout: -1}, {BodyBudget: 1 << 20},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: accepted", c)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}
