package bolt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// maxInputs bounds an invocation's inputs.
const maxInputs = 4096

// decodeStrict reads a record refusing unknown fields: a record that has
// fields this build does not know was not written by it.
func decodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the record")
	}
	return nil
}

func (t *boltTx) Prog(id string) (*store.Prog, error) { return t.prog(id, false) }

// progView is a prog for the store's own checks: not a copy, never to
// be changed or kept past the transaction.
func (t *boltTx) progView(id string) (*store.Prog, error) { return t.prog(id, true) }

func (t *boltTx) prog(id string, share bool) (*store.Prog, error) {
	raw, err := t.bucket(bucketProgs).get([]byte(id))
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, fmt.Errorf("prog %q: %w", id, store.ErrNotFound)
	}
	var checkErr error
	p, err := readRecordAs(t.s.fc.progs, id, raw, func(p *store.Prog) error {
		if p.ID != id {
			checkErr = fmt.Errorf("prog %q: %w: the record names %q", id, store.ErrInvariant, p.ID)
		}
		return checkErr
	}, share)
	if checkErr != nil {
		return nil, checkErr
	}
	if err != nil {
		return nil, fmt.Errorf("decode prog %q: %w", id, err)
	}
	return p, nil
}

func (t *boltTx) ForEachProg(fn func(*store.Prog) bool) error {
	return t.bucket(bucketProgs).each(nil, func(k, _ []byte) (bool, error) {
		p, err := t.Prog(string(k))
		if err != nil {
			return false, err
		}
		return fn(p), nil
	})
}

func (t *boltTx) CreateProg(p *store.Prog) error {
	root, err := t.Root()
	if err != nil {
		return fmt.Errorf("create prog: %w", err)
	}
	switch {
	case p.Neuron != root.Neuron:
		return fmt.Errorf("create prog: %w: another neuron's prog", store.ErrConflict)
	case p.ID != store.ProgID(p.Neuron, p.Particle):
		return fmt.Errorf("create prog: %w: id %q is not derived from its neuron and program", store.ErrInvariant, p.ID)
	case p.Environment != protocol.EnvHostAct:
		return fmt.Errorf("create prog: %w: environment %q, want %s", store.ErrInvariant, p.Environment, protocol.EnvHostAct)
	case p.State != store.ProgInstalled || p.Revision != 0:
		return fmt.Errorf("create prog: %w: a prog starts installed, at revision 0", store.ErrInvariant)
	case p.StepLimit == 0 || p.MaxInFlight == 0:
		return fmt.Errorf("create prog: %w: step limit and max in flight must be at least 1", store.ErrInvariant)
	case len(p.Acts) > maxActs || !sortedUnique(p.Acts):
		return fmt.Errorf("create prog: %w: acts must be sorted, unique, at most %d", store.ErrInvariant, maxActs)
	}
	program, err := store.DecodeNoun(p.Program)
	if err != nil {
		return fmt.Errorf("create prog: %w: program: %v", store.ErrInvariant, err)
	}
	if program.Particle() != p.Particle {
		return fmt.Errorf("create prog: %w: the particle is not the program's", store.ErrInvariant)
	}
	if t.has(bucketProgs, []byte(p.ID)) {
		return fmt.Errorf("create prog %s: %w: the prog exists", p.ID, store.ErrConflict)
	}
	return t.bucket(bucketProgs).putJSON([]byte(p.ID), p)
}

func (t *boltTx) PutProg(p *store.Prog) error {
	old, err := t.Prog(p.ID)
	if err != nil {
		return fmt.Errorf("put prog: %w", err)
	}
	if p.Neuron != old.Neuron || p.Revision != old.Revision || p.Environment != old.Environment ||
		!bytes.Equal(p.Program, old.Program) || p.Particle != old.Particle || p.Name != old.Name ||
		p.StepLimit != old.StepLimit || p.MaxInFlight != old.MaxInFlight ||
		!slices.Equal(p.Acts, old.Acts) || !p.Created.Equal(old.Created) {
		return fmt.Errorf("prog %s: %w: only its lifecycle state changes", p.ID, store.ErrConflict)
	}
	if p.State != old.State {
		if !old.State.CanMove(p.State) {
			return fmt.Errorf("prog %s: %w: %s cannot become %s", p.ID, store.ErrInvariant, old.State, p.State)
		}
		if p.State == store.ProgRetiring || p.State == store.ProgRetired {
			n, err := t.LiveInvocations(p.ID)
			if err != nil {
				return err
			}
			if n > 0 {
				return fmt.Errorf("prog %s: %w: %d invocations are live", p.ID, store.ErrInvariant, n)
			}
		}
	}
	return t.bucket(bucketProgs).putJSON([]byte(p.ID), p)
}

