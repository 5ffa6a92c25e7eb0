package api

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
)

// The API served in process (NewInProcess through NewHandlerClient)
// answers exactly as the daemon's socket does: the same status, headers
// that matter and bytes, answers and errors alike.
func TestInProcessAnswersAsTheSocket(t *testing.T) {
	ts := startServer(t, Config{})
	ctx := context.Background()
	if _, err := ts.client.Submit(ctx, spec(t, "p1", 1, 2), 0, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.client.WaitEnd(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	in, err := NewInProcess(ts.sup, nil, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	inClient := &http.Client{Transport: handlerTransport{h: in}}
	for _, c := range []struct{ method, target string }{
		{"GET", "/v1/jobs"}, {"GET", "/v1/jobs/p1"}, {"GET", "/v1/jobs/p1/result"}, {"GET", "/v1/jobs/p1/events"},
		{"GET", "/v1/jobs/nosuch"}, {"GET", "/v1/jobs?state=nope"}, {"GET", "/v1/capabilities"}, {"GET", "/v1/neuron"},
		{"GET", "/v1/invocations"}, {"GET", "/v1/operations"}, {"DELETE", "/v1/jobs/p1"}, {"GET", "/v1/nothing"},
		{"HEAD", "/v1/jobs/p1"},
	} {
		resp, want := ts.request(t, c.method, c.target, nil)
		req, _ := http.NewRequestWithContext(ctx, c.method, "http://supervisor"+c.target, nil)
		got, err := inClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s in process: %v", c.method, c.target, err)
		}
		body, _ := io.ReadAll(got.Body)
		got.Body.Close()
		if got.StatusCode != resp.StatusCode || !bytes.Equal(body, want) || got.Header.Get("Content-Type") != resp.Header.Get("Content-Type") ||
			got.Header.Get("Allow") != resp.Header.Get("Allow") {
			t.Errorf("%s %s: in process %d %q %s, the socket %d %q %s", c.method, c.target, got.StatusCode, got.Header.Get("Content-Type"), body,
				resp.StatusCode, resp.Header.Get("Content-Type"), want)
		}
	}
	// The client's own paths: a reply and an error, decoded alike.
	hc := NewHandlerClient(in)
	st, err := hc.Status(ctx, "p1")
	if err != nil || st.Job.JobID != "p1" || st.Job.State != "accepted" {
		t.Fatalf("status in process: %+v %v", st, err)
	}
	if _, err := hc.Status(ctx, "nosuch"); err == nil || err.Error() != `unknown_job: unknown job: "nosuch"` {
		t.Fatalf("an unknown job in process: %v", err)
	}
}
