package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
)

// emitThenNine emits once on its subject and answers [w 9].
var emitThenNine = fmt.Sprintf("[3 [[16 [[1 %d] [1 0]]] [1 9]]]", hostact.TagEmit)

// invocationOf reads an invocation's view through invocation show.
func invocationOf(t *testing.T, home, id string) map[string]any {
	t.Helper()
	return resultOf(t, jsonRun(t, 0, "--home", home, "invocation", "show", id).Result)
}

// revisionsTour upgrades a prog with a live invocation of its first
// revision and starts children on a parent's delegated steps, with the
// refusals of both. daemon says whether a daemon drives the home (then
// the stale invocation ends by itself).
func revisionsTour(t *testing.T, home string, daemon bool) {
	dir := t.TempDir()
	h := func(args ...string) []string { return append([]string{"--home", home}, args...) }
	jsonRun(t, 0, h("neuron", "init", "--network", "testnet")...)
	jsonRun(t, 0, h("grant", "set", "--revision", "0", "--acts", "emit,host")...)
	p := strings.TrimSpace(cli(t, h("prog", "install", writeFile(t, dir, "emit2.nox", emitTwice), "--acts", "emit")...).stdout)
	if len(p) != 64 {
		t.Fatalf("prog install: %q", p)
	}
	// Released: invocations wait on their first act.
	gen := resultOf(t, jsonRun(t, 0, h("placement", "show")...).Result)["generation"].(string)
	jsonRun(t, 0, h("placement", "release", "--generation", gen)...)
	old := strings.TrimSpace(cli(t, h("invoke", p, "--input-values", "5")...).stdout)
	if len(old) != 64 {
		t.Fatalf("invoke: %q", old)
	}

	// Upgrades: a CAS on the revision.
	k42 := writeFile(t, dir, "k42.nox", "[1 42]")
	env := jsonRun(t, protocol.ExitRejected, h("prog", "upgrade", p, k42, "--revision", "1")...)
	if env.Error.Code != "stale_state" || !strings.Contains(env.Error.Message, "at revision 0, not 1") {
		t.Fatalf("an upgrade from a stale revision: %+v", env.Error)
	}
	jsonRun(t, protocol.ExitUsage, h("prog", "upgrade", p, k42)...) // no --revision
	jsonRun(t, protocol.ExitUsage, h("prog", "upgrade", p, k42, "--revision", "0", "--acts", "nope")...)
	jsonRun(t, protocol.ExitUsage, h("prog", "upgrade", p, writeFile(t, dir, "atom.nox", "7"), "--revision", "0")...)
	env = jsonRun(t, protocol.ExitUnsupported, h("prog", "upgrade", p, k42, "--revision", "0", "--acts", "emit,0xac75000000000099")...)
	if env.Error.Code != "unsupported_profile" {
		t.Fatalf("an unregistered act: %+v", env.Error)
	}
	// An act the grant does not give is denied.
	jsonRun(t, 0, h("grant", "set", "--revision", "1", "--acts", "emit")...)
	env = jsonRun(t, protocol.ExitRejected, h("prog", "upgrade", p, k42, "--revision", "0", "--acts", "host")...)
	if env.Error.Code != "claim_mismatch" || !strings.Contains(env.Error.Message, "denied") {
		t.Fatalf("an upgrade requesting an act the grant does not give: %+v", env.Error)
	}
	jsonRun(t, 0, h("grant", "set", "--revision", "2", "--acts", "emit,host")...)
	r := cli(t, h("prog", "upgrade", p[:8], k42, "--revision", "0", "--acts", "host", "--step-limit", "5000")...)
	if r.code != 0 || r.stdout != p+" revision 1\n" {
		t.Fatalf("prog upgrade: %+v", r)
	}
	env = jsonRun(t, 0, h("prog", "upgrade", p, k42, "--revision", "0", "--acts", "host", "--step-limit", "5000")...)
	if rep := resultOf(t, env.Result); rep["created"] != false || rep["prog"].(map[string]any)["revision"] != "1" {
		t.Fatalf("the same upgrade again: %s", env.Result)
	}
	show := resultOf(t, jsonRun(t, 0, h("prog", "show", p)...).Result)
	revs := show["revisions"].([]any)
	if show["revision"] != "1" || show["step_limit"] != "5000" || len(revs) != 2 ||
		revs[0].(map[string]any)["revision"] != "0" || revs[0].(map[string]any)["step_limit"] != "1048576" {
		t.Fatalf("prog show: %v", show)
	}
	if r := cli(t, h("prog", "show", p)...); r.code != 0 || !strings.Contains(r.stdout, "REVISION") || !strings.Contains(r.stdout, "\n1 ") {
		t.Fatalf("prog show: %+v", r)
	}
	// The invocation of revision 0 acts no more.
	if daemon {
		deadline := time.Now().Add(time.Minute)
		for invocationOf(t, home, old)["status"] != "conflict" {
			if time.Now().After(deadline) {
				t.Fatalf("the stale invocation did not end: %v", invocationOf(t, home, old))
			}
			time.Sleep(50 * time.Millisecond)
		}
		if e := invocationOf(t, home, old)["error"].(map[string]any); e["code"] != "stale_state" {
			t.Fatalf("the stale invocation's error: %v", e)
		}
	} else {
		env = jsonRun(t, protocol.ExitRejected, h("operation", "take", old)...)
		if env.Error.Code != "stale_state" {
			t.Fatalf("a take of a stale invocation: %+v", env.Error)
		}
		jsonRun(t, 0, h("invocation", "cancel", old)...)
	}
	if v := invocationOf(t, home, old); v["prog_revision"] != "0" {
		t.Fatalf("the old invocation's revision: %v", v)
	}
	// New invocations run the new revision.
	if r := cli(t, h("invoke", p, "--wait")...); r.code != 0 || r.stdout != "42\n" {
		t.Fatalf("invoke the new revision: %+v", r)
	}

	// Acts and bounds not given keep the current revision's.
	jsonRun(t, 0, h("prog", "upgrade", p, writeFile(t, dir, "k43.nox", "[1 43]"), "--revision", "1")...)
	show = resultOf(t, jsonRun(t, 0, h("prog", "show", p)...).Result)
	if acts := show["acts"].([]any); show["revision"] != "2" || show["step_limit"] != "5000" || len(acts) != 1 || acts[0] != fmt.Sprint(hostact.TagHost) {
		t.Fatalf("an upgrade that keeps acts and bounds: %v", show)
	}

	// Children run on the steps a live parent delegates.
	e := strings.TrimSpace(cli(t, h("prog", "install", writeFile(t, dir, "emit9.nox", emitThenNine), "--acts", "emit", "--step-limit", "3000")...).stdout)
	parent := strings.TrimSpace(cli(t, h("invoke", e, "--input-values", "1")...).stdout)
	if len(e) != 64 || len(parent) != 64 {
		t.Fatalf("prog %q, parent %q", e, parent)
	}
	// A slice running the parent holds its steps (busy): wait for it to
	// wait on its act (the daemon runs it; without one, invoke did).
	deadline := time.Now().Add(time.Minute)
	for v := invocationOf(t, home, parent); v["status"] != "waiting" || v["held"] != "0"; v = invocationOf(t, home, parent) {
		if time.Now().After(deadline) {
			t.Fatalf("the parent does not wait on its act: %v", v)
		}
		time.Sleep(50 * time.Millisecond)
	}
	jsonRun(t, protocol.ExitUsage, h("invoke", p, "--steps", "10")...) // steps without a parent
	jsonRun(t, protocol.ExitUsage, h("invoke", p, "--parent", "zz")...)
	env = jsonRun(t, protocol.ExitUsage, h("invoke", p, "--parent", parent, "--steps", "6000")...)
	if env.Error.Code != "invalid_job" || !strings.Contains(env.Error.Message, "step limit 5000") {
		t.Fatalf("an allowance over the child prog's step limit: %+v", env.Error)
	}
	env = jsonRun(t, 1, h("invoke", p, "--parent", parent, "--steps", "4000")...)
	if env.Error.Code != "budget_exhausted" || !strings.Contains(env.Error.Message, "budget") {
		t.Fatalf("an allowance over the parent's free steps: %+v", env.Error)
	}
	r = cli(t, h("invoke", p, "--parent", parent[:9], "--steps", "100", "--wait")...)
	if r.code != 0 || r.stdout != "43\n" {
		t.Fatalf("invoke a child --wait: %+v", r)
	}
	pv := invocationOf(t, home, parent)
	kids := pv["children"].([]any)
	if pv["delegated"] != "100" || len(kids) != 1 {
		t.Fatalf("the parent: %v", pv)
	}
	child := kids[0].(string)
	cv := invocationOf(t, home, child)
	if cv["parent"] != parent || cv["limit"] != "100" || cv["status"] != "completed" {
		t.Fatalf("the child: %v", cv)
	}
	if r := cli(t, h("invocation", "show", parent)...); r.code != 0 || !strings.Contains(r.stdout, "child      "+child) || !strings.Contains(r.stdout, "100 delegated") {
		t.Fatalf("invocation show of the parent: %+v", r)
	}
	// A child of an ended parent is refused (lifecycle).
	jsonRun(t, 0, h("invocation", "cancel", parent)...)
	env = jsonRun(t, protocol.ExitUsage, h("invoke", p, "--parent", parent)...)
	if env.Error.Code != "invalid_job" || !strings.Contains(env.Error.Message, "lifecycle") {
		t.Fatalf("a child of an ended parent: %+v", env.Error)
	}
	var invs []map[string]any
	json.Unmarshal(jsonRun(t, 0, h("invocation", "list")...).Result, &invs)
	if len(invs) != 4 {
		t.Fatalf("%d invocations, want 4", len(invs))
	}
}

func TestRevisionsAndChildrenOnTheHome(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long end-to-end run of the built binaries")
	}
	revisionsTour(t, t.TempDir(), false)
}

func TestRevisionsAndChildrenThroughTheDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long end-to-end run of a daemon")
	}
	home := t.TempDir()
	serveBin(t, home)
	revisionsTour(t, home, true)
}