func progLiveKey(prog, inv string) []byte {
	k := make([]byte, 0, len(prog)+1+len(inv))
	return append(append(append(k, prog...), 0), inv...)
}

// LiveInvocations counts the prog's invocations that have not ended.
func (t *boltTx) LiveInvocations(prog string) (int, error) {
	n := 0
	err := t.bucket(bucketProgLive).each(append([]byte(prog), 0), func(_, _ []byte) (bool, error) {
		n++
		return true, nil
	})
	return n, err
}

func (t *boltTx) Invocation(id string) (*store.Invocation, error) {
	raw, err := t.bucket(bucketInvocations).get([]byte(id))
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, fmt.Errorf("invocation %q: %w", id, store.ErrNotFound)
	}
	var checkErr error
	inv, err := readRecord(t.s.fc.invocations, id, raw, func(inv *store.Invocation) error {
		if inv.ID != id {
			checkErr = fmt.Errorf("invocation %q: %w: the record names %q", id, store.ErrInvariant, inv.ID)
		}
		return checkErr
	})
	if checkErr != nil {
		return nil, checkErr
	}
	if err != nil {
		return nil, fmt.Errorf("decode invocation %q: %w", id, err)
	}
	return inv, nil
}

func decodeInvocation(id string, raw []byte) (*store.Invocation, error) {
	inv := new(store.Invocation)
	if err := decodeStrict(raw, inv); err != nil {
		return nil, fmt.Errorf("decode invocation %q: %w", id, err)
	}
	if inv.ID != id {
		return nil, fmt.Errorf("invocation %q: %w: the record names %q", id, store.ErrInvariant, inv.ID)
	}
	return inv, nil
}

func (t *boltTx) ForEachInvocation(fn func(*store.Invocation) bool) error {
	return t.bucket(bucketInvocations).each(nil, func(k, v []byte) (bool, error) {
		inv, err := decodeInvocation(string(k), v)
		if err != nil {
			return false, err
		}
		return fn(inv), nil
	})
}

func (t *boltTx) CreateInvocation(inv *store.Invocation) error {
	root, err := t.Root()
	if err != nil {
		return fmt.Errorf("create invocation: %w", err)
	}
	p, err := t.Prog(inv.Prog)
	if err != nil {
		return fmt.Errorf("create invocation: %w", err)
	}
	switch {
	case p.State != store.ProgActive:
		return fmt.Errorf("create invocation: %w: prog %s is %s", store.ErrInvariant, p.ID, p.State)
	case inv.Neuron != root.Neuron || inv.Network != root.Network:
		return fmt.Errorf("create invocation: %w: another neuron or network", store.ErrConflict)
	case inv.ProgRevision != p.Revision:
		return fmt.Errorf("create invocation: %w: it must pin the prog's revision", store.ErrInvariant)
	case inv.Parent == "" && inv.Limit != p.StepLimit:
		return fmt.Errorf("create invocation: %w: a top-level invocation's limit is the prog's step limit", store.ErrInvariant)
	case inv.Parent != "" && (inv.Limit == 0 || inv.Limit > p.StepLimit):
		return fmt.Errorf("create invocation: %w: a child's allowance is 1 to its prog's step limit %d", store.ErrInvariant, p.StepLimit)
	case inv.Epoch != root.Epoch:
		return fmt.Errorf("create invocation: %w: epoch %d is not the current %d", store.ErrInvariant, inv.Epoch, root.Epoch)
	case inv.Status != store.InvocationRunning || inv.Charged != 0 || inv.Delegated != 0 || inv.Held != 0 || inv.Ordinal != 0 || inv.Pending != "" ||
		inv.Result != nil || inv.Output != nil || inv.Error != nil:
		return fmt.Errorf("create invocation: %w: an invocation starts running, with nothing charged or proposed", store.ErrInvariant)
	case len(inv.Inputs) > maxInputs || slices.ContainsFunc(inv.Inputs, func(v uint64) bool { return v >= field.P }):
		return fmt.Errorf("create invocation: %w: at most %d inputs, each a canonical field value", store.ErrInvariant, maxInputs)
	}
	live, err := t.LiveInvocations(p.ID)
	if err != nil {
		return err
	}
	if uint64(live) >= p.MaxInFlight {
		return fmt.Errorf("create invocation: %w: prog %s has %d live invocations, at most %d", store.ErrInvariant, p.ID, live, p.MaxInFlight)
	}
	var parent *store.Invocation
	if inv.Parent != "" {
		if parent, err = t.delegate(inv); err != nil {
			return err
		}
	}
	seq, err := t.tx.Bucket(bucketInvocations).NextSequence()
	if err != nil {
		return err
	}
	inv.Seq, inv.ID = seq, store.InvocationID(inv.Neuron, inv.Prog, seq)
	if parent != nil {
		if err := t.putInvocation(parent); err != nil {
			return err
		}
		if err := t.bucket(bucketChildren).put(childKey(parent.ID, inv.ID), nil); err != nil {
			return err
		}
	}
	if err := t.bucket(bucketProgLive).put(progLiveKey(inv.Prog, inv.ID), nil); err != nil {
		return err
	}
	return t.putInvocation(inv)
}

