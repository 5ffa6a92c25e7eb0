package main

import (
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// invoke --wait stops on an unknown attempt nothing will resolve: a
// manual take, or any once the daemon says no drive of the invocation is
// in flight (Idle). Without Idle, a claimed attempt's act may still run
// and an unclaimed one may be about to be claimed: it waits.
func TestStuckOn(t *testing.T) {
	view := func(claimed, idle bool, executor string) *api.InvocationReply {
		a := apitypes.OperationAttempt{ActAttempt: apitypes.ActAttempt{Operation: "op1", N: 1, Executor: executor}, Unknown: true}
		if claimed {
			a.Claim = &apitypes.ActClaim{Operation: "op1", Attempt: 1}
		}
		return &api.InvocationReply{Idle: idle,
			Operations: []api.OperationReply{{Operation: apitypes.Operation{ID: "op1"}, Attempts: []apitypes.OperationAttempt{a}}}}
	}
	for _, c := range []struct {
		name           string
		claimed, idle  bool
		executor, want string
	}{
		{"unclaimed, a drive may be in flight", false, false, store.ExecutorWorker, ""},
		{"unclaimed, idle", false, true, store.ExecutorWorker, "was never claimed"},
		{"claimed, its act may still run", true, false, store.ExecutorWorker, ""},
		{"claimed, idle", true, true, store.ExecutorWorker, "has an unknown outcome"},
		{"a manual take", false, false, store.ExecutorManual, "has an unknown outcome"},
	} {
		err := stuckOn(view(c.claimed, c.idle, c.executor))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want to wait", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "operation reconcile op1 --attempt 1")):
			t.Errorf("%s: %v, want %q and the reconcile", c.name, err, c.want)
		}
	}
}
