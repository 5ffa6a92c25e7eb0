package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// progressLines feeds samples of one job to a progress and returns its
// lines with the elapsed times taken out.
func progressLines(samples ...*apitypes.JobStatus) []string {
	var buf bytes.Buffer
	p := newProgress(&buf, "p")
	for _, st := range samples {
		p.show(st)
	}
	out := regexp.MustCompile(`[0-9]+\.[0-9]{2}s`).ReplaceAllString(buf.String(), "T")
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// sample is a job of two allowed attempts in state s with the attempts'
// states as given.
func sample(s lifecycle.State, attempts ...lifecycle.State) *apitypes.JobStatus {
	st := &apitypes.JobStatus{Job: apitypes.Job{JobID: "p", State: s, Attempts: uint32(len(attempts)), AttemptsAllowed: 2, Retry: apitypes.RetryPolicy{MaxAttempts: 2}}}
	for i, a := range attempts {
		at := apitypes.Attempt{JobID: "p", N: uint32(i + 1), State: a}
		if a == lifecycle.Failed {
			at.Error = protocol.Errorf(protocol.CodeDeadlineExceeded, "late")
		}
		st.Attempts = append(st.Attempts, at)
	}
	return st
}

// The lines do not depend on which states the samples caught.
func TestProgressLinesDoNotDependOnSampling(t *testing.T) {
	want := []string{
		"p: queued (attempt 1 of 2, T)",
		"p: running (attempt 1 of 2, T)",
		"p: attempt 1 failed (deadline_exceeded: late); queued for attempt 2 of 2 (T)",
		"p: running (attempt 2 of 2, T)",
		"p: failed (attempt 2 of 2, T)",
	}
	queued1 := sample(lifecycle.Queued)
	running1 := sample(lifecycle.Running, lifecycle.Running)
	queued2 := sample(lifecycle.Queued, lifecycle.Failed)
	running2 := sample(lifecycle.Running, lifecycle.Failed, lifecycle.Running)
	failed := sample(lifecycle.Failed, lifecycle.Failed, lifecycle.Failed)
	for name, samples := range map[string][]*apitypes.JobStatus{
		"every state":     {queued1, running1, queued2, running2, failed},
		"taken at once":   {running1, queued2, running2, failed},
		"retry unseen":    {queued1, running1, running2, failed},
		"only the end":    {failed},
		"repeated states": {queued1, queued1, running1, running1, failed, failed},
	} {
		if got := progressLines(samples...); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:\n%s\nwant:\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	// A job cancelled in the queue was never running.
	got := progressLines(sample(lifecycle.Cancelled))
	if strings.Join(got, "\n") != "p: queued (attempt 1 of 2, T)\np: cancelled (attempt 1 of 2, T)" {
		t.Errorf("cancelled in the queue:\n%s", strings.Join(got, "\n"))
	}
}
