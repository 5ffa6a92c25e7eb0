package main

import "testing"

func TestAfterState(t *testing.T) {
	for _, c := range []struct{ state, reason, want string }{
		{"cancelled", "cancelled: testing", "testing"},
		{"cancelled", "cancelled", ""},
		{"failed", "budget_exhausted: the budget ran out", "budget_exhausted: the budget ran out"},
		{"running", "cancel requested: testing", "cancel requested: testing"},
		{"cancelled", "cancelledish: x", "cancelledish: x"},
		{"", "submitted", "submitted"},
	} {
		if got := afterState(c.state, c.reason); got != c.want {
			t.Errorf("afterState(%q, %q) = %q, want %q", c.state, c.reason, got, c.want)
		}
	}
}
