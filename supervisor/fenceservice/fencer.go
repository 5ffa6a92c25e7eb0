package fenceservice

import (
	"context"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

// Fencer is the method set of the fencing operations: Service has it
// in-process, and the API's client (supervisor/api) over the daemon's
// socket, so that the CLI holds one Fencer whether a daemon owns the
// home or not. Both answer with the same types, the API's own
// (apitypes), never a store record.
type Fencer interface {
	Neuron(ctx context.Context) (*NeuronReply, error)
	InitNeuron(ctx context.Context, network string) (*NeuronReply, error)
	ChangePolicy(ctx context.Context, policy neuron.Particle, epoch uint64) (*apitypes.Root, error)
	Grant(ctx context.Context) (*apitypes.Grant, error)
	SetGrant(ctx context.Context, body GrantBody) (*apitypes.Grant, error)
	Placement(ctx context.Context) (*apitypes.Root, error)
	Bind(ctx context.Context, generation uint64) (*apitypes.Root, error)
	Release(ctx context.Context, generation uint64) (*apitypes.Root, error)
	Acts(ctx context.Context) ([]ActInfo, error)

	Progs(ctx context.Context) ([]*apitypes.Prog, error)
	Prog(ctx context.Context, id string) (*apitypes.Prog, error)
	InstallProg(ctx context.Context, body ProgBody) (*ProgReply, error)
	UpgradeProg(ctx context.Context, id string, body UpgradeBody) (*ProgReply, error)
	ProgRevisions(ctx context.Context, id string) ([]*apitypes.Prog, error)
	PauseProg(ctx context.Context, id string) (*apitypes.Prog, error)
	ResumeProg(ctx context.Context, id string) (*apitypes.Prog, error)
	RetireProg(ctx context.Context, id string) (*apitypes.Prog, error)

	Invocations(ctx context.Context) ([]*apitypes.Invocation, error)
	InvokeWith(ctx context.Context, body InvokeBody) (*apitypes.Invocation, error)
	Invocation(ctx context.Context, id string) (*InvocationReply, error)
	WaitInvocation(ctx context.Context, id string) (*InvocationReply, error)
	CancelInvocation(ctx context.Context, id string) (*apitypes.Invocation, error)
	ArchiveInvocation(ctx context.Context, id string) (*InvocationReply, error)
	RebindInvocation(ctx context.Context, id string) (*apitypes.Invocation, error)
	Take(ctx context.Context, invocation string) (*apitypes.ActAttempt, error)
	Operations(ctx context.Context, invocation string) ([]OperationReply, error)
	Operation(ctx context.Context, id string) (*OperationReply, error)
	Reconcile(ctx context.Context, op string, body ReconcileBody) (*ReconcileReply, error)
}

var _ Fencer = (*Service)(nil)
