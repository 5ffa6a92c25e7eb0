package fenceservice

import (
	"context"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
)

// Installed progs: their list, installation, revisions and lifecycle.

func (s *Service) Progs(ctx context.Context) ([]*apitypes.Prog, error) {
	ps, err := s.e.Progs(ctx)
	if err != nil {
		return nil, err
	}
	return ProgsOf(ps), nil
}

func (s *Service) Prog(ctx context.Context, id string) (*apitypes.Prog, error) {
	return progOf(s.e.Prog(ctx, id))
}

// ProgSpecOf reads a prog's bundle and settings (its acts resolved).
func ProgSpecOf(bundle []byte, tags []uint64, stepLimit, maxInFlight uint64) (fencing.ProgSpec, error) {
	p, err := protocol.ParseBundle(bundle)
	if err != nil {
		return fencing.ProgSpec{}, err
	}
	return fencing.ProgSpec{Program: p.Formula, Name: p.Name, Acts: tags, StepLimit: stepLimit, MaxInFlight: maxInFlight}, nil
}

// InstallProg installs a prog (the same prog again answers it, created
// false).
func (s *Service) InstallProg(ctx context.Context, body ProgBody) (*ProgReply, error) {
	tags, err := s.resolveActs(body.Acts)
	if err != nil {
		return nil, err
	}
	spec, err := ProgSpecOf(body.Bundle, tags, body.StepLimit, body.MaxInFlight)
	if err != nil {
		return nil, err
	}
	p, created, err := s.e.InstallProg(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &ProgReply{Prog: ProgOf(p), Created: created}, nil
}

// UpgradeProg makes the body's bundle the prog's next revision (a CAS
// from body.Revision); the same spec as the current revision answers it,
// created false. A new revision makes the live invocations of the old
// one stale: they are let run to their end.
func (s *Service) UpgradeProg(ctx context.Context, id string, body UpgradeBody) (*ProgReply, error) {
	// Absent acts keep the current revision's (the engine's nil);
	// present ones are resolved, an empty list asking for none.
	var tags []uint64
	if body.Acts != nil {
		var err error
		if tags, err = s.resolveActs(body.Acts); err != nil {
			return nil, err
		}
		if tags == nil {
			tags = []uint64{}
		}
	}
	spec, err := ProgSpecOf(body.Bundle, tags, body.StepLimit, body.MaxInFlight)
	if err != nil {
		return nil, err
	}
	p, created, err := s.e.UpgradeProg(ctx, id, body.Revision, spec)
	if err != nil {
		return nil, err
	}
	if created {
		s.sched.RunAll()
	}
	return &ProgReply{Prog: ProgOf(p), Created: created}, nil
}

// ProgRevisions lists every revision of a prog, the first one first.
func (s *Service) ProgRevisions(ctx context.Context, id string) ([]*apitypes.Prog, error) {
	ps, err := s.e.ProgRevisions(ctx, id)
	if err != nil {
		return nil, err
	}
	return ProgsOf(ps), nil
}

func (s *Service) PauseProg(ctx context.Context, id string) (*apitypes.Prog, error) {
	return progOf(s.e.PauseProg(ctx, id))
}

// ResumeProg makes a paused prog active: its invocations may go on.
func (s *Service) ResumeProg(ctx context.Context, id string) (*apitypes.Prog, error) {
	p, err := s.e.ResumeProg(ctx, id)
	if err != nil {
		return nil, err
	}
	s.sched.RunAll()
	return ProgOf(p), nil
}

func (s *Service) RetireProg(ctx context.Context, id string) (*apitypes.Prog, error) {
	return progOf(s.e.RetireProg(ctx, id))
}
