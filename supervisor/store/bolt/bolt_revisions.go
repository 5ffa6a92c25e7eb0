package bolt

import (
	"encoding/binary"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// Prog revisions (schema 6): an upgrade replaces a prog's program and
// settings with its next revision and keeps the one it replaces under
// prog ‖ 0 ‖ u64 BE revision, so that an invocation pinned to it can
// still be replayed (and end as a conflict: docs/fencing.md).

func revisionKey(prog string, rev uint64) []byte {
	k := make([]byte, 0, len(prog)+9)
	k = append(append(k, prog...), 0)
	return binary.BigEndian.AppendUint64(k, rev)
}

// UpgradeProg makes p the prog's next revision: the same prog (id,
// neuron, environment, creation, lifecycle state), revision one more, a
// program that decodes to its particle and valid settings. A retiring or
// retired prog is not upgraded. The revision it replaces is kept.
func (t *boltTx) UpgradeProg(p *store.Prog) error {
	old, err := t.Prog(p.ID)
	if err != nil {
		return fmt.Errorf("upgrade prog: %w", err)
	}
	switch {
	case p.Neuron != old.Neuron || p.Environment != old.Environment || !p.Created.Equal(old.Created):
		return fmt.Errorf("upgrade prog %s: %w: its neuron, environment and creation are immutable", p.ID, store.ErrConflict)
	case p.Revision != old.Revision+1:
		return fmt.Errorf("upgrade prog %s: %w: revision %d, the prog is at %d", p.ID, store.ErrConflict, p.Revision, old.Revision)
	case old.State == store.ProgRetiring || old.State == store.ProgRetired:
		return fmt.Errorf("upgrade prog %s: %w: it is %s", p.ID, store.ErrInvariant, old.State)
	case p.State != old.State:
		return fmt.Errorf("upgrade prog %s: %w: an upgrade keeps the lifecycle state %s", p.ID, store.ErrInvariant, old.State)
	case p.Environment != protocol.EnvHostAct:
		return fmt.Errorf("upgrade prog %s: %w: environment %q", p.ID, store.ErrInvariant, p.Environment)
	case p.StepLimit == 0 || p.MaxInFlight == 0:
		return fmt.Errorf("upgrade prog %s: %w: step limit and max in flight must be at least 1", p.ID, store.ErrInvariant)
	case len(p.Acts) > maxActs || !sortedUnique(p.Acts):
		return fmt.Errorf("upgrade prog %s: %w: acts must be sorted, unique, at most %d", p.ID, store.ErrInvariant, maxActs)
	}
	program, err := store.DecodeNoun(p.Program)
	if err != nil {
		return fmt.Errorf("upgrade prog %s: %w: program: %v", p.ID, store.ErrInvariant, err)
	}
	if program.Particle() != p.Particle {
		return fmt.Errorf("upgrade prog %s: %w: the particle is not the program's", p.ID, store.ErrInvariant)
	}
	k := revisionKey(p.ID, old.Revision)
	if t.has(bucketProgRevisions, k) {
		return fmt.Errorf("upgrade prog %s: %w: revision %d is kept already", p.ID, store.ErrInvariant, old.Revision)
	}
	if err := t.bucket(bucketProgRevisions).putJSON(k, old); err != nil {
		return err
	}
	return t.bucket(bucketProgs).putJSON([]byte(p.ID), p)
}

// ProgRevision is revision rev of a prog: the current record, or the
// one an upgrade replaced.
func (t *boltTx) ProgRevision(id string, rev uint64) (*store.Prog, error) {
	cur, err := t.Prog(id)
	if err != nil {
		return nil, err
	}
	if rev == cur.Revision {
		return cur, nil
	}
	if rev > cur.Revision {
		return nil, fmt.Errorf("revision %d of prog %q: %w", rev, id, store.ErrNotFound)
	}
	k := revisionKey(id, rev)
	raw, err := t.bucket(bucketProgRevisions).get(k)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, fmt.Errorf("revision %d of prog %q: %w", rev, id, store.ErrNotFound)
	}
	p := new(store.Prog)
	if err := decodeStrict(raw, p); err != nil {
		return nil, fmt.Errorf("decode revision %d of prog %q: %w", rev, id, err)
	}
	if p.ID != id || p.Revision != rev {
		return nil, fmt.Errorf("revision %d of prog %q: %w: the record names revision %d of %q", rev, id, store.ErrInvariant, p.Revision, p.ID)
	}
	return p, nil
}

// ErrStaleRevision: the invocation runs a prog revision an upgrade
// replaced. It proposes, attempts and claims nothing more.
var ErrStaleRevision = fmt.Errorf("%w: the invocation runs a replaced prog revision", store.ErrConflict)

// current refuses an act step (what) of an invocation whose prog was
// upgraded past the revision it runs.
func (t *boltTx) current(inv *store.Invocation, what string) error {
	p, err := t.progView(inv.Prog)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if inv.ProgRevision != p.Revision {
		return fmt.Errorf("%s for invocation %s: %w (revision %d, the prog is at %d)", what, inv.ID, ErrStaleRevision, inv.ProgRevision, p.Revision)
	}
	return nil
}
