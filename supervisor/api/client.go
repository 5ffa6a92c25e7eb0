package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

// ErrUnavailable: no daemon answers on the socket.
var ErrUnavailable = errors.New("supervisor daemon unavailable")

// Client talks to a daemon's socket.
type Client struct {
	http *http.Client
}

// NewClient for the socket at path.
func NewClient(path string) *Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	return &Client{http: &http.Client{Transport: tr}}
}

// do sends a request and decodes a 2xx reply into out; an error reply
// becomes a *protocol.Error (API codes busy/unknown_job included).
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	_, err := c.doHeader(ctx, method, path, body, out)
	return err
}

// doOnce is do for a request that is not safe to repeat (POST
// /v1/invocations makes a new invocation each time): it is sent once, and
// a connection the daemon closed before answering is ErrUnavailable, with
// the request's fate unknown to the caller.
func (c *Client) doOnce(ctx context.Context, method, path string, body, out any) error {
	_, err := c.doTries(ctx, 1, method, path, body, out)
	return err
}

// doHeader is do that also returns the reply's headers.
func (c *Client) doHeader(ctx context.Context, method, path string, body, out any) (http.Header, error) {
	return c.doTries(ctx, sendTries, method, path, body, out)
}

// doTries is doHeader with at most tries tries (see send).
func (c *Client) doTries(ctx context.Context, tries int, method, path string, body, out any) (http.Header, error) {
	var payload []byte
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		payload = b
	}
	resp, err := c.send(ctx, tries, method, path, payload, body != nil)
	if err != nil {
		return nil, unavailable(ctx, method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, protocol.MaxJobSpecBytes))
	if err != nil {
		return nil, unavailable(ctx, method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return resp.Header, errorReply(resp.Status, raw)
	}
	if out == nil {
		return resp.Header, nil
	}
	if p, ok := out.(*[]byte); ok {
		*p = raw
		return resp.Header, nil
	}
	return resp.Header, json.Unmarshal(raw, out)
}

// unavailable is the error of a request that got no answer: the
// caller's own context's end when that is why (a signal is not a daemon
// gone), else ErrUnavailable.
func unavailable(ctx context.Context, method, path string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%s %s: %w", method, path, cerr)
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}

// sendTries bounds the tries of one request whose connection the daemon
// closed before answering (see send).
const sendTries = 3

// send makes one request, again when the daemon closed the connection
// before it sent anything back: a daemon at its connection cap closes
// the connection that has waited longest without a request in progress,
// which on a loaded host can be a new one whose request it has not read
// yet. Every route of the API but one is safe to repeat: reads change
// nothing, a submission of the same job is the same job, a cancel of a
// cancelled job changes nothing, a second neuron init, grant, placement
// move, prog install, take or reconcile of the same thing is the same
// thing or a refusal. The exception is POST /v1/invocations, which makes
// a new invocation each time: it goes through doOnce (tries 1), since a
// connection closed before the answer does not prove the daemon never
// read the request.
func (c *Client) send(ctx context.Context, tries int, method, path string, payload []byte, hasBody bool) (*http.Response, error) {
	for try := 1; ; try++ {
		var rd io.Reader
		if hasBody {
			rd = bytes.NewReader(payload)
		}
		req, err := http.NewRequestWithContext(ctx, method, "http://supervisor"+path, rd)
		if err != nil {
			return nil, err
		}
		resp, err := c.http.Do(req)
		if err == nil || try >= tries || !closedBeforeAnswer(err) {
			return resp, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Duration(try*try) * 20 * time.Millisecond):
		}
	}
}

// closedBeforeAnswer: the connection broke before any byte of an answer.
// net.ErrClosed ("use of closed network connection") is the form the
// transport gives when its write of the request failed on a connection
// the daemon had closed and it closed its end under its own pending read:
// the read reports the close, not the daemon's.
func closedBeforeAnswer(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), serverClosedIdle)
}

