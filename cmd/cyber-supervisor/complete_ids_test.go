package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// completions runs the shell's question, `__complete args...` (or
// __completeNoDesc), and returns the words offered (without their
// descriptions) and the directive line.
func completions(t *testing.T, home string, desc bool, args ...string) ([]string, string, result) {
	t.Helper()
	req := "__completeNoDesc"
	if desc {
		req = "__complete"
	}
	r := cli(t, append([]string{"--home", home, req}, args...)...)
	if r.code != 0 {
		t.Fatalf("%v: exit %d: %+v", args, r.code, r)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	directive := lines[len(lines)-1]
	var words []string
	for _, l := range lines[:len(lines)-1] {
		w, _, _ := strings.Cut(l, "\t")
		words = append(words, w)
	}
	// What reaches the shell's stderr is cobra's own directive note,
	// never an error of ours (no daemon, a refused request).
	for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if l != "" && !strings.HasPrefix(l, "Completion ended with directive:") {
			t.Errorf("%v: stderr line %q", args, l)
		}
	}
	return words, directive, r
}

// The ids of jobs, progs, invocations and operations complete from the
// home's daemon, filtered by the prefix typed; without a daemon nothing
// is offered, and no error shows. A real daemon holding jobs and a prog.
// Fails before the completion functions: no id is offered.
func TestCompleteIDs(t *testing.T) {
	home := t.TempDir()
	// No daemon: nothing, not even file names (directive 4: no files).
	if words, directive, _ := completions(t, home, true, "status", ""); len(words) != 0 || directive != ":4" {
		t.Fatalf("without a daemon: %q %q", words, directive)
	}
	startServe(t, nil, "--home", home, "serve", "--isolation", "off", "--slots", "1", "--log-format", "json").ready(t)
	dir := t.TempDir()
	prog := writeFile(t, dir, "add.nox", add)
	for _, id := range []string{"alpha-1", "alpha-2", "beta-1"} {
		if r := cli(t, "--home", home, "submit", "--job-id", id, prog, "--input-values", "3,5", "--wait"); r.code != 0 {
			t.Fatalf("submit %s: %+v", id, r)
		}
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		// Newest first.
		{[]string{"status", "al"}, []string{"alpha-2", "alpha-1"}},
		{[]string{"status", ""}, []string{"beta-1", "alpha-2", "alpha-1"}},
		{[]string{"result", "b"}, []string{"beta-1"}},
		{[]string{"events", "alpha-1"}, []string{"alpha-1"}},
		{[]string{"cancel", "gamma"}, nil},
		{[]string{"resolve", "alpha-2", "--attempt", "1", "--retry", "be"}, nil}, // one job only
		{[]string{"status", "alpha-1", ""}, nil},
	} {
		words, directive, _ := completions(t, home, false, c.args...)
		if !slices.Equal(words, c.want) || directive != ":4" {
			t.Errorf("%q: %q %s, want %q :4", c.args, words, directive, c.want)
		}
	}
	if _, _, r := completions(t, home, true, "status", "beta"); !strings.HasPrefix(r.stdout, "beta-1\taccepted\n") {
		t.Errorf("a job's state is its description: %q", r.stdout)
	}
	// No neuron yet: the daemon refuses, and nothing shows.
	if words, _, _ := completions(t, home, true, "prog", "show", ""); len(words) != 0 {
		t.Errorf("progs without a neuron: %q", words)
	}

	// A prog, an invocation of it and its operations.
	if r := cli(t, "--home", home, "neuron", "init", "--network", "testnet"); r.code != 0 {
		t.Fatalf("neuron init: %+v", r)
	}
	if r := cli(t, "--home", home, "grant", "set", "--revision", "0", "--acts", "emit,host"); r.code != 0 {
		t.Fatalf("grant set: %+v", r)
	}
	r := cli(t, "--home", home, "prog", "install", writeFile(t, dir, "emit2.nox", emitTwice), "--acts", "emit")
	progID := strings.TrimSpace(r.stdout)
	if r.code != 0 || len(progID) != 64 {
		t.Fatalf("prog install: %+v", r)
	}
	env := jsonRun(t, 0, "--home", home, "invoke", progID, "--input-values", "5", "--wait")
	invID, _ := resultOf(t, env.Result)["id"].(string)
	if len(invID) != 64 {
		t.Fatalf("invoke: %s", env.Result)
	}
	for _, args := range [][]string{{"prog", "show", progID[:3]}, {"prog", "upgrade", ""}, {"invoke", progID[:1]}, {"prog", "pause", ""}} {
		if words, _, _ := completions(t, home, false, args...); !slices.Equal(words, []string{progID}) {
			t.Errorf("%q: %q, want the prog", args, words)
		}
	}
	if words, directive, _ := completions(t, home, false, "prog", "upgrade", progID, ""); len(words) != 0 || directive == ":4" {
		t.Errorf("prog upgrade's FILE: %q %s, want file names", words, directive)
	}
	for _, args := range [][]string{{"invocation", "show", invID[:2]}, {"invocation", "archive", ""}, {"operation", "take", ""}, {"operation", "list", ""}, {"invoke", progID, "--parent", ""}} {
		if words, _, _ := completions(t, home, false, args...); !slices.Equal(words, []string{invID}) {
			t.Errorf("%q: %q, want the invocation", args, words)
		}
	}
	if words, _, _ := completions(t, home, false, "invocation", "show", strings.Repeat("f", 64)); len(words) != 0 && invID[0] != 'f' {
		t.Errorf("a prefix no id has: %q", words)
	}
	env = jsonRun(t, 0, "--home", home, "operation", "list", invID)
	ops := map[string]bool{}
	var list []any
	if err := json.Unmarshal(env.Result, &list); err != nil {
		t.Fatal(err)
	}
	for _, o := range list {
		ops[o.(map[string]any)["id"].(string)] = true
	}
	words, _, _ := completions(t, home, false, "operation", "reconcile", "")
	if len(words) != len(ops) || len(ops) == 0 {
		t.Fatalf("operation reconcile: %q, want %v", words, ops)
	}
	for _, w := range words {
		if !ops[w] {
			t.Errorf("operation reconcile offers %q, not an operation", w)
		}
	}
}
