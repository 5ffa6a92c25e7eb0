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
	// Lease is the registration's lease on etcd: how long ago the boot
	// renewed it and what was left of it, when the hosts were read
	// (empty on a home's own store, which has none).
	Lease string
}

func (h *handler) hosts(w http.ResponseWriter, r *http.Request) {
	if r.URL.RawQuery != "" {
		h.fail(w, r, http.StatusBadRequest, protocol.Errorf(protocol.CodeInvalidJob, "the hosts page takes no query"))
		return
	}
	reply, err := h.src.Hosts(r.Context())
	if err != nil {
		h.fail(w, r, 0, err)
		return
	}
	now := h.opts.Now()
	// A cluster is one on etcd, even while it has a single host.
	v := hostsView{Single: reply.Store != "etcd", Store: reply.Store}
	for _, x := range reply.Hosts {
		row := hostRow{Host: x}
		if !x.Started.IsZero() {
			row.Age = human(now.Sub(x.Started).Truncate(time.Second))
		}
		if x.LeaseTTLMS != 0 {
			ttl, left := time.Duration(x.LeaseTTLMS)*time.Millisecond, time.Duration(x.LeaseLeftMS)*time.Millisecond
			renewed := "under 1s" // etcd counts a lease's time in seconds
			if ttl-left >= time.Second {
				renewed = human(ttl - left)
			}
			row.Lease = "renewed " + renewed + " ago · " + human(left) + " of " + human(ttl) + " left"
		}
		v.Hosts = append(v.Hosts, row)
		v.Slots += x.Slots
		v.Running += len(x.Running)
	}
	h.render(w, r, http.StatusOK, "hosts", "Hosts", v)
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