func (t *boltTx) PutInvocation(inv *store.Invocation) error {
	old, err := t.Invocation(inv.ID)
	if err != nil {
		return fmt.Errorf("put invocation: %w", err)
	}
	switch {
	case old.Status.Terminal():
		return fmt.Errorf("invocation %s: %w: it ended %s", inv.ID, store.ErrInvariant, old.Status)
	case inv.Seq != old.Seq || inv.Neuron != old.Neuron || inv.Network != old.Network || inv.Prog != old.Prog ||
		inv.ProgRevision != old.ProgRevision || inv.Parent != old.Parent || !slices.Equal(inv.Inputs, old.Inputs) ||
		inv.Limit != old.Limit || !inv.Created.Equal(old.Created):
		return fmt.Errorf("invocation %s: %w: its identity is immutable", inv.ID, store.ErrConflict)
	case inv.Charged != old.Charged || inv.Delegated != old.Delegated || inv.Held != old.Held || inv.Ordinal != old.Ordinal ||
		inv.Pending != old.Pending:
		return fmt.Errorf("invocation %s: %w: steps and operations move only through reservations, children and operations", inv.ID, store.ErrInvariant)
	case inv.Epoch < old.Epoch:
		return fmt.Errorf("invocation %s: %w: epoch %d is below %d", inv.ID, store.ErrInvariant, inv.Epoch, old.Epoch)
	case inv.Status != old.Status && !inv.Status.Terminal():
		return fmt.Errorf("invocation %s: %w: running and waiting follow its operations", inv.ID, store.ErrInvariant)
	case !inv.Status.Terminal() && (inv.Result != nil || inv.Output != nil || inv.Error != nil):
		return fmt.Errorf("invocation %s: %w: a result or error ends it", inv.ID, store.ErrInvariant)
	case inv.Status == store.InvocationCompleted && inv.Result == nil:
		return fmt.Errorf("invocation %s: %w: completed without a result", inv.ID, store.ErrInvariant)
	case inv.Status != store.InvocationCompleted && inv.Status != store.InvocationConflict && inv.Result != nil:
		return fmt.Errorf("invocation %s: %w: only a completed invocation (or a conflict's stale one) has a result", inv.ID, store.ErrInvariant)
	}
	if inv.Status.Terminal() {
		if old.Pending != "" {
			return fmt.Errorf("invocation %s: %w: operation %s is not consumed", inv.ID, store.ErrInvariant, old.Pending)
		}
		if old.Held != 0 {
			return fmt.Errorf("invocation %s: %w: a reservation of %d steps is open", inv.ID, store.ErrInvariant, old.Held)
		}
		if err := t.del(bucketProgLive, progLiveKey(inv.Prog, inv.ID)); err != nil {
			return err
		}
	}
	return t.putInvocation(inv)
}

