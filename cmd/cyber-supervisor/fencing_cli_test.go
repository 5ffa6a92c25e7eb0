package main

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

// emitTwice is a prog that emits twice on its subject.
var emitTwice = fmt.Sprintf("[3 [[16 [[1 %d] [1 0]]] [16 [[1 %d] [1 0]]]]]", hostact.TagEmit, hostact.TagEmit)

// result of an envelope as a map.
func resultOf(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	return m
}

// fencingTour runs the operator's tour of docs/fencing.md on home: init,
// grant, install, invoke --wait, a stale grant, a manual take reconciled,
// a revoked act, json envelopes and exit codes. The same whether a daemon
// owns the home or not.
func fencingTour(t *testing.T, home string) {
	dir := t.TempDir()
	h := func(args ...string) []string { return append([]string{"--home", home}, args...) }
	env := jsonRun(t, 0, h("neuron", "init", "--network", "testnet")...)
	root := resultOf(t, env.Result)["root"].(map[string]any)
	if root["network"] != "testnet" || root["epoch"] != "1" {
		t.Fatalf("root %v", root)
	}
	jsonRun(t, protocol.ExitRejected, h("neuron", "init", "--network", "testnet")...) // a second init: conflict
	if r := cli(t, h("grant", "set", "--revision", "0", "--acts", "emit,host")...); r.code != 0 || !strings.Contains(r.stdout, "revision 1") {
		t.Fatalf("grant set: %+v", r)
	}
	env = jsonRun(t, protocol.ExitRejected, h("grant", "set", "--revision", "0", "--acts", "emit")...)
	if env.Error.Code != "stale_state" || !strings.Contains(env.Error.Message, "revision 1") {
		t.Fatalf("a stale grant revision: %+v", env.Error)
	}
	jsonRun(t, protocol.ExitUsage, h("grant", "set", "--revision", "1", "--acts", "nope")...)
	prog := writeFile(t, dir, "emit2.nox", emitTwice)
	r := cli(t, h("prog", "install", prog, "--acts", "emit")...)
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || len(id) != 64 {
		t.Fatalf("prog install: %+v", r)
	}
	r = cli(t, h("invoke", id[:8], "--input-values", "5", "--wait")...)
	if r.code != 0 || r.stdout != "1\n2\n" {
		t.Fatalf("invoke --wait: %+v", r)
	}
	env = jsonRun(t, 0, h("invoke", id, "--input-values", "6", "--wait")...)
	if out := resultOf(t, env.Result)["output"].([]any); len(out) != 2 || out[0] != "3" {
		t.Fatalf("invoke --wait json: %s", env.Result)
	}
	lines, err := hostact.ReadEmitLog(filepath.Join(hostact.EffectsDir(home), hostact.EmitFile))
	if err != nil || len(lines) != 4 {
		t.Fatalf("emit.jsonl: %d lines %v", len(lines), err)
	}
	// A released placement: invocations wait on their act; a manual take
	// records an external attempt that only reconcile resolves.
	pl := resultOf(t, jsonRun(t, 0, h("placement", "show")...).Result)
	gen := pl["generation"].(string)
	jsonRun(t, 0, h("placement", "release", "--generation", gen)...)
	jsonRun(t, protocol.ExitRejected, h("placement", "release", "--generation", gen)...) // stale
	inv := strings.TrimSpace(cli(t, h("invoke", id, "--input-values", "7")...).stdout)
	if len(inv) != 64 {
		t.Fatalf("invoke: %q", inv)
	}
	r = cli(t, h("operation", "take", inv[:10])...)
	if r.code != 0 || !strings.Contains(r.stdout, "manual-reconciliation/1, generation 0") {
		t.Fatalf("take: %+v", r)
	}
	env = jsonRun(t, protocol.ExitRejected, h("operation", "take", inv)...)
	if env.Error.Code != "stale_state" || !strings.Contains(env.Error.Message, "needs reconciliation") {
		t.Fatalf("a second take: %+v", env.Error)
	}
	env = jsonRun(t, protocol.ExitRejected, h("invocation", "cancel", inv)...)
	if !strings.Contains(env.Error.Message, "unknown_outcome") {
		t.Fatalf("cancel an unknown attempt: %+v", env.Error)
	}
	var ops []map[string]any
	json.Unmarshal(jsonRun(t, 0, h("operation", "list", inv)...).Result, &ops)
	if len(ops) != 1 {
		t.Fatalf("operations %v", ops)
	}
	op := ops[0]["id"].(string)
	jsonRun(t, protocol.ExitUsage, h("operation", "reconcile", op, "--attempt", "1")...)
	if r := cli(t, h("operation", "reconcile", op[:12], "--attempt", "1", "--value", "41")...); r.code != 0 || r.stdout != "recorded\n" {
		t.Fatalf("reconcile: %+v", r)
	}
	if r := cli(t, h("operation", "reconcile", op, "--attempt", "1", "--value", "41")...); r.code != 0 || !strings.Contains(r.stdout, "already") {
		t.Fatalf("the same reconciliation again: %+v", r)
	}
	jsonRun(t, protocol.ExitRejected, h("operation", "reconcile", op, "--attempt", "1", "--failed", "no")...)
	// The act is revoked: invoking the prog is denied (claim_mismatch).
	jsonRun(t, 0, h("grant", "set", "--revision", "1", "--acts", "host")...)
	env = jsonRun(t, protocol.ExitRejected, h("invoke", id)...)
	if env.Error.Code != "claim_mismatch" || !strings.Contains(env.Error.Message, "denied") {
		t.Fatalf("invoke with the act revoked: %+v", env.Error)
	}
	var invs []map[string]any
	json.Unmarshal(jsonRun(t, 0, h("invocation", "list")...).Result, &invs)
	if len(invs) != 3 {
		t.Fatalf("%d invocations", len(invs))
	}
	show := cli(t, h("invocation", "show", inv)...)
	if show.code != 0 || !strings.Contains(show.stdout, "manual-reconciliation/1") {
		t.Fatalf("invocation show: %+v", show)
	}
	jsonRun(t, protocol.ExitUsage, h("invocation", "show", "zz")...)
	jsonRun(t, 0, h("prog", "pause", id)...)
	env = jsonRun(t, protocol.ExitUnavailable, h("prog", "retire", id)...) // a live invocation
	if env.Error.Code != "busy" {
		t.Fatalf("retire with a live invocation: %+v", env.Error)
	}
}

