package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
)

// oneShotHome is a home that a one-shot run and the fencing commands
// without a daemon left: an accepted job, a neuron, a prog and a
// completed invocation with its operations. It returns the job's and
// the invocation's ids.
func oneShotHome(t *testing.T, home string) (job, inv string) {
	t.Helper()
	h := func(args ...string) []string { return append([]string{"--home", home}, args...) }
	env := jsonRun(t, 0, h("run", example("add.nox"), "--input-values", "3,5", "--isolation", "off")...)
	job, _ = resultOf(t, env.Result)["job_id"].(string)
	if job == "" {
		t.Fatalf("run: no job id in %s", env.Result)
	}
	jsonRun(t, 0, h("neuron", "init", "--network", "testnet")...)
	jsonRun(t, 0, h("grant", "set", "--revision", "0", "--acts", "emit")...)
	prog := strings.TrimSpace(cli(t, h("prog", "install", writeFile(t, t.TempDir(), "emit2.nox", emitTwice), "--acts", "emit")...).stdout)
	env = jsonRun(t, 0, h("invoke", prog, "--input-values", "5", "--wait")...)
	inv, _ = resultOf(t, env.Result)["id"].(string)
	if len(inv) != 64 {
		t.Fatalf("invoke: no invocation id in %s", env.Result)
	}
	return job, inv
}

// storeDigest is the digest of the home's store file: a read leaves it
// as it was.
func storeDigest(t *testing.T, home string) [32]byte {
	t.Helper()
	raw, err := os.ReadFile(supervisor.StorePath(home))
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(raw)
}

// The read commands work on a home no daemon owns, reading its store
// read-only (the file is the same byte for byte after them), and answer
// what a daemon on the same home then answers, through the same
// handlers; writes keep their no-daemon error.
func TestReadsWithoutADaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: an end-to-end run of the built binaries and a daemon")
	}
	home := t.TempDir()
	job, inv := oneShotHome(t, home)
	reads := [][]string{{"status", job}, {"list"}, {"list", "--state", "accepted", "--limit", "5"}, {"result", job}, {"events", job},
		{"events", "--follow", job}, {"operation", "list"}, {"invocation", "show", inv[:10]}, {"invocation", "list"}, {"prog", "list"}}
	before := storeDigest(t, home)
	offline := map[string]string{}
	for _, args := range reads {
		env := jsonRun(t, 0, append([]string{"--home", home}, args...)...)
		offline[strings.Join(args, " ")] = string(env.Result)
		// The human form too: it is printed from the same answer.
		if r := cli(t, append([]string{"--home", home}, args...)...); r.code != 0 || r.stdout == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	if !strings.Contains(offline["list"], job) || !strings.Contains(offline["invocation show "+inv[:10]], `"status":"completed"`) {
		t.Fatalf("the answers miss the home's records:\n%v", offline)
	}
	env := jsonRun(t, 0, "--home", home, "capabilities")
	if !strings.Contains(string(env.Result), `"limits"`) {
		t.Errorf("capabilities without a daemon: %s", env.Result)
	}
	if storeDigest(t, home) != before {
		t.Fatal("a read changed the store file")
	}
	// Writes still need the daemon.
	for _, args := range [][]string{{"cancel", job}, {"submit", example("add.nox"), "--input-values", "1,2"}} {
		env := jsonRun(t, protocol.ExitUnavailable, append([]string{"--home", home}, args...)...)
		if env.Error == nil || env.Error.Code != protocol.CodeUnavailable || !strings.Contains(env.Error.Message, "no daemon on") {
			t.Errorf("%v: %+v", args, env.Error)
		}
	}
	// With a daemon on the home, the same reads go through it and
	// answer the same.
	serveBin(t, home)
	for _, args := range reads {
		env := jsonRun(t, 0, append([]string{"--home", home}, args...)...)
		if got, want := string(env.Result), offline[strings.Join(args, " ")]; !jsonEqual(t, got, want) {
			t.Errorf("%v: through the daemon\n%s\nwithout one\n%s", args, got, want)
		}
	}
}

// jsonEqual compares two JSON texts as values.
func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

// A daemon that starts while reads of its home run without one is not
// kept out: each read holds the store's shared lock for one request
// only, and a start waits for the readers (not for another daemon).
// Every read answers, before the start from the store and after it
// through the daemon.
func TestDaemonStartsWhileReadsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: an end-to-end run of the built binaries and a daemon")
	}
	home := t.TempDir()
	env := jsonRun(t, 0, "--home", home, "run", example("add.nox"), "--input-values", "3,5", "--isolation", "off")
	job := resultOf(t, env.Result)["job_id"].(string)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	reads := 0
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := cli(t, "--home", home, "status", job, "--format", "json")
				mu.Lock()
				reads++
				if r.code != 0 {
					failed = append(failed, r.stdout+r.stderr)
				}
				mu.Unlock()
			}
		}()
	}
	serveBin(t, home) // fails the test unless the daemon comes up
	// A few reads through the daemon too.
	for range 3 {
		jsonRun(t, 0, "--home", home, "status", job)
	}
	close(stop)
	wg.Wait()
	if len(failed) > 0 || reads == 0 {
		t.Fatalf("%d reads, %d failed: %v", reads, len(failed), failed)
	}
	if _, err := os.Stat(filepath.Join(home, "supervisor.sock")); err != nil {
		t.Fatal(err)
	}
}
