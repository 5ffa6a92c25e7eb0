package etcd

import "time"

// hearing is how long a read with a patience (store.WithReadPatience)
// has gone without an answer from etcd: it gives up, ErrUnavailable,
// once etcd has not answered for the patience, counted from the read's
// start or etcd's last answer to it. A read that keeps being answered (a
// long scan) goes on. One read's runs use it one after the other, never
// at once.
type hearing struct {
	patience time.Duration
	last     time.Time
}

func (h *hearing) answered() { h.last = time.Now() }

func (h *hearing) exhausted() bool { return time.Since(h.last) >= h.patience }

// deadline is when a request sent now must have been answered: within
// the request timeout, and before the patience runs out.
func (h *hearing) deadline(requestTimeout time.Duration) time.Time {
	d := time.Now().Add(requestTimeout)
	if end := h.last.Add(h.patience); end.Before(d) {
		return end
	}
	return d
}