func TestFencingCommandsOnTheHome(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long end-to-end run of the built binaries")
	}
	home := t.TempDir()
	fencingTour(t, home)
	noKeyInAnswers(t, home)
}

func TestFencingCommandsThroughTheDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long end-to-end run of a daemon")
	}
	home := t.TempDir()
	serveBin(t, home)
	fencingTour(t, home)
	noKeyInAnswers(t, home)
}

// noKeyInAnswers: the API's answers (through the CLI's envelopes) never
// hold the vault's secret.
func noKeyInAnswers(t *testing.T, home string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(neuron.VaultDir(home), neuron.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	secret := strings.ToLower(lines[len(lines)-1])
	sb, _ := hex.DecodeString(secret)
	forms := []string{secret, base64.StdEncoding.EncodeToString(sb), base64.RawURLEncoding.EncodeToString(sb)}
	var all strings.Builder
	for _, args := range [][]string{{"neuron", "show"}, {"grant", "show"}, {"placement", "show"}, {"prog", "list"},
		{"invocation", "list"}, {"operation", "list"}} {
		r := cli(t, append([]string{"--home", home, "--format", "json"}, args...)...)
		all.WriteString(r.stdout + r.stderr)
		r = cli(t, append([]string{"--home", home}, args...)...)
		all.WriteString(r.stdout + r.stderr)
	}
	out := strings.ToLower(all.String())
	if !strings.Contains(out, "public_key") {
		t.Fatal("the answers hold no neuron: the check would prove nothing")
	}
	for _, f := range forms {
		if strings.Contains(out, strings.ToLower(f)) {
			t.Fatal("key material in the API's answers")
		}
	}
}
