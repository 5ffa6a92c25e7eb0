package fenceservice

import (
	"context"

	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// offline schedules on a home no daemon owns: nothing runs by itself
// there. A new invocation runs up to its first act (no effect: the act
// waits for a daemon, a wait, or a manual take), and a wait binds this
// process's own worker and drives the invocation in this process.
type offline struct{ e *fencing.Engine }

// Offline is the Scheduler of a CLI acting on a home no daemon owns.
func Offline(e *fencing.Engine) Scheduler { return offline{e: e} }

// BindBoot binds nothing: this process's worker ends with it, so only a
// wait (which drives here) binds it.
func (offline) BindBoot(context.Context) {}

// RunAll and RunInvocation run nothing: a daemon's next start drives
// the live invocations.
func (offline) RunAll()              {}
func (offline) RunInvocation(string) {}

func (o offline) Start(ctx context.Context, inv *store.Invocation) (*store.Invocation, error) {
	next, err := o.e.Advance(ctx, inv.ID)
	if err == nil {
		return next, nil
	}
	// A refusal (a paused prog, a grant) leaves the invocation waiting
	// as it was made: it is made, and answered.
	if _, refused := fencing.AsRefusal(err); !refused {
		return nil, err
	}
	v, err := o.e.Invocation(ctx, inv.ID)
	if err != nil {
		return nil, err
	}
	return v.Invocation, nil
}

// WaitInvocation drives the invocation here until it ended or a refusal
// stops it. The answer is read even when ctx ended (a signal stops the
// drive at its next step, leaving the invocation live): Idle, since no
// drive of it is in flight once this one returned.
func (o offline) WaitInvocation(ctx context.Context, id string) (*fencing.InvocationView, error) {
	if _, err := o.e.BindBoot(ctx); err != nil {
		return nil, err
	}
	_, err := o.e.Drive(ctx, id)
	v, verr := o.e.Invocation(context.WithoutCancel(ctx), id)
	if verr != nil {
		if err == nil {
			err = verr
		}
		return nil, err
	}
	if !v.Status.Terminal() {
		v.Idle = true
	}
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return v, err
}
