// Package fenceservice is the one place the fencing operations are
// served: the daemon's API calls it over the daemon's engine, and the CLI
// calls it in-process on a home no daemon owns. It reads a request (acts
// by name, a bundle, a reconciliation's value), calls the engine, and
// lets the invocations a write may have unblocked go on through its
// Scheduler; the API's handlers only parse, call and answer. It answers
// with the API's types (supervisor/api/apitypes), converted from the
// store's records in convert.go, never with a record itself.
//
// Dependencies point one way: fencing (the engine) ← fenceservice ←
// api, cmd/cyber-supervisor; fenceservice → apitypes (a leaf of
// contract types) for its replies.
package fenceservice

import (
	"context"

	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// Scheduler is what runs invocations after a write: the daemon's drivers
// (api's daemonScheduler over supervisor.Supervisor), or, on a home no
// daemon owns, this process itself (Offline).
type Scheduler interface {
	// BindBoot follows neuron init: the daemon binds its own worker at
	// once, as at every start.
	BindBoot(ctx context.Context)
	// RunAll follows a grant, a bind, a resume or an upgrade that made
	// a new revision: any waiting invocation may go on.
	RunAll()
	// RunInvocation follows a rebind or a reconciliation: the
	// invocation may go on.
	RunInvocation(id string)
	// Start follows an invocation's making; it answers the invocation
	// as the scheduler left it.
	Start(ctx context.Context, inv *store.Invocation) (*store.Invocation, error)
	// WaitInvocation returns the invocation once it ended or cannot go
	// on by itself (Idle), or when ctx ends.
	WaitInvocation(ctx context.Context, id string) (*fencing.InvocationView, error)
}

// Service serves the fencing operations on one engine.
type Service struct {
	e     *fencing.Engine
	sched Scheduler
}

// New is the service of engine e whose writes sched follows.
func New(e *fencing.Engine, sched Scheduler) *Service {
	return &Service{e: e, sched: sched}
}

// Engine is the engine the service serves.
func (s *Service) Engine() *fencing.Engine { return s.e }

// orEmpty answers an empty list as [] (never null) in JSON.
func orEmpty[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}
