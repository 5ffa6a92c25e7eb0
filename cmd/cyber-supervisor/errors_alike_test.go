package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// apiAnswer is one answer of the daemon's API, asked directly.
type apiAnswer struct {
	status int
	err    *protocol.Error // the error body's, or the job's error a result answer carries
	raw    []byte
}

// apiOf asks the daemon of home over its socket.
func apiOf(t *testing.T, home string) func(method, target string, body []byte) apiAnswer {
	sock := filepath.Join(home, "supervisor.sock")
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	t.Cleanup(client.CloseIdleConnections)
	return func(method, target string, body []byte) apiAnswer {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, "http://supervisor"+target, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body == nil {
			req.Body, req.ContentLength = nil, 0
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, target, err)
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		var eb struct {
			Error *protocol.Error `json:"error"`
		}
		json.Unmarshal(raw, &eb)
		return apiAnswer{status: resp.StatusCode, err: eb.Error, raw: raw}
	}
}

// cliAnswer is one run of the CLI with --format json.
type cliAnswer struct {
	exit int
	err  *protocol.Error
}

func cliOf(t *testing.T, home string, args ...string) cliAnswer {
	t.Helper()
	r := cli(t, append([]string{"--home", home, "--format", "json"}, args...)...)
	return cliAnswer{exit: r.code, err: envelope(t, r.stdout).Error}
}

// submission is the body of POST /v1/jobs: add.nox executed with the
// limits given.
func submission(t *testing.T, id string, limits protocol.Limits) []byte {
	t.Helper()
	bundle, err := protocol.WrapNox(id, []byte(add))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := protocol.JobSpec{Contract: protocol.ContractV1, JobID: id, Operation: protocol.OpExecute, Profile: protocol.ProfilePublicTrace,
		Program: protocol.ProgramSpec{Bundle: bundle}, Inputs: []uint64{3, 5}, Limits: limits}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return []byte(`{"spec":` + string(spec) + `}`)
}

// example is the path of examples/name.
func example(name string) string { return filepath.Join(repoRoot, "examples", name) }

