package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

var (
	bucketNeuron       = []byte("neuron")
	bucketGrants       = []byte("grants")
	bucketProgs        = []byte("progs")
	bucketInvocations  = []byte("invocations")
	bucketProgLive     = []byte("prog_live")
	bucketArchive      = []byte("archive")
	bucketReservations = []byte("reservations")
	bucketOperations   = []byte("operations")
	bucketOpIndex      = []byte("op_index")
	bucketActAttempts  = []byte("act_attempts")
	bucketClaims       = []byte("claims")
	bucketOutcomes     = []byte("outcomes")
	bucketJobClaims    = []byte("job_claims")
	// Schema 6: superseded prog revisions, and the children index.
	bucketProgRevisions = []byte("prog_revisions")
	bucketChildren      = []byte("children")
	keyRoot             = []byte("root")

	fencingBuckets = [][]byte{bucketNeuron, bucketGrants, bucketProgs, bucketInvocations, bucketProgLive,
		bucketArchive, bucketReservations, bucketOperations, bucketOpIndex, bucketActAttempts,
		bucketClaims, bucketOutcomes, bucketJobClaims, bucketProgRevisions, bucketChildren}
	// schema6Buckets are the buckets schema 6 adds.
	schema6Buckets = [][]byte{bucketProgRevisions, bucketChildren}
)

// maxActs bounds act sets (the descriptor's bound).
const maxActs = protocol.MaxActs

// sortedUnique reports whether vs ascend strictly.
func sortedUnique[T ~uint64 | ~string](vs []T) bool {
	for i := 1; i < len(vs); i++ {
		if vs[i] <= vs[i-1] {
			return false
		}
	}
	return true
}

func (t *boltTx) Root() (*store.Root, error) { return t.root(false) }

// rootView is the root for the store's own checks: not a copy, never to
// be changed or kept past the transaction.
func (t *boltTx) rootView() (*store.Root, error) { return t.root(true) }

func (t *boltTx) root(share bool) (*store.Root, error) {
	raw, err := t.bucket(bucketNeuron).get(keyRoot)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, fmt.Errorf("neuron root: %w", store.ErrNotFound)
	}
	var signErr error
	r, err := readRecordAs(t.s.fc.roots, "root", raw, func(r *store.Root) error {
		signErr = t.checkRootSigned(r, raw)
		return signErr
	}, share)
	if signErr != nil {
		return nil, signErr
	}
	if err != nil {
		return nil, fmt.Errorf("decode neuron root: %w", err)
	}
	return r, nil
}

// checkRootSigned: the root is the trusted key's, and its signature
// verifies.
func (t *boltTx) checkRootSigned(r *store.Root, raw []byte) error {
	if err := t.checkRootSubject(r); err != nil {
		return err
	}
	return t.s.checkSigned("neuron root", r.Statement(), r.Signature, raw)
}

// checkRootSubject: the root is the trusted key's neuron.
func (t *boltTx) checkRootSubject(r *store.Root) error {
	trust := t.s.trust.Key()
	if trust == nil {
		return fmt.Errorf("neuron root: %w", store.ErrUntrusted)
	}
	if r.PublicKey != *trust || r.Neuron != r.PublicKey.ID() {
		return fmt.Errorf("neuron root: %w (neuron %s, the vault's key is neuron %s)", store.ErrSubject, r.Neuron, trust.ID())
	}
	return nil
}

// rootShape checks what every root must be, whatever came before.
func rootShape(r *store.Root) error {
	switch {
	case r.Profile != neuron.Profile:
		return fmt.Errorf("%w: neuron profile %q, want %q", store.ErrInvariant, r.Profile, neuron.Profile)
	case !protocol.ValidText(r.Network):
		return fmt.Errorf("%w: network must be 1-128 printable ASCII", store.ErrInvariant)
	case r.Epoch == 0:
		return fmt.Errorf("%w: epochs start at 1", store.ErrInvariant)
	case r.Generation == 0 && r.Worker != nil:
		return fmt.Errorf("%w: generation 0 has no worker", store.ErrInvariant)
	case r.Records != "" && r.Records != store.RecordsAuthenticated:
		return fmt.Errorf("%w: records %q, want %q", store.ErrInvariant, r.Records, store.RecordsAuthenticated)
	}
	if r.Worker != nil {
		if err := r.Worker.Validate(); err != nil {
			return fmt.Errorf("%w: worker descriptor: %v", store.ErrInvariant, err)
		}
		if r.Worker.Network != r.Network {
			return fmt.Errorf("%w: the worker's network %q is not the neuron's %q", store.ErrInvariant, r.Worker.Network, r.Network)
		}
	}
	return nil
}

