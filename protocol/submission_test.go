package protocol

import (
	"strings"
	"testing"
	"time"
)

func TestParseSubmission(t *testing.T) {
	spec := `{"contract":"cyber/worker/v1","job_id":"a"}`
	sub, err := ParseSubmission([]byte(`{"spec": ` + spec + ` ,"priority":-7,"retry":{"max_attempts":3,"backoff_ns":1000,"max_backoff_ns":5000,"retryable":["io_error","deadline_exceeded"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := RetryRequest{MaxAttempts: 3, Backoff: time.Microsecond, MaxBackoff: 5 * time.Microsecond, Retryable: []Code{CodeIOError, CodeDeadlineExceeded}}
	if string(sub.Spec) != spec || sub.Priority != -7 || sub.Retry == nil || sub.Retry.MaxAttempts != want.MaxAttempts ||
		sub.Retry.Backoff != want.Backoff || sub.Retry.MaxBackoff != want.MaxBackoff || len(sub.Retry.Retryable) != 2 || sub.Retry.Retryable[1] != CodeDeadlineExceeded {
		t.Fatalf("%+v %+v", sub, sub.Retry)
	}
	// What the API's client sends for a nil retry list, and for no retry.
	sub, err = ParseSubmission([]byte(`{"spec":{},"retry":{"max_attempts":2,"backoff_ns":0,"max_backoff_ns":0,"retryable":null}}`))
	if err != nil || sub.Retry == nil || sub.Retry.Retryable != nil || sub.Priority != 0 {
		t.Fatalf("%+v %v", sub, err)
	}
	sub, err = ParseSubmission([]byte(`{"spec":{},"retry":null}`))
	if err != nil || sub.Retry != nil {
		t.Fatalf("%+v %v", sub, err)
	}
}

func TestParseSubmissionRefuses(t *testing.T) {
	long := strings.Repeat("k", 100_000)
	bad := map[string]string{
		`{"spec":{"a":1},"spec":{"a":2}}`:                         "$.spec: duplicate key",
		`{"spec":{},"priority":1,"priority":2}`:                   "$.priority: duplicate key",
		`{"spec":{},"retry":{"max_attempts":1,"max_attempts":2}}`: "$.retry.max_attempts: duplicate key",
		`{"priority":1,"spec":{},"spec":{}}`:                      "$.spec: duplicate key",
		`{"spec":{},"spec":[]}`:                                   "$.spec: duplicate key",
		`{"priority":1}`:                                          "$.spec: required key is missing",
		`{"spec":{},"surprise":1}`:                                "$.surprise: unknown key",
		`{"spec":{},"` + long + `":1}`:                            `unknown key`,
		`{"spec":{},"priority":1.0}`:                              "$.priority: not an integer of 32 bits",
		`{"spec":{},"priority":1e2}`:                              "$.priority: not an integer of 32 bits",
		`{"spec":{},"priority":2147483648}`:                       "$.priority: not an integer of 32 bits",
		`{"spec":{},"priority":"1"}`:                              "$.priority: must be a number",
		`{"spec":{},"retry":{"max_attempts":-1}}`:                 "$.retry.max_attempts: not an unsigned integer",
		`{"spec":{},"retry":{"max_attempts":4294967296}}`:         "$.retry.max_attempts: above 2^32-1",
		`{"spec":{},"retry":{"backoff_ns":1.5}}`:                  "$.retry.backoff_ns: not an integer of 64 bits",
		`{"spec":{},"retry":{"retryable":["nope"]}}`:              "$.retry.retryable[0]: not an error code",
		`{"spec":{},"retry":{"retryable":"io_error"}}`:            "$.retry.retryable: must be an array",
		`{"spec":{},"retry":{"other":1}}`:                         "$.retry.other: unknown key",
		`{"spec":{},"retry":[]}`:                                  "$.retry: must be an object",
		`{"spec":{"a":}}`:                                         "malformed JSON",
		`{"spec":{}} {}`:                                          "data after the value",
		`{"spec":{}`:                                              "unexpected end",
		`[]`:                                                      "$: must be an object",
		``:                                                        "unexpected end",
	}
	for in, want := range bad {
		_, err := ParseSubmission([]byte(in))
		if err == nil {
			t.Errorf("%.80s: accepted", in)
			continue
		}
		if CodeOf(err) != CodeInvalidJob || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.(*Error).Message, "submission: ") {
			t.Errorf("%.80s: %v, want invalid_job with %q", in, err, want)
		}
		if len(err.Error()) > 200 {
			t.Errorf("%.80s: a %d-byte message echoes the input", in, len(err.Error()))
		}
	}
	// The retryable list is bounded by the code set.
	many := `{"spec":{},"retry":{"retryable":[` + strings.Repeat(`"io_error",`, len(ContractCodes())) + `"io_error"]}}`
	if _, err := ParseSubmission([]byte(many)); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("%d retryable codes: %v", len(ContractCodes())+1, err)
	}
	if _, err := ParseSubmission(make([]byte, MaxSubmissionBytes+1)); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("oversize: %v", err)
	}
}

// A duplicate inside the spec is the spec parser's to refuse: the envelope
// hands the spec's text on unparsed, and Admit refuses it at every depth.
func TestSubmissionSpecDuplicatesReachAdmit(t *testing.T) {
	sub, err := ParseSubmission([]byte(`{"spec":{"contract":"cyber/worker/v1","contract":"cyber/worker/v1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Admit(sub.Spec, testCaps()); err == nil || !strings.Contains(err.Error(), "$.contract: duplicate key") {
		t.Fatalf("Admit: %v", err)
	}
}
