package bolt

import (
	"bytes"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// Invocations: live and archived, their trees, indexes and reservations.

func (c *fencingCheck) invocation(k, p []byte) {
	var inv store.Invocation
	if !c.decode(bucketInvocations, k, p, &inv) {
		return
	}
	if inv.ID != string(k) || !inv.Status.Valid() || c.progs[inv.Prog] == nil || inv.ProgRevision > c.progs[inv.Prog].Revision {
		c.rep.problem("invocations/%s: names invocation %q of prog %q revision %d (status %q)", store.PrintableKey(k), inv.ID, inv.Prog, inv.ProgRevision, inv.Status)
	}
	if inv.Charged+inv.Delegated+inv.Held > inv.Limit || inv.Charged+inv.Delegated+inv.Held < inv.Charged {
		c.rep.problem("invocation %s: charged %d + delegated %d + held %d exceed its limit %d", inv.ID, inv.Charged, inv.Delegated, inv.Held, inv.Limit)
	}
	c.invs[inv.ID] = &inv
}

// collectLive starts the set of all invocations with the live ones; the
// archive adds the rest.
func (c *fencingCheck) collectLive() {
	c.all = make(map[string]*store.Invocation, len(c.invs))
	for id, inv := range c.invs {
		c.all[id] = inv
	}
}

func (c *fencingCheck) archivedInvocation(k, p []byte) {
	var inv store.Invocation
	if !c.decode(bucketArchive, k, p, &inv) {
		return
	}
	if inv.ID != string(k) || !inv.Status.Terminal() || c.invs[inv.ID] != nil {
		c.rep.problem("archive/%s: names invocation %q (status %q)", store.PrintableKey(k), inv.ID, inv.Status)
	}
	c.archived[inv.ID] = true
	c.all[inv.ID] = &inv
}

// child: every child is indexed under its parent, and both are in the
// same place (live or archived: a tree is archived whole).
func (c *fencingCheck) child(k, _ []byte) {
	c.rep.Fencing++
	parent, child, ok := bytes.Cut(k, []byte{0})
	pi, ci := c.all[string(parent)], c.all[string(child)]
	if !ok || pi == nil || ci == nil || ci.Parent != pi.ID || c.archived[pi.ID] != c.archived[ci.ID] {
		c.rep.problem("children/%s: not a child of its parent", store.PrintableKey(k))
		return
	}
	c.delegated[pi.ID] += ci.Limit
	c.indexed[ci.ID] = true
}

// trees: a child is in the index, and a parent's delegated steps are its
// children's limits.
func (c *fencingCheck) trees() {
	for id, inv := range c.all {
		if inv.Parent != "" && !c.indexed[id] {
			c.rep.problem("invocation %s names parent %s but is not in the children index", id, inv.Parent)
		}
		if inv.Delegated != c.delegated[id] {
			c.rep.problem("invocation %s: %d steps delegated, its children's limits are %d", id, inv.Delegated, c.delegated[id])
		}
	}
}

func (c *fencingCheck) progLive(k, _ []byte) {
	c.rep.Fencing++
	prog, inv, ok := bytes.Cut(k, []byte{0})
	i := c.invs[string(inv)]
	if !ok || i == nil || i.Prog != string(prog) || i.Status.Terminal() {
		c.rep.problem("prog_live/%s: not a live invocation of its prog", store.PrintableKey(k))
	}
	c.live[string(inv)] = true
}

func (c *fencingCheck) reservation(k, p []byte) {
	var r store.Reservation
	if !c.decode(bucketReservations, k, p, &r) {
		return
	}
	i := c.invs[string(k)]
	if r.Invocation != string(k) || i == nil || i.Held != r.Steps || i.Charged != r.Base {
		c.rep.problem("reservations/%s: does not match its invocation", store.PrintableKey(k))
	}
	c.reserved[string(k)] = true
}

// liveIndexes: a live invocation is in prog_live, and one that holds
// steps has the reservation that holds them.
func (c *fencingCheck) liveIndexes() {
	for id, inv := range c.invs {
		if !inv.Status.Terminal() && !c.live[id] {
			c.rep.problem("invocation %s is %s but not in the prog_live index", id, inv.Status)
		}
		if inv.Held != 0 && !c.reserved[id] {
			c.rep.problem("invocation %s holds %d steps without a reservation", id, inv.Held)
		}
	}
}