func (t *boltTx) PutRoot(r *store.Root) error {
	if err := rootShape(r); err != nil {
		return fmt.Errorf("put neuron root: %w", err)
	}
	if err := t.checkRootSubject(r); err != nil {
		return fmt.Errorf("put neuron root: %w", err)
	}
	if r.Records != store.RecordsAuthenticated {
		// This build authenticates every fencing record it writes, and
		// its root says so.
		return fmt.Errorf("put neuron root: %w: a root of this build says its records are %q", store.ErrInvariant, store.RecordsAuthenticated)
	}
	old, err := t.Root()
	switch {
	case errors.Is(err, store.ErrNotFound):
		if r.Generation != 0 {
			return fmt.Errorf("put neuron root: %w: a new root starts at generation 0", store.ErrInvariant)
		}
	case err != nil:
		return fmt.Errorf("put neuron root: %w", err)
	case old.Records == "":
		// A root of schema 6 moves once, to say that the store's records
		// are authenticated now, in the transaction that tags them.
		return fmt.Errorf("put neuron root: %w: the root predates authenticated records: they are authenticated first (AuthenticateRecords)", store.ErrInvariant)
	default:
		if r.Neuron != old.Neuron || r.PublicKey != old.PublicKey || r.Network != old.Network {
			return fmt.Errorf("put neuron root: %w: neuron, key and network are pinned at init", store.ErrConflict)
		}
		placement := r.Generation == old.Generation+1 && r.Policy == old.Policy && r.Epoch == old.Epoch
		policy := r.Generation == old.Generation && sameWorker(r.Worker, old.Worker) && r.Epoch > old.Epoch
		if !placement && !policy {
			return fmt.Errorf("put neuron root: %w: the root moves by a placement (generation %d → %d) or a policy change (epoch above %d), not to generation %d epoch %d",
				store.ErrConflict, old.Generation, old.Generation+1, old.Epoch, r.Generation, r.Epoch)
		}
	}
	return t.putSigned(bucketNeuron, keyRoot, r, "put neuron root", r.Statement(), r.Signature)
}

func sameWorker(a, b *protocol.WorkerDescriptor) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

func (t *boltTx) Grant() (*store.Grant, error) {
	grants := t.bucket(bucketGrants)
	k, v := grants.b.Cursor().Last()
	if k == nil {
		return nil, fmt.Errorf("grant: %w", store.ErrNotFound)
	}
	raw, err := grants.open(k, v)
	if err != nil {
		return nil, err
	}
	return t.decodeGrant(k, raw)
}

func (t *boltTx) GrantRevision(rev uint64) (*store.Grant, error) {
	k := binary.BigEndian.AppendUint64(nil, rev)
	raw, err := t.bucket(bucketGrants).get(k)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, fmt.Errorf("grant revision %d: %w", rev, store.ErrNotFound)
	}
	return t.decodeGrant(k, raw)
}

func (t *boltTx) decodeGrant(k, raw []byte) (*store.Grant, error) {
	var checkErr error
	g, err := readRecord(t.s.fc.grants, string(k), raw, func(g *store.Grant) error {
		if len(k) != 8 || binary.BigEndian.Uint64(k) != g.Revision {
			checkErr = fmt.Errorf("grant %x: %w: it says revision %d", k, store.ErrTampered, g.Revision)
		} else {
			checkErr = t.s.checkSigned(fmt.Sprintf("grant revision %d", g.Revision), g.Statement(), g.Signature, raw)
		}
		return checkErr
	})
	if checkErr != nil {
		return nil, checkErr
	}
	if err != nil {
		return nil, fmt.Errorf("decode grant: %w", err)
	}
	return g, nil
}

func (t *boltTx) PutGrant(g *store.Grant) error {
	root, err := t.Root()
	if err != nil {
		return fmt.Errorf("put grant: %w", err)
	}
	switch {
	case g.Neuron != root.Neuron || g.Network != root.Network:
		return fmt.Errorf("put grant: %w: a grant is for its neuron and network", store.ErrConflict)
	case len(g.Acts) > maxActs || !sortedUnique(g.Acts):
		return fmt.Errorf("put grant: %w: acts must be sorted, unique, at most %d", store.ErrInvariant, maxActs)
	case !sortedUnique(g.Progs) || slices.ContainsFunc(g.Progs, func(p string) bool { return !validID(p) }):
		return fmt.Errorf("put grant: %w: progs must be sorted, unique prog ids", store.ErrInvariant)
	}
	cur, err := t.Grant()
	switch {
	case errors.Is(err, store.ErrNotFound):
		if g.Revision != 0 {
			return fmt.Errorf("put grant: %w: the first grant is revision 0", store.ErrConflict)
		}
	case err != nil:
		return fmt.Errorf("put grant: %w", err)
	default:
		if g.Revision != cur.Revision+1 {
			return fmt.Errorf("put grant: %w: revision %d follows %d, not %d", store.ErrConflict, cur.Revision+1, cur.Revision, g.Revision)
		}
		if g.Epoch < cur.Epoch {
			return fmt.Errorf("put grant: %w: epoch %d is below the current grant's %d", store.ErrConflict, g.Epoch, cur.Epoch)
		}
	}
	return t.putSigned(bucketGrants, binary.BigEndian.AppendUint64(nil, g.Revision), g, "put grant", g.Statement(), g.Signature)
}

// has reports whether key exists in the bucket, sealed right or not: a
// damaged record is still there, and nothing is written over it.
func (t *boltTx) has(name, key []byte) bool { return t.tx.Bucket(name).Get(key) != nil }

// del deletes a record.
func (t *boltTx) del(name, key []byte) error { return t.tx.Bucket(name).Delete(key) }

// validID: 64 lowercase hex digits.
func validID(id string) bool {
	if len(id) != 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
