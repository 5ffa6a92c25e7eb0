package early

import "testing"

func TestIsolatedRun(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"run", "add.nox"}, true},
		{[]string{"--home", "h", "run", "add.nox", "--op", "execute"}, true},
		{[]string{"run", "add.nox", "--isolation", "required"}, true},
		{[]string{"run", "add.nox", "--isolation", "off"}, false},
		{[]string{"run", "add.nox", "--isolation=off"}, false},
		{[]string{"--isolation=off", "run", "x"}, false},
		{[]string{"status", "job-1"}, false},
		{[]string{"serve"}, false},
		{[]string{"run", "--", "--isolation=off"}, true},
		{nil, false},
	} {
		if got := isolatedRun(c.args); got != c.want {
			t.Errorf("isolatedRun(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