// serverClosedIdle is the text of the error net/http's transport gives
// when the server closed a connection before the request was written on
// it: the daemon at its cap evicting a new connection it had not read
// from yet (in CI's slow-client storm). The error is unexported, and the
// transport retries it only on a connection used before, never on a
// fresh one, so send matches its text.
const serverClosedIdle = "server closed idle connection"

// errorReply is the error an error reply's body carries.
func errorReply(status string, raw []byte) error {
	var eb ErrorBody
	if json.Unmarshal(raw, &eb) == nil && eb.Error != nil {
		return eb.Error
	}
	return fmt.Errorf("supervisor answered %s", status)
}

// replyError reads an error reply (bounded).
func (c *Client) replyError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, protocol.MaxErrorBytes))
	return errorReply(resp.Status, raw)
}

func (c *Client) Submit(ctx context.Context, spec []byte, priority int32, retry *apitypes.RetryRequest) (*apitypes.SubmitReply, error) {
	var r apitypes.SubmitReply
	err := c.do(ctx, http.MethodPost, "/v1/jobs", apitypes.SubmitRequest{Spec: spec, Priority: priority, Retry: retry}, &r)
	return &r, err
}

func (c *Client) Status(ctx context.Context, id string) (*apitypes.JobStatus, error) {
	var st apitypes.JobStatus
	err := c.do(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(id), nil, &st)
	return &st, err
}

// List returns every job (in state, unless it is ""), following the
// server's pages.
func (c *Client) List(ctx context.Context, state string) ([]apitypes.Job, error) {
	var all []apitypes.Job
	after := ""
	for {
		q := url.Values{}
		if state != "" {
			q.Set("state", state)
		}
		if after != "" {
			q.Set("after", after)
		}
		path := "/v1/jobs"
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		var page []apitypes.Job
		h, err := c.doHeader(ctx, http.MethodGet, path, nil, &page)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		next := h.Get(NextPageHeader)
		if next == "" || next == after {
			return all, nil
		}
		after = next
	}
}

// ListLast returns the n most recently submitted jobs (in state, unless
// it is ""), oldest first: one page, in submission order.
func (c *Client) ListLast(ctx context.Context, state string, n int) ([]apitypes.Job, error) {
	q := url.Values{"last": {strconv.Itoa(n)}}
	if state != "" {
		q.Set("state", state)
	}
	var jobs []apitypes.Job
	err := c.do(ctx, http.MethodGet, "/v1/jobs?"+q.Encode(), nil, &jobs)
	return jobs, err
}

func (c *Client) Cancel(ctx context.Context, id, reason string) (*apitypes.CancelReply, error) {
	var st apitypes.CancelReply
	path := "/v1/jobs/" + url.PathEscape(id) + "/cancel"
	if reason != "" {
		path += "?reason=" + url.QueryEscape(reason)
	}
	err := c.do(ctx, http.MethodPost, path, nil, &st)
	return &st, err
}

// Resolve resolves the job's unknown attempt n as (store.ResolveRetry or
// store.ResolveCancel), with an optional reason.
func (c *Client) Resolve(ctx context.Context, id string, n uint32, as, reason string) (*apitypes.ResolveReply, error) {
	var st apitypes.ResolveReply
	q := url.Values{"attempt": {strconv.FormatUint(uint64(n), 10)}, "as": {as}}
	if reason != "" {
		q.Set("reason", reason)
	}
	err := c.do(ctx, http.MethodPost, "/v1/jobs/"+url.PathEscape(id)+"/resolve?"+q.Encode(), nil, &st)
	return &st, err
}

// EndedError is the error a job ended with, as Result answers it: the
// job's own outcome, not a failure of the request (it unwraps to the
// job's *protocol.Error).
type EndedError struct{ Err *protocol.Error }

func (e *EndedError) Error() string { return e.Err.Error() }
func (e *EndedError) Unwrap() error { return e.Err }

