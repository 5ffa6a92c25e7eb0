package protocol

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestCodes(t *testing.T) {
	codes := ContractCodes()
	if len(codes) != 16 {
		t.Fatalf("%d codes, want 16", len(codes))
	}
	retryable := map[Code]bool{CodeDeadlineExceeded: true, CodeMemoryExhausted: true, CodeIOError: true, CodeInternalError: true}
	for _, c := range codes {
		if !c.Known() {
			t.Errorf("%s not known", c)
		}
		if c.Retryable() != retryable[c] {
			t.Errorf("%s retryable = %v", c, c.Retryable())
		}
		if e := Errorf(c, "x"); e.Retryable != retryable[c] {
			t.Errorf("Errorf(%s).Retryable = %v", c, e.Retryable)
		}
	}
	if Code("nope").Known() || CodeBusy.Known() || CodeUsage.Known() {
		t.Error("a code beside the contract's is known as the contract's")
	}
}

func TestExitCode(t *testing.T) {
	want := map[Code]int{
		"":                     0,
		CodeInvalidJob:         2,
		CodeUnsupportedProfile: 3, CodeUnsupportedLimit: 3, CodeUnsupportedState: 3, CodeUnsupportedSecret: 3,
		CodeBudgetExhausted: 1, CodeDeadlineExceeded: 1, CodeMemoryExhausted: 1, CodeArtifactTooLarge: 1,
		CodeExecutionFailed: 1, CodeIOError: 1, CodeInternalError: 1,
		CodeProofRejected: 5, CodeClaimMismatch: 5, CodeStaleState: 5,
		CodeCancelled: 130,
		CodeBusy:      4, CodeUnknownJob: 2, CodeNotFinished: 4, CodeForbidden: 1, CodeStoreDamaged: 6,
		CodeUsage: 2, CodeUnavailable: 4, CodeNoStore: 2, CodeInterrupted: 130, CodeStoreProblems: 1,
		"no_such_code": 1,
	}
	for c, w := range want {
		if got := ExitCode(c); got != w {
			t.Errorf("ExitCode(%q) = %d, want %d", c, got, w)
		}
	}
	if ExitCodeOf(nil) != 0 || ExitCodeOf(errors.New("x")) != 1 {
		t.Error("ExitCodeOf")
	}
}

func TestCodeOfAndIs(t *testing.T) {
	wrapped := fmt.Errorf("context: %w", Errorf(CodeProofRejected, "bad row"))
	cases := []struct {
		err  error
		want Code
	}{
		{nil, ""},
		{wrapped, CodeProofRejected},
		{context.Canceled, CodeCancelled},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), CodeDeadlineExceeded},
		{errors.New("open /secret/file: contents"), CodeInternalError},
	}
	for _, c := range cases {
		if got := CodeOf(c.err); got != c.want {
			t.Errorf("CodeOf(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	if !errors.Is(wrapped, ErrProofRejected) || errors.Is(wrapped, ErrClaimMismatch) {
		t.Error("errors.Is by code")
	}
	if m := AsError(errors.New("open /secret/file")).Message; m != "internal error" {
		t.Errorf("untyped error text crossed the boundary: %q", m)
	}
}

func TestErrorJSONRoundTrip(t *testing.T) {
	for _, c := range ContractCodes() {
		e := &Error{Code: c, Message: "a \"quoted\" <message>", Retryable: !c.Retryable()}
		b, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		got := ParseError(b)
		if *got != *e {
			t.Errorf("round trip %s: %+v != %+v", b, got, e)
		}
	}
	cases := []struct {
		in   string
		code Code
	}{
		{`{"code":"no_such_code","message":"x","retryable":false}`, CodeInternalError},
		{`{"code":"cancelled","code":"io_error"}`, CodeInternalError},
		{`not json`, CodeInternalError},
		{`{"code":"cancelled","future":{"x":1}}`, CodeCancelled},
		{`{"code":"io_error","retryable":"yes"}`, CodeInternalError},
	}
	for _, c := range cases {
		if got := ParseError([]byte(c.in)); got.Code != c.code {
			t.Errorf("ParseError(%s) = %v, want %s", c.in, got, c.code)
		}
	}
	got := ParseError([]byte(`{"code":"execution_failed","message":"line1\nline2\u0000\u001b[31m"}`))
	if got.Message != "line1?line2??[31m" {
		t.Errorf("message not made safe: %q", got.Message)
	}
}