// ArchiveInvocation moves a top-level invocation and all its descendants
// out of the live set into the archive, once every one of them has
// ended. Their operations, attempts, claims, outcomes and children index
// stay.
func (t *boltTx) ArchiveInvocation(id string) error {
	inv, err := t.Invocation(id)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	if inv.Parent != "" {
		return fmt.Errorf("archive invocation %s: %w: it is a child of %s; archive its top-level invocation", id, store.ErrInvariant, inv.Parent)
	}
	tree, err := t.tree(inv)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	for _, m := range tree {
		if !m.Status.Terminal() {
			return fmt.Errorf("archive invocation %s: %w: invocation %s of its tree is %s", id, store.ErrInvariant, m.ID, m.Status)
		}
	}
	for _, m := range tree {
		if err := t.bucket(bucketArchive).putJSON([]byte(m.ID), m); err != nil {
			return err
		}
		if err := t.del(bucketInvocations, []byte(m.ID)); err != nil {
			return err
		}
	}
	return nil
}

// ArchivedInvocation reads an archived invocation.
func (t *boltTx) ArchivedInvocation(id string) (*store.Invocation, error) {
	raw, err := t.bucket(bucketArchive).get([]byte(id))
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, fmt.Errorf("archived invocation %q: %w", id, store.ErrNotFound)
	}
	return decodeInvocation(id, raw)
}

func (t *boltTx) Reservation(inv string) (*store.Reservation, error) {
	raw, err := t.bucket(bucketReservations).get([]byte(inv))
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, fmt.Errorf("reservation of %q: %w", inv, store.ErrNotFound)
	}
	var checkErr error
	r, err := readRecord(t.s.fc.reserves, inv, raw, func(r *store.Reservation) error {
		if r.Invocation != inv {
			checkErr = fmt.Errorf("reservation of %q: %w: the record names %q", inv, store.ErrInvariant, r.Invocation)
		}
		return checkErr
	})
	if checkErr != nil {
		return nil, checkErr
	}
	if err != nil {
		return nil, fmt.Errorf("decode reservation of %q: %w", inv, err)
	}
	return r, nil
}

func (t *boltTx) Reserve(r *store.Reservation) error {
	inv, err := t.Invocation(r.Invocation)
	if err != nil {
		return fmt.Errorf("reserve: %w", err)
	}
	switch {
	case inv.Status.Terminal():
		return fmt.Errorf("reserve for %s: %w: it ended %s", inv.ID, store.ErrInvariant, inv.Status)
	case inv.Held != 0 || t.has(bucketReservations, []byte(inv.ID)):
		return fmt.Errorf("reserve for %s: %w: a reservation is open", inv.ID, store.ErrInvariant)
	case r.Steps == 0:
		return fmt.Errorf("reserve for %s: %w: a reservation holds at least one step", inv.ID, store.ErrInvariant)
	case r.Base != inv.Charged:
		return fmt.Errorf("reserve for %s: %w: base %d is not the charged %d", inv.ID, store.ErrConflict, r.Base, inv.Charged)
	case r.Steps > inv.Limit-inv.Charged-inv.Delegated:
		return fmt.Errorf("reserve for %s: %w: %d steps exceed the %d left of %d", inv.ID, store.ErrInvariant, r.Steps, inv.Limit-inv.Charged-inv.Delegated, inv.Limit)
	}
	inv.Held = r.Steps
	inv.Updated = r.Created
	if err := t.putReservation(r); err != nil {
		return err
	}
	return t.putInvocation(inv)
}

// Charge closes the invocation's open reservation, charging used steps of
// it (at most all of it); the rest is released, never refunded from
// what was charged before.
func (t *boltTx) Charge(id string, used uint64) error {
	r, err := t.Reservation(id)
	if err != nil {
		return fmt.Errorf("charge: %w", err)
	}
	inv, err := t.Invocation(id)
	if err != nil {
		return fmt.Errorf("charge: %w", err)
	}
	if inv.Held != r.Steps || inv.Charged != r.Base {
		return fmt.Errorf("charge %s: %w: the reservation does not match the invocation", id, store.ErrInvariant)
	}
	if used > r.Steps {
		return fmt.Errorf("charge %s: %w: %d steps used of a reservation of %d", id, store.ErrInvariant, used, r.Steps)
	}
	inv.Charged += used
	inv.Held = 0
	if err := t.del(bucketReservations, []byte(id)); err != nil {
		return err
	}
	return t.putInvocation(inv)
}