// Result returns the accepted result's JSON, or the job's error (an
// *EndedError).
func (c *Client) Result(ctx context.Context, id string) ([]byte, error) {
	var raw []byte
	if err := c.do(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(id)+"/result", nil, &raw); err != nil {
		return nil, err
	}
	var eb ErrorBody
	if json.Unmarshal(raw, &eb) == nil && eb.Error != nil {
		return nil, &EndedError{Err: eb.Error}
	}
	return raw, nil
}

func (c *Client) Events(ctx context.Context, id string) ([]apitypes.Event, error) {
	var ev []apitypes.Event
	err := c.do(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(id)+"/events", nil, &ev)
	return ev, err
}

// EventsAfter returns the job's events with a seq above after; with wait
// it long-polls until there are some or the job has ended (or the
// server's poll bound passes, with none).
func (c *Client) EventsAfter(ctx context.Context, id string, after uint64, wait bool) ([]apitypes.Event, error) {
	var ev []apitypes.Event
	path := "/v1/jobs/" + url.PathEscape(id) + "/events?after=" + strconv.FormatUint(after, 10)
	if wait {
		path += "&wait=1"
	}
	err := c.do(ctx, http.MethodGet, path, nil, &ev)
	return ev, err
}

// GC removes ended jobs that ended at least olderThan ago, in state (""
// every ended state but unknown).
func (c *Client) GC(ctx context.Context, olderThan time.Duration, state string) (*apitypes.GCReport, error) {
	q := url.Values{"older_than": {olderThan.String()}}
	if state != "" {
		q.Set("state", state)
	}
	var rep apitypes.GCReport
	err := c.do(ctx, http.MethodPost, "/v1/gc?"+q.Encode(), nil, &rep)
	return &rep, err
}

func (c *Client) Capabilities(ctx context.Context) (json.RawMessage, error) {
	var raw []byte
	err := c.do(ctx, http.MethodGet, "/v1/capabilities", nil, &raw)
	return raw, err
}

func (c *Client) Metrics(ctx context.Context) ([]byte, error) {
	var raw []byte
	err := c.do(ctx, http.MethodGet, "/metrics", nil, &raw)
	return raw, err
}

// WaitEnd blocks until the job has ended (long polls of up to 30 s each)
// and returns its final status.
func (c *Client) WaitEnd(ctx context.Context, id string) (*apitypes.JobStatus, error) {
	for {
		var st apitypes.JobStatus
		if err := c.do(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(id)+"/wait?until=end", nil, &st); err != nil {
			return nil, err
		}
		if st.Job.State.Terminal() {
			return &st, nil
		}
	}
}

// Wait long-polls until the job leaves state seen (empty: answers at
// once) or has ended, or the server's poll bound passes; callers loop.
func (c *Client) Wait(ctx context.Context, id, seen string) (*apitypes.JobStatus, error) {
	var st apitypes.JobStatus
	path := "/v1/jobs/" + url.PathEscape(id) + "/wait"
	if seen != "" {
		path += "?seen=" + url.QueryEscape(seen)
	}
	err := c.do(ctx, http.MethodGet, path, nil, &st)
	return &st, err
}

// Drain starts the daemon's drain with this deadline (see
// supervisor.Drain), or shortens the one under way.
func (c *Client) Drain(ctx context.Context, timeout time.Duration) (*apitypes.DrainStatus, error) {
	var st apitypes.DrainStatus
	err := c.do(ctx, http.MethodPost, "/v1/drain?timeout="+url.QueryEscape(timeout.String()), nil, &st)
	return &st, err
}

// DrainStatus says where the daemon's drain stands; with running ≥ 0 it
// waits (a long poll) until the drain is done or that many attempts no
// longer run.
func (c *Client) DrainStatus(ctx context.Context, running int) (*apitypes.DrainStatus, error) {
	var st apitypes.DrainStatus
	path := "/v1/drain"
	if running >= 0 {
		path += "?running=" + strconv.Itoa(running)
	}
	err := c.do(ctx, http.MethodGet, path, nil, &st)
	return &st, err
}
