package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/internal/vectors"
)

func runCLI(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

func TestEvalSingle(t *testing.T) {
	out, _, code := runCLI(t, "", "eval", "--object", "[1 2]", "--budget", "100", "-e", "[5 [[0 2] [0 3]]]")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	want := `{"status":"ok","result":"3","cost":"3","remaining":"97","result_particle":"d407305917bc61a8bae605009f23bfd01eb4189a324d065c863700d65c9096d1","object_particle":"c2e17f0c787ac64d4a96c84ad57996e5cf56b02e2247575100ce81c09d12a9a0","formula_particle":"0b747803afb9d67f2d952c1b393c53a557ec111892d32bbb3375c339fc0e9a8c"}` + "\n"
	if out != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	out, _, code = runCLI(t, "[8 [1 0]]", "eval", "-")
	if code != exitFailed || !strings.Contains(out, `"error":"InvZero","error_code":2`) {
		t.Fatalf("InvZero: %d %s", code, out)
	}
	out, _, code = runCLI(t, "", "eval", "--budget", "63", "-e", "[8 [1 2]]")
	if code != exitFailed || !strings.Contains(out, `"status":"halt","remaining":"63"`) {
		t.Fatalf("halt: %d %s", code, out)
	}
	out, _, code = runCLI(t, "", "eval", "-e", "[1 x]")
	if code != exitUsage || !strings.Contains(out, `"status":"parse_error"`) || !strings.Contains(out, "1:4") {
		t.Fatalf("parse error: %d %s", code, out)
	}
	if _, _, code = runCLI(t, "", "eval"); code != exitUsage {
		t.Fatalf("no formula: exit %d", code)
	}
	if _, _, code = runCLI(t, "", "eval", "-e", "[1 2]", "extra"); code != exitUsage {
		t.Fatalf("two formulas: exit %d", code)
	}
	// The evaluator recurses once per level: its depth limit is capped.
	if _, stderr, code := runCLI(t, "", "eval", "--depth-limit", "100001", "-e", "[1 2]"); code != exitUsage || !strings.Contains(stderr, "1..100000") {
		t.Fatalf("depth limit over the cap: exit %d %q", code, stderr)
	}
	if _, _, code := runCLI(t, "", "eval", "--depth-limit", "100000", "-e", "[1 2]"); code != exitOK {
		t.Fatalf("depth limit at the cap: exit %d", code)
	}
}

// TestEvalBatchConformance feeds every reference case through --batch and
// compares the streamed JSON with the expectations.
func TestEvalBatchConformance(t *testing.T) {
	cases, err := vectors.Load()
	if err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	for _, c := range cases {
		fmt.Fprintf(&in, "%d|%s|%s\n", c.Budget, c.Object, c.Formula)
	}
	in.WriteString("not a case\n")
	out, stderr, code := runCLI(t, in.String(), "eval", "--batch")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(cases)+1 {
		t.Fatalf("%d lines for %d cases", len(lines), len(cases)+1)
	}
	u := func(p *uint64) string {
		if p == nil {
			return ""
		}
		return fmt.Sprint(*p)
	}
	s := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	for i, c := range cases {
		var r evalResult
		if err := json.Unmarshal([]byte(lines[i]), &r); err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		e := c.Expect
		want := evalResult{Status: e.Status, Result: s(e.Result), Cost: u(e.Cost), Remaining: u(e.Remaining),
			Error: s(e.Error), ErrorCode: e.ErrorCode, ResultParticle: s(e.ResultParticle),
			ObjectParticle: e.ObjectParticle, FormulaParticle: e.FormulaParticle}
		if e.Status == "halt" {
			want.Cost = ""
		}
		gotJSON, _ := json.Marshal(r)
		wantJSON, _ := json.Marshal(want)
		if string(gotJSON) != string(wantJSON) {
			t.Fatalf("%s:\n got  %s\n want %s", c.ID, gotJSON, wantJSON)
		}
	}
	if !strings.Contains(lines[len(lines)-1], "parse_error") {
		t.Fatalf("bad line: %s", lines[len(lines)-1])
	}
}
