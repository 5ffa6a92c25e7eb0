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
	Operations      int
	// ActNames names the registered acts by tag.
	ActNames map[uint64]string
}

// maxInvocations bounds the invocations the page lists.
const maxInvocations = 50

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
		invs, err := h.src.Invocations(ctx)
		if err != nil {
			h.fail(w, r, 0, err)
			return
		}
		counts := map[string]int{}
		for _, inv := range invs {
			counts[inv.Status]++
		}
		for s, c := range counts {
			v.ByStatus = append(v.ByStatus, statusCount{s, c})
		}
		sort.Slice(v.ByStatus, func(i, j int) bool { return v.ByStatus[i].Status < v.ByStatus[j].Status })
		sort.SliceStable(invs, func(i, j int) bool { return invs[i].Seq > invs[j].Seq })
		if len(invs) > maxInvocations {
			v.InvocationsMore = len(invs) - maxInvocations
			invs = invs[:maxInvocations]
		}
		v.Invocations = invs
		ops, err := h.src.Operations(ctx)
		if err != nil {
			h.fail(w, r, 0, err)
			return
		}
		v.Operations = len(ops)
		for _, op := range ops {
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
