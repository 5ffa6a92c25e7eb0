package integration

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
)

// TestWaitUntilEnd: ?until=end answers once, with the final state, and a
// bad until is a clean invalid_job (400) that changes nothing.
func TestWaitUntilEnd(t *testing.T) {
	requireIsolation(t)
	d := startDaemon(t, newHome(t), 1)
	defer d.stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	spec := jobSpec(t, "wait-end", protocol.OpExecute, "[5 [[0 2] [0 6]]]", []uint64{3, 5}, protocol.Limits{Reductions: 100})
	if _, err := d.client.Submit(ctx, spec, 0, nil); err != nil {
		t.Fatal(err)
	}
	st, err := d.client.WaitEnd(ctx, "wait-end")
	if err != nil {
		t.Fatal(err)
	}
	if st.Job.State != "accepted" {
		t.Fatalf("state %s, want accepted", st.Job.State)
	}

	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", supervisor.SocketPath(d.home))
	}}}
	res, err := hc.Get("http://supervisor/v1/jobs/wait-end/wait?until=soon")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var eb struct {
		Error protocol.Error `json:"error"`
	}
	if res.StatusCode != http.StatusBadRequest || json.Unmarshal(body, &eb) != nil || eb.Error.Code != protocol.CodeInvalidJob {
		t.Errorf("until=soon: %d %s, want 400 invalid_job", res.StatusCode, body)
	}
}
