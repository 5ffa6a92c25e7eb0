package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// The neuron, its grant, its placement and the registered acts.

func (s *Server) neuronReply(ctx context.Context) (*NeuronReply, error) {
	e := s.engine()
	root, err := e.Root(ctx)
	if err != nil {
		return nil, err
	}
	g, err := e.Grant(ctx)
	if err != nil {
		return nil, err
	}
	return &NeuronReply{Root: root, Grant: g, Worker: e.Descriptor(root.Network)}, nil
}

func (s *Server) neuronShow(w http.ResponseWriter, r *http.Request) {
	if err := s.bodiless(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	rep, err := s.neuronReply(r.Context())
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, rep)
}

func (s *Server) neuronInit(w http.ResponseWriter, r *http.Request) {
	var body NeuronInitBody
	if err := s.body(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if _, _, err := s.engine().InitNeuron(r.Context(), body.Network); err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	// The daemon's own worker is bound at once, as at every start.
	s.sup.BindBoot(r.Context())
	rep, err := s.neuronReply(r.Context())
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusCreated, rep)
}

func (s *Server) neuronPolicy(w http.ResponseWriter, r *http.Request) {
	var body PolicyBody
	if err := s.body(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	root, err := s.engine().ChangePolicy(r.Context(), body.Policy, body.Epoch)
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, root)
}

func (s *Server) grantShow(w http.ResponseWriter, r *http.Request) {
	if err := s.bodiless(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	g, err := s.engine().Grant(r.Context())
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, g)
}

// resolveActs reads act names or tags with the daemon's registry.
func (s *Server) resolveActs(names []string) ([]uint64, error) {
	tags, err := s.engine().Acts().ResolveList(strings.Join(names, ","))
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInvalidJob, "%s", protocol.SafeMessage(err.Error()))
	}
	return tags, nil
}

func (s *Server) grantSet(w http.ResponseWriter, r *http.Request) {
	var body GrantBody
	if err := s.body(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	tags, err := s.resolveActs(body.Acts)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	g, err := s.engine().SetGrant(r.Context(), body.Revision, fencing.GrantSpec{Acts: tags, Progs: body.Progs, Disabled: body.Disabled})
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	// A grant may let waiting invocations go on.
	s.sup.RunAll()
	s.writeJSON(w, http.StatusOK, g)
}

func (s *Server) placementShow(w http.ResponseWriter, r *http.Request) {
	if err := s.bodiless(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	root, err := s.engine().Root(r.Context())
	if err != nil {
		s.writeFencingError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, root)
}

func (s *Server) placementMove(bind bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body PlacementBody
		if err := s.body(w, r, &body); err != nil {
			s.writeError(w, r, err)
			return
		}
		var root *store.Root
		var err error
		if bind {
			root, err = s.engine().Bind(r.Context(), body.Generation)
		} else {
			root, err = s.engine().Release(r.Context(), body.Generation)
		}
		if err != nil {
			s.writeFencingError(w, r, err)
			return
		}
		if bind {
			s.sup.RunAll()
		}
		s.writeJSON(w, http.StatusOK, root)
	}
}

func (s *Server) actsList(w http.ResponseWriter, r *http.Request) {
	if err := s.bodiless(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	reg := s.engine().Acts()
	out := []ActInfo{}
	for _, t := range reg.Tags() {
		out = append(out, ActInfo{Name: reg.Name(t), Tag: t, Hex: hostact.FormatTag(t)})
	}
	s.writeJSON(w, http.StatusOK, out)
}
