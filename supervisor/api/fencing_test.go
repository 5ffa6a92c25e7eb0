package api

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestFencingRoutesAreStrict: the fencing routes read their requests as
// strictly as the job routes, and answer refusals with their contract
// codes and statuses.
func TestFencingRoutesAreStrict(t *testing.T) {
	ts := startServer(t, Config{})
	ctx := context.Background()
	if _, err := ts.client.InitNeuron(ctx, "testnet"); err != nil {
		t.Fatal(err)
	}
	hex := strings.Repeat("ab", 32)
	cases := []struct {
		method, target string
		body           string
		status         int
		want           string
	}{
		{"POST", "/v1/neuron", `{"network":"testnet"}`, 409, "stale_state"},
		{"POST", "/v1/neuron", `{"network":"a","network":"b"}`, 400, "given twice"},
		{"POST", "/v1/neuron", `{"network":"a","color":1}`, 400, "unknown field"},
		{"POST", "/v1/neuron", `{"network":"a"} {}`, 400, "after the object"},
		{"GET", "/v1/neuron?x=1", "", 400, "unknown query parameter"},
		{"GET", "/v1/neuron", "x", 400, "takes no request body"},
		{"PUT", "/v1/grant", `{"revision":"5","acts":[]}`, 409, "revision 0, not 5"},
		{"PUT", "/v1/grant", `{"revision":"0","acts":["nope"]}`, 400, "no such act"},
		{"PUT", "/v1/grant", `{"revision":0,"acts":[]}`, 400, "request body"},
		{"POST", "/v1/placement/bind", `{"generation":"0"}`, 409, "generation 1, not 0"},
		{"GET", "/v1/progs/xyz", "", 400, "prog id"},
		{"GET", "/v1/progs/" + hex, "", 404, "missing"},
		{"POST", "/v1/progs/" + hex + "/pause", "", 404, "missing"},
		{"GET", "/v1/invocations/" + hex + "/wait", "", 404, "missing"},
		{"POST", "/v1/invocations", `{"prog":"` + hex + `","inputs":[]}`, 404, "missing"},
		{"GET", "/v1/operations?invocation=zz", "", 400, "invocation id"},
		{"POST", "/v1/operations/" + hex + "/reconcile", `{"attempt":1}`, 400, "exactly one"},
		{"POST", "/v1/operations/" + hex + "/reconcile", `{"attempt":1,"value":"7"}`, 404, "missing"},
		{"POST", "/v1/progs", `{"bundle":{},"acts":[]}`, 400, "invalid_job"},
		{"DELETE", "/v1/grant", "", 405, "the route takes"},
	}
	for _, c := range cases {
		var body []byte
		if c.body != "" {
			body = []byte(c.body)
		}
		resp, rb := ts.request(t, c.method, c.target, body)
		e := apiError(t, rb)
		if resp.StatusCode != c.status || !answerable(e.Code) || !strings.Contains(string(e.Code)+": "+e.Message, c.want) {
			t.Errorf("%s %s: %d %s, want %d with %q", c.method, c.target, resp.StatusCode, rb, c.status, c.want)
		}
	}
	acts, err := ts.client.Acts(ctx)
	if err != nil || len(acts) != 2 || acts[0].Name != "emit" || acts[1].Hex != "0xac75000000000006" {
		t.Fatalf("acts %+v %v", acts, err)
	}
}

// TestInvokeIsSentOnce: a daemon that reads a request and closes the
// connection without answering gets a read again (the client retries
// it) but an invoke only once, since each invoke makes an invocation.
func TestInvokeIsSentOnce(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	seen := map[string]int{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			req, err := http.ReadRequest(bufio.NewReader(c))
			if err == nil {
				mu.Lock()
				seen[req.Method+" "+req.URL.Path]++
				mu.Unlock()
			}
			c.Close()
		}
	}()
	cl := NewClient(sock)
	ctx := context.Background()
	if _, err := cl.Invoke(ctx, "p", nil); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("invoke: %v", err)
	}
	if _, err := cl.Invocations(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("list: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := seen["POST /v1/invocations"]; n != 1 {
		t.Errorf("invoke sent %d times, want 1", n)
	}
	if n := seen["GET /v1/invocations"]; n != sendTries {
		t.Errorf("list sent %d times, want %d", n, sendTries)
	}
}
