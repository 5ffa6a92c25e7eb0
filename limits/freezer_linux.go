package limits

import (
	"context"
	"strings"
	"time"
)

// freezer stops every task of a group so that none can fork while the group
// is being killed.
type freezer interface {
	freeze(ctx context.Context) error
	thaw() error
}

// freezeWaitBound bounds the wait for a group to report itself frozen. A
// task in uninterruptible sleep can keep a v1 group in FREEZING for long;
// the kill proceeds anyway (a SIGKILLed task dies once thawed).
const freezeWaitBound = 200 * time.Millisecond

// v1Freezer is a v1 freezer group directory (freezer.state).
type v1Freezer string

func (f v1Freezer) freeze(ctx context.Context) error {
	if err := writeFile(string(f), "freezer.state", "FROZEN"); err != nil {
		return err
	}
	return pollUntil(ctx, func() (bool, error) {
		b, err := readFile(string(f), "freezer.state")
		return strings.TrimSpace(string(b)) == "FROZEN", err
	})
}

func (f v1Freezer) thaw() error { return writeFile(string(f), "freezer.state", "THAWED") }

// v2Freezer is a cgroup v2 directory (cgroup.freeze, kernel >= 5.2), used
// only when cgroup.kill (5.14) is missing.
type v2Freezer string

func (f v2Freezer) freeze(ctx context.Context) error {
	if err := writeFile(string(f), "cgroup.freeze", "1"); err != nil {
		return err
	}
	return pollUntil(ctx, func() (bool, error) {
		kv, err := readKeyed(string(f), "cgroup.events")
		return kv["frozen"] == 1, err
	})
}

func (f v2Freezer) thaw() error { return writeFile(string(f), "cgroup.freeze", "0") }

// pollUntil polls cond until it holds, fails, ctx ends or freezeWaitBound
// passes.
func pollUntil(ctx context.Context, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, freezeWaitBound)
	defer cancel()
	delay := 100 * time.Microsecond
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		sleepCtx(ctx, delay)
		if delay < 5*time.Millisecond {
			delay *= 2
		}
	}
}
