package ui

import (
	"net/http"
	"sort"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

// fencingView is the fencing page: the neuron (never its key), its
// placement and grant, progs, invocations by status, and the operations
// whose attempt is unknown, each with its reconcile command.
type fencingView struct {
	// Root is nil when the home has no neuron.
	Root     *apitypes.Root
	Grant    *apitypes.Grant
	Worker   protocol.WorkerDescriptor
	Progs    []*apitypes.Prog
	ByStatus []statusCount
	// Invocations are the latest ones (at most maxInvocations).
	Invocations     []*apitypes.Invocation
	InvocationsMore int
	Unknown         []unknownOp
	UnknownMore     int
	Operations      int
	// ActNames names the registered acts by tag.
	ActNames map[uint64]string
}

// maxInvocations bounds the invocations the page lists, maxUnknown the
// operations with an unknown attempt (the rest are counted, and listed
// by `operation list`).
const (
	maxInvocations = 50
	maxUnknown     = 100
)

type statusCount struct {
	Status string
	N      int
}

// unknownOp is an operation's attempt that has no outcome: it may have
// run, and only the operator's reconciliation resolves it.
type unknownOp struct {
	Op      apitypes.OperationReply
	Attempt apitypes.OperationAttempt
	Value   string // the reconcile command, with a value
	Failed  string // the reconcile command, as failed
}

func (h *handler) fencing(w http.ResponseWriter, r *http.Request) {
	if r.URL.RawQuery != "" {
		h.fail(w, r, http.StatusBadRequest, protocol.Errorf(protocol.CodeInvalidJob, "the fencing page takes no query"))
		return
	}
	ctx := r.Context()
	n, err := h.src.Neuron(ctx)
	if err != nil {
		h.fail(w, r, 0, err)
		return
	}
	v := fencingView{}
	if n != nil {
		v.Root, v.Grant, v.Worker = n.Root, n.Grant, n.Worker
	}
	if v.Root != nil {
		acts, err := h.src.Acts(ctx)
		if err != nil {
			h.fail(w, r, 0, err)
			return
		}
		v.ActNames = map[uint64]string{}
		for _, a := range acts {
			v.ActNames[a.Tag] = a.Name
		}
		if v.Progs, err = h.src.Progs(ctx); err != nil {
			h.fail(w, r, 0, err)
			return
		}
		d, err := h.src.InvocationDigest(ctx, maxInvocations, maxUnknown)
		if err != nil {
			h.fail(w, r, 0, err)
			return
		}
		for s, c := range d.ByStatus {
			v.ByStatus = append(v.ByStatus, statusCount{s, c})
		}
		sort.Slice(v.ByStatus, func(i, j int) bool { return v.ByStatus[i].Status < v.ByStatus[j].Status })
		v.Invocations, v.InvocationsMore = d.Newest, d.Invocations-len(d.Newest)
		v.UnknownMore = d.UnknownMore
		v.Operations = d.Operations
		for _, op := range d.Unknown {
			for _, a := range op.Attempts {
				if !a.Unknown {
					continue
				}
				base := h.cli("operation reconcile " + op.ID + " --attempt " + itoa(uint64(a.N)))
				v.Unknown = append(v.Unknown, unknownOp{Op: op, Attempt: a,
					Value: base + " --value VALUE", Failed: base + " --failed 'MESSAGE'"})
			}
		}
	}
	h.render(w, r, http.StatusOK, "fencing", "Fencing", v)
}
