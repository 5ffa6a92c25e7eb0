package ui

import (
	"net/http"
	"strconv"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

// hostsView is the hosts page: each live host boot of the cluster, or
// the one daemon on a home of its own.
type hostsView struct {
	Hosts []hostRow
	// Single: the home's own store, no cluster: the only host is this
	// daemon. Store names the store (bbolt, etcd).
	Single  bool
	Store   string
	Slots   int
	Running int
}

type hostRow struct {
	apitypes.Host
	Age string // since the boot registered
}

func (h *handler) hosts(w http.ResponseWriter, r *http.Request) {
	if r.URL.RawQuery != "" {
		h.fail(w, r, http.StatusBadRequest, protocol.Errorf(protocol.CodeInvalidJob, "the hosts page takes no query"))
		return
	}
	hosts, err := h.src.Hosts(r.Context())
	if err != nil {
		h.fail(w, r, 0, err)
		return
	}
	// The overview says which store the daemon runs on: a cluster is one
	// on etcd, even while it has a single host.
	o, err := h.src.Overview(r.Context())
	if err != nil {
		h.fail(w, r, 0, err)
		return
	}
	now := h.opts.Now()
	v := hostsView{Single: o.Store != "etcd", Store: o.Store}
	for _, x := range hosts {
		row := hostRow{Host: x}
		if !x.Started.IsZero() {
			row.Age = human(now.Sub(x.Started).Truncate(time.Second))
		}
		v.Hosts = append(v.Hosts, row)
		v.Slots += x.Slots
		v.Running += len(x.Running)
	}
	h.render(w, r, http.StatusOK, "hosts", "Hosts", v)
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