// TestErrorsMapAlikeThroughAPIAndCLI: real errors, each caused once
// through the daemon's API and once through the CLI, carry one code,
// and that code's row of the error table (docs/errors.md) decides the
// rest: the HTTP status of a request the API refused (unless the table's
// documented refinements say more: a fencing refusal of a missing
// record is 404), the CLI's exit status and the retry hint, the same on
// both sides. A job's failure is a 200 answer of its result whose body is
// the job's error, the same error the CLI reports.
func TestErrorsMapAlikeThroughAPIAndCLI(t *testing.T) {
	home := t.TempDir()
	serveBin(t, home, "--queue", "1", "--max-memory", "64MiB")
	api := apiOf(t, home)

	row := func(c protocol.Code) protocol.CodeSpec {
		t.Helper()
		s, ok := protocol.LookupCode(c)
		if !ok {
			t.Fatalf("%s: not in the table", c)
		}
		return s
	}
	// refused: a request the API refused, and the CLI's run that asked
	// the same. status 0 is the code's own.
	refused := func(what string, code protocol.Code, status int, a apiAnswer, c cliAnswer) {
		t.Helper()
		s := row(code)
		if status == 0 {
			status = s.HTTP
		}
		if a.err == nil || a.err.Code != code || a.status != status || a.err.Retryable != s.Retryable {
			t.Errorf("%s: the API answered %d %s, want %d with %s (retryable %v)", what, a.status, a.raw, status, code, s.Retryable)
		}
		if c.err == nil || c.err.Code != code || c.exit != s.Exit || c.err.Retryable != s.Retryable {
			t.Errorf("%s: the CLI exited %d with %+v, want %d with %s (retryable %v)", what, c.exit, c.err, s.Exit, code, s.Retryable)
		}
	}
	// failed: job id ended with code (submit --wait); its result through
	// the API is the same error. retryable is the code's, but where the
	// job's error says more (docs/errors.md).
	failed := func(id string, code protocol.Code, retryable bool, args ...string) {
		t.Helper()
		s := row(code)
		c := cliOf(t, home, append([]string{"submit", "--wait", "--job-id", id}, args...)...)
		a := api("GET", "/v1/jobs/"+id+"/result", nil)
		if c.err == nil || c.err.Code != code || c.exit != s.Exit || c.err.Retryable != retryable {
			t.Errorf("job %s: the CLI exited %d with %+v, want %d with %s (retryable %v)", id, c.exit, c.err, s.Exit, code, retryable)
		}
		if a.status != http.StatusOK || a.err == nil || c.err == nil || *a.err != *c.err {
			t.Errorf("job %s: the API answered %d %s, want 200 with the CLI's %+v", id, a.status, a.raw, c.err)
		}
	}

	// Job failures.
	failed("budget", protocol.CodeBudgetExhausted, false, example("countdown.nox"), "--input-values", "300", "--budget", "10")
	failed("axis", protocol.CodeExecutionFailed, false, example("add.nox"), "--input-values", "3")
	failed("deadline", protocol.CodeDeadlineExceeded, true, example("doubling.nox"), "--input-values", "200",
		"--budget", "18446744069414584320", "--time", "300ms")
	// An unisolated worker's memory is bounded by its own guard, which
	// decides memory_exhausted deterministically: not retryable.
	failed("grow", protocol.CodeMemoryExhausted, false, example("grow.nox"), "--input-values", "40",
		"--memory", "32MiB", "--budget", "1000000000000")
	look := writeFile(t, t.TempDir(), "look.nox", "[17 [0 1]]")
	failed("look", protocol.CodeUnsupportedState, false, look)

	// Requests refused.
	refused("a malformed job id", protocol.CodeInvalidJob, 0,
		api("GET", "/v1/jobs/.hidden", nil), cliOf(t, home, "status", ".hidden"))
	refused("an unknown job", protocol.CodeUnknownJob, 0,
		api("GET", "/v1/jobs/nosuch", nil), cliOf(t, home, "status", "nosuch"))
	refused("a limit over the ceiling", protocol.CodeUnsupportedLimit, 0,
		api("POST", "/v1/jobs", submission(t, "big", protocol.Limits{Reductions: 1000, MemoryBytes: 128 << 20})),
		cliOf(t, home, "submit", example("add.nox"), "--input-values", "3,5", "--memory", "128MiB"))
	hex := strings.Repeat("ab", 32)
	refused("a missing prog", protocol.CodeInvalidJob, http.StatusNotFound,
		api("GET", "/v1/progs/"+hex, nil), cliOf(t, home, "prog", "show", hex))
	if c := cliOf(t, home, "neuron", "init", "--network", "testnet"); c.exit != 0 {
		t.Fatalf("neuron init: exit %d %+v", c.exit, c.err)
	}
	refused("a stale grant revision", protocol.CodeStaleState, 0,
		api("PUT", "/v1/grant", []byte(`{"revision":"5","acts":["emit"]}`)), cliOf(t, home, "grant", "set", "--revision", "5", "--acts", "emit"))
	if c := cliOf(t, home, "grant", "set", "--revision", "0", "--acts", "emit", "--disabled"); c.exit != 0 {
		t.Fatalf("grant set: exit %d %+v", c.exit, c.err)
	}
	bundle, err := protocol.WrapNox("add", []byte(add))
	if err != nil {
		t.Fatal(err)
	}
	refused("a disabled grant", protocol.CodeClaimMismatch, 0,
		api("POST", "/v1/progs", []byte(`{"bundle":`+string(bundle)+`,"acts":["emit"]}`)), cliOf(t, home, "prog", "install", example("add.nox"), "--acts", "emit"))

	// A job that runs until cancelled holds the one slot.
	if c := cliOf(t, home, "submit", "--job-id", "long", example("doubling.nox"), "--input-values", "200",
		"--budget", "18446744069414584320", "--time", "10m"); c.exit != 0 {
		t.Fatalf("submit long: exit %d %+v", c.exit, c.err)
	}
	waitFor(t, "the long job to run", func() bool {
		a := api("GET", "/v1/jobs/long", nil)
		var st struct {
			Job struct {
				State string `json:"state"`
			} `json:"job"`
		}
		return a.status == http.StatusOK && json.Unmarshal(a.raw, &st) == nil && st.Job.State == "running"
	})
	refused("a result not there yet", protocol.CodeNotFinished, 0,
		api("GET", "/v1/jobs/long/result", nil), cliOf(t, home, "result", "long"))
	refused("a resolution of a job that is not unknown", protocol.CodeStaleState, 0,
		api("POST", "/v1/jobs/long/resolve?attempt=1&as=retry", nil), cliOf(t, home, "resolve", "long", "--attempt", "1", "--retry"))
	// The queue holds one job: the first submission waits in it, the next
	// one finds no room.
	full := api("POST", "/v1/jobs", submission(t, "queued", protocol.Limits{Reductions: 1000}))
	if full.status != http.StatusCreated {
		t.Fatalf("submit queued: %d %s", full.status, full.raw)
	}
	refused("a full queue", protocol.CodeBusy, 0,
		api("POST", "/v1/jobs", submission(t, "one-more", protocol.Limits{Reductions: 1000})),
		cliOf(t, home, "submit", example("add.nox"), "--input-values", "3,5"))

	// A job cancelled by another command: its result is exit 1, not
	// 130 (docs/errors.md).
	for _, id := range []string{"long", "queued"} {
		if c := cliOf(t, home, "cancel", id); c.exit != 0 {
			t.Fatalf("cancel %s: exit %d %+v", id, c.exit, c.err)
		}
	}
	waitFor(t, "the long job to end", func() bool { return api("GET", "/v1/jobs/long/result", nil).status == http.StatusOK })
	a, c := api("GET", "/v1/jobs/long/result", nil), cliOf(t, home, "result", "long")
	if a.err == nil || a.err.Code != protocol.CodeCancelled || c.err == nil || *c.err != *a.err || c.exit != protocol.ExitFailed {
		t.Errorf("result of a cancelled job: the API answered %d %s, the CLI exited %d with %+v", a.status, a.raw, c.exit, c.err)
	}

	// The CLI's own codes.
	for _, cc := range []struct {
		code protocol.Code
		c    cliAnswer
	}{
		{protocol.CodeUsage, cliOf(t, home, "status")},
		{protocol.CodeUnavailable, cliOf(t, t.TempDir(), "list")},
	} {
		s := row(cc.code)
		if cc.c.err == nil || cc.c.err.Code != cc.code || cc.c.exit != s.Exit || cc.c.err.Retryable != s.Retryable {
			t.Errorf("the CLI exited %d with %+v, want %d with %s (retryable %v)", cc.c.exit, cc.c.err, s.Exit, cc.code, s.Retryable)
		}
	}
}

// waitFor polls cond until it holds (a minute at most).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
