package protocol

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
)

const testFormula = "[5 [[0 2] [0 6]]]"

func testCaps() Capabilities {
	return Capabilities{
		Backend:        "nox-worker",
		BackendVersion: "0.1.0",
		Contracts:      []string{ContractV1},
		VM:             "nox",
		ProofKinds:     []string{ProfilePublicTrace, ProfileNone},
		Operations:     []Operation{OpExecute, OpProve, OpVerify},
		Limits: EnforcedLimits{
			Reductions: true, WallTime: true, Memory: true, ArtifactBytes: true,
			Cancellation: true, Pids: true,
		},
	}
}

func mustWrap(t testing.TB, name, src string) []byte {
	t.Helper()
	b, err := WrapNox(name, []byte(src))
	if err != nil {
		t.Fatalf("WrapNox(%q): %v", src, err)
	}
	return b
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// specJSON is a valid execute job spec whose parts can be replaced: fields
// maps a top-level key to its raw JSON ("" drops the key); extra is raw text
// appended inside the top-level object.
func specJSON(t testing.TB, fields map[string]string, extra string) string {
	t.Helper()
	base := map[string]string{
		"contract":        `"cyber/worker/v1"`,
		"job_id":          `"job-1"`,
		"operation":       `"execute"`,
		"profile":         `"cyber-nox-public-trace-v1"`,
		"program":         fmt.Sprintf(`{"bundle":%q}`, b64(mustWrap(t, "add.nox", testFormula))),
		"inputs":          `["3","5"]`,
		"expected_output": `null`,
		"state_context":   `null`,
		"limits":          `{"reductions":"1000"}`,
	}
	for k, v := range fields {
		base[k] = v
	}
	var parts []string
	for _, k := range []string{"contract", "job_id", "operation", "profile", "program", "inputs",
		"expected_output", "state_context", "limits", "artifact_ref", "artifact"} {
		if v, ok := base[k]; ok && v != "" {
			parts = append(parts, fmt.Sprintf("%q:%s", k, v))
		}
	}
	if extra != "" {
		parts = append(parts, extra)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func bundleJSON(fields map[string]string) string {
	base := map[string]string{
		"name":      `"add"`,
		"version":   `"0.1.0"`,
		"target_vm": `"nox"`,
		"target_os": `null`,
		"assembly":  fmt.Sprintf("%q", testFormula),
	}
	for k, v := range fields {
		base[k] = v
	}
	var parts []string
	for _, k := range []string{"name", "version", "target_vm", "target_os", "assembly", "entry_point",
		"functions", "cost", "source_hash", "reads_state", "extra"} {
		if v, ok := base[k]; ok && v != "" {
			parts = append(parts, fmt.Sprintf("%q:%s", k, v))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// wantCode checks that err is an *Error with the code and, when non-empty,
// a message containing want.
func wantCode(t testing.TB, err error, code Code, want string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *Error; want %s", err, err, code)
	}
	if e.Code != code {
		t.Fatalf("code %s (%s); want %s", e.Code, e.Message, code)
	}
	if want != "" && !strings.Contains(e.Message, want) {
		t.Fatalf("message %q does not contain %q", e.Message, want)
	}
	if strings.ContainsAny(e.Message, "\n\r") {
		t.Fatalf("message %q is not one line", e.Message)
	}
}
