package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/ui"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fenceservice"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
)

// The dashboard (supervisor/api/ui) is served under /ui/ on the API's
// socket. Its pages read through uiSource: the supervisor calls and the
// conversions the JSON routes make, so a page shows what the route of
// the same name answers, and its errors are the routes' (answerOf).

// registerUI mounts the dashboard, and its root without the slash (the
// mux would answer that with a redirect of its own for any method).
func (s *Server) registerUI(mux *http.ServeMux) {
	h := ui.New(uiSource{s}, ui.Options{Logger: s.log, Home: s.sup.Home()})
	mux.Handle(ui.Prefix, h)
	mux.Handle(strings.TrimSuffix(ui.Prefix, "/"), h)
}

// uiSource is the server as the dashboard's Source.
type uiSource struct{ s *Server }

var _ ui.Source = uiSource{}

func (u uiSource) Status(ctx context.Context, id string) (*apitypes.JobStatus, error) {
	st, err := u.s.sup.Status(ctx, id)
	if err != nil {
		return nil, answerOf(err)
	}
	v := JobStatusOf(st)
	return &v, nil
}

func (u uiSource) Events(ctx context.Context, id string) ([]apitypes.Event, error) {
	ev, err := u.s.sup.Events(ctx, id)
	if err != nil {
		return nil, answerOf(err)
	}
	return EventsOf(ev), nil
}

func (u uiSource) Spec(ctx context.Context, id string) ([]byte, error) {
	raw, err := u.s.sup.Spec(ctx, id)
	if err != nil {
		return nil, answerOf(err)
	}
	return raw, nil
}

func (u uiSource) Hosts(ctx context.Context) (*apitypes.HostsReply, error) {
	hosts, err := u.s.sup.Hosts(ctx)
	if err != nil {
		return nil, answerOf(err)
	}
	return &apitypes.HostsReply{Hosts: HostsOf(hosts), Store: u.s.sup.StoreDriver()}, nil
}

func (u uiSource) Capabilities(ctx context.Context) (*apitypes.CapabilitiesReply, error) {
	reply, err := CapabilitiesReplyOf(u.s.sup.Capabilities(), u.s.sup.Limits(), u.s.sup.Host())
	if err != nil {
		return nil, answerOf(err)
	}
	return &reply, nil
}

// Neuron answers an empty reply (no root) where the home has no neuron.
func (u uiSource) Neuron(ctx context.Context) (*fenceservice.NeuronReply, error) {
	n, err := u.s.fence().Neuron(ctx)
	if e, ok := fencing.AsRefusal(err); ok && e.Refusal == fencing.Missing {
		return &fenceservice.NeuronReply{}, nil
	}
	if err != nil {
		return nil, fenceError(err)
	}
	return n, nil
}

func (u uiSource) Acts(ctx context.Context) ([]fenceservice.ActInfo, error) {
	a, err := u.s.fence().Acts(ctx)
	return a, fenceError(err)
}

func (u uiSource) Progs(ctx context.Context) ([]*apitypes.Prog, error) {
	p, err := u.s.fence().Progs(ctx)
	return p, fenceError(err)
}

func (u uiSource) InvocationDigest(ctx context.Context, newest, maxUnknown int) (*fenceservice.InvocationDigest, error) {
	d, err := u.s.fence().InvocationDigest(ctx, newest, maxUnknown)
	return d, fenceError(err)
}

// fenceError is an engine error as the fencing routes answer it.
func fenceError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := fencing.AsRefusal(err); ok {
		return fencing.ProtocolError(err)
	}
	return answerOf(err)
}
