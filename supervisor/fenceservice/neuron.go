package fenceservice

import (
	"context"
	"strings"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

// The neuron, its grant, its placement and the registered acts.

// Neuron is the neuron's root, its grant and this boot's worker.
func (s *Service) Neuron(ctx context.Context) (*NeuronReply, error) {
	root, err := s.e.Root(ctx)
	if err != nil {
		return nil, err
	}
	g, err := s.e.Grant(ctx)
	if err != nil {
		return nil, err
	}
	return &NeuronReply{Root: RootOf(root), Grant: GrantOf(g), Worker: s.e.Descriptor(root.Network)}, nil
}

// InitNeuron makes the neuron pinned to network (the same again is the
// same neuron); the scheduler then binds its worker.
func (s *Service) InitNeuron(ctx context.Context, network string) (*NeuronReply, error) {
	if _, _, err := s.e.InitNeuron(ctx, network); err != nil {
		return nil, err
	}
	s.sched.BindBoot(ctx)
	return s.Neuron(ctx)
}

// ChangePolicy moves the neuron to policy under a larger epoch.
func (s *Service) ChangePolicy(ctx context.Context, policy neuron.Particle, epoch uint64) (*apitypes.Root, error) {
	return rootOf(s.e.ChangePolicy(ctx, policy, epoch))
}

func (s *Service) Grant(ctx context.Context) (*apitypes.Grant, error) { return grantOf(s.e.Grant(ctx)) }

// resolveActs reads act names or tags with the engine's registry.
func (s *Service) resolveActs(names []string) ([]uint64, error) {
	tags, err := s.e.Acts().ResolveList(strings.Join(names, ","))
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInvalidJob, "%s", protocol.SafeMessage(err.Error()))
	}
	return tags, nil
}

// SetGrant replaces the grant (a CAS from body.Revision); a grant may
// let waiting invocations go on.
func (s *Service) SetGrant(ctx context.Context, body GrantBody) (*apitypes.Grant, error) {
	tags, err := s.resolveActs(body.Acts)
	if err != nil {
		return nil, err
	}
	g, err := s.e.SetGrant(ctx, body.Revision, fencing.GrantSpec{Acts: tags, Progs: body.Progs, Disabled: body.Disabled})
	if err != nil {
		return nil, err
	}
	s.sched.RunAll()
	return GrantOf(g), nil
}

// Placement is the root: its generation and worker.
func (s *Service) Placement(ctx context.Context) (*apitypes.Root, error) {
	return rootOf(s.e.Root(ctx))
}

// Bind places this boot's worker (a CAS from generation); the
// invocations that waited for a worker may go on.
func (s *Service) Bind(ctx context.Context, generation uint64) (*apitypes.Root, error) {
	root, err := s.e.Bind(ctx, generation)
	if err != nil {
		return nil, err
	}
	s.sched.RunAll()
	return RootOf(root), nil
}

// Release leaves no worker placed (a CAS from generation).
func (s *Service) Release(ctx context.Context, generation uint64) (*apitypes.Root, error) {
	return rootOf(s.e.Release(ctx, generation))
}

// Acts lists the registered acts.
func (s *Service) Acts(context.Context) ([]ActInfo, error) {
	reg := s.e.Acts()
	out := []ActInfo{}
	for _, t := range reg.Tags() {
		out = append(out, ActInfo{Name: reg.Name(t), Tag: t, Hex: hostact.FormatTag(t)})
	}
	return out, nil
}
