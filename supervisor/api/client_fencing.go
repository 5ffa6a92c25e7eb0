package api

import (
	"context"
	"net/url"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fenceservice"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

// The fencing routes (fencing_routes.go) for the CLI: the fencing
// service's methods (supervisor/fenceservice) over the daemon's socket,
// so that the CLI holds one interface whether a daemon owns the home or
// not (cmd/cyber-supervisor, fencer).

func (c *Client) InitNeuron(ctx context.Context, network string) (*NeuronReply, error) {
	var out NeuronReply
	return &out, c.do(ctx, "POST", "/v1/neuron", NeuronInitBody{Network: network}, &out)
}

func (c *Client) Neuron(ctx context.Context) (*NeuronReply, error) {
	var out NeuronReply
	return &out, c.do(ctx, "GET", "/v1/neuron", nil, &out)
}

func (c *Client) ChangePolicy(ctx context.Context, policy neuron.Particle, epoch uint64) (*apitypes.Root, error) {
	var out apitypes.Root
	return &out, c.do(ctx, "POST", "/v1/neuron/policy", PolicyBody{Policy: policy, Epoch: epoch}, &out)
}

func (c *Client) Grant(ctx context.Context) (*apitypes.Grant, error) {
	var out apitypes.Grant
	return &out, c.do(ctx, "GET", "/v1/grant", nil, &out)
}

func (c *Client) SetGrant(ctx context.Context, body GrantBody) (*apitypes.Grant, error) {
	var out apitypes.Grant
	return &out, c.do(ctx, "PUT", "/v1/grant", body, &out)
}

func (c *Client) Placement(ctx context.Context) (*apitypes.Root, error) {
	var out apitypes.Root
	return &out, c.do(ctx, "GET", "/v1/placement", nil, &out)
}

func (c *Client) Bind(ctx context.Context, generation uint64) (*apitypes.Root, error) {
	var out apitypes.Root
	return &out, c.do(ctx, "POST", "/v1/placement/bind", PlacementBody{Generation: generation}, &out)
}

func (c *Client) Release(ctx context.Context, generation uint64) (*apitypes.Root, error) {
	var out apitypes.Root
	return &out, c.do(ctx, "POST", "/v1/placement/release", PlacementBody{Generation: generation}, &out)
}

func (c *Client) Acts(ctx context.Context) ([]ActInfo, error) {
	var out []ActInfo
	return out, c.do(ctx, "GET", "/v1/acts", nil, &out)
}

func (c *Client) InstallProg(ctx context.Context, body ProgBody) (*ProgReply, error) {
	var out ProgReply
	return &out, c.do(ctx, "POST", "/v1/progs", body, &out)
}

func (c *Client) Progs(ctx context.Context) ([]*apitypes.Prog, error) {
	var out []*apitypes.Prog
	return out, c.do(ctx, "GET", "/v1/progs", nil, &out)
}

func (c *Client) Prog(ctx context.Context, id string) (*apitypes.Prog, error) {
	var out apitypes.Prog
	return &out, c.do(ctx, "GET", "/v1/progs/"+url.PathEscape(id), nil, &out)
}

func (c *Client) PauseProg(ctx context.Context, id string) (*apitypes.Prog, error) {
	return c.moveProg(ctx, id, "pause")
}

func (c *Client) ResumeProg(ctx context.Context, id string) (*apitypes.Prog, error) {
	return c.moveProg(ctx, id, "resume")
}

func (c *Client) RetireProg(ctx context.Context, id string) (*apitypes.Prog, error) {
	return c.moveProg(ctx, id, "retire")
}

func (c *Client) moveProg(ctx context.Context, id, action string) (*apitypes.Prog, error) {
	var out apitypes.Prog
	return &out, c.do(ctx, "POST", "/v1/progs/"+url.PathEscape(id)+"/"+action, nil, &out)
}

// UpgradeProg is safe to repeat: the same spec again once it is the
// current revision answers it (created false).
func (c *Client) UpgradeProg(ctx context.Context, id string, body UpgradeBody) (*ProgReply, error) {
	var out ProgReply
	return &out, c.do(ctx, "POST", "/v1/progs/"+url.PathEscape(id)+"/upgrade", body, &out)
}

// ProgRevisions lists every revision of a prog, the first one first.
func (c *Client) ProgRevisions(ctx context.Context, id string) ([]*apitypes.Prog, error) {
	var out []*apitypes.Prog
	return out, c.do(ctx, "GET", "/v1/progs/"+url.PathEscape(id)+"/revisions", nil, &out)
}

// Invoke is sent once (see send): an ErrUnavailable answer leaves it
// unknown whether the invocation was made (`invocation list` tells).
func (c *Client) Invoke(ctx context.Context, prog string, inputs []uint64) (*apitypes.Invocation, error) {
	return c.InvokeWith(ctx, InvokeBody{Prog: prog, Inputs: apitypes.U64s(inputs)})
}

// InvokeWith is Invoke with a parent and its delegated steps; it is
// sent once too.
func (c *Client) InvokeWith(ctx context.Context, body InvokeBody) (*apitypes.Invocation, error) {
	if body.Inputs == nil {
		body.Inputs = apitypes.U64s{}
	}
	var out apitypes.Invocation
	return &out, c.doOnce(ctx, "POST", "/v1/invocations", body, &out)
}

func (c *Client) Invocations(ctx context.Context) ([]*apitypes.Invocation, error) {
	var out []*apitypes.Invocation
	return out, c.do(ctx, "GET", "/v1/invocations", nil, &out)
}

func (c *Client) Invocation(ctx context.Context, id string) (*InvocationReply, error) {
	var out InvocationReply
	return &out, c.do(ctx, "GET", "/v1/invocations/"+url.PathEscape(id), nil, &out)
}

// WaitInvocation long-polls until the invocation has ended, or the
// daemon's long-poll bound passed (then it answers it as it is).
func (c *Client) WaitInvocation(ctx context.Context, id string) (*InvocationReply, error) {
	var out InvocationReply
	return &out, c.do(ctx, "GET", "/v1/invocations/"+url.PathEscape(id)+"/wait", nil, &out)
}

func (c *Client) CancelInvocation(ctx context.Context, id string) (*apitypes.Invocation, error) {
	var out apitypes.Invocation
	return &out, c.moveInvocation(ctx, id, "cancel", &out)
}

func (c *Client) ArchiveInvocation(ctx context.Context, id string) (*InvocationReply, error) {
	var out InvocationReply
	return &out, c.moveInvocation(ctx, id, "archive", &out)
}

func (c *Client) RebindInvocation(ctx context.Context, id string) (*apitypes.Invocation, error) {
	var out apitypes.Invocation
	return &out, c.moveInvocation(ctx, id, "rebind", &out)
}

func (c *Client) moveInvocation(ctx context.Context, id, action string, out any) error {
	return c.do(ctx, "POST", "/v1/invocations/"+url.PathEscape(id)+"/"+action, nil, out)
}

func (c *Client) Take(ctx context.Context, invocation string) (*apitypes.ActAttempt, error) {
	var out apitypes.ActAttempt
	return &out, c.do(ctx, "POST", "/v1/invocations/"+url.PathEscape(invocation)+"/take", nil, &out)
}

func (c *Client) Operations(ctx context.Context, invocation string) ([]OperationReply, error) {
	path := "/v1/operations"
	if invocation != "" {
		path += "?invocation=" + url.QueryEscape(invocation)
	}
	var out []OperationReply
	return out, c.do(ctx, "GET", path, nil, &out)
}

func (c *Client) Operation(ctx context.Context, id string) (*OperationReply, error) {
	var out OperationReply
	return &out, c.do(ctx, "GET", "/v1/operations/"+url.PathEscape(id), nil, &out)
}

func (c *Client) Reconcile(ctx context.Context, op string, body ReconcileBody) (*ReconcileReply, error) {
	var out ReconcileReply
	return &out, c.do(ctx, "POST", "/v1/operations/"+url.PathEscape(op)+"/reconcile", body, &out)
}

var _ fenceservice.Fencer = (*Client)(nil)
