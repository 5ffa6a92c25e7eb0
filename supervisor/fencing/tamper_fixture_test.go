package fencing

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// A writer of the store file without the vault: it can change any
// record and seal it again (the seal is a CRC anyone computes), move a
// record to another key, or drop a record's authentication tag. These
// tests do each of those to every field of every record of every
// fencing bucket of a home that holds every kind of record, and ask
// that the store check name the record, that the daemon's store refuse
// to read it (naming it), and that no act runs with it: a daemon started
// on the altered home runs only acts the unaltered home runs, with the
// same arguments.

// fencingBuckets are the buckets of local dispatch and fencing
// (docs/fencing.md, "Records").
var fencingBuckets = []string{"neuron", "grants", "progs", "prog_revisions", "invocations", "children", "prog_live",
	"archive", "reservations", "operations", "op_index", "act_attempts", "claims", "outcomes", "job_claims"}

// tagSuffix is what an authentication tag adds to a payload: a zero
// byte and 32 bytes of HMAC-SHA256.
const tagSuffix = 1 + 32

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// resealed is p sealed under bucket and key, as any writer can.
func resealed(bucket string, key, p []byte) []byte {
	c := crc32.Update(0, crcTable, []byte(bucket))
	c = crc32.Update(c, crcTable, []byte{0})
	c = crc32.Update(c, crcTable, key)
	c = crc32.Update(c, crcTable, p)
	return binary.BigEndian.AppendUint32(slices.Clip(p), c)
}

// splitValue is a stored value's payload and its tag (nil: none).
func splitValue(v []byte) (payload, tag []byte) {
	p := v[:len(v)-4]
	if n := len(p) - tagSuffix; n >= 0 && p[n] == 0 {
		return p[:n], p[n:]
	}
	return p, nil
}

// recordName is how the store names a record (store.RecordName).
func recordName(bucket string, key []byte) string {
	printable := len(key) <= 128
	for _, c := range key {
		if c < 0x21 || c > 0x7e {
			printable = false
		}
	}
	if printable {
		return bucket + "/" + strconv.Quote(string(key))
	}
	if len(key) > 48 {
		return fmt.Sprintf("%s/0x%x… (%d bytes)", bucket, key[:48], len(key))
	}
	return fmt.Sprintf("%s/0x%x", bucket, key)
}

// tamperFixture is a home whose store holds a record of every fencing
// kind: the root, two grants, a prog and an upgraded one (with its
// superseded revision), an archived invocation (consumed operations,
// attempts, claims, outcomes), invocations waiting on a proposal, on an
// outcome the program has not taken, on an unknown attempt, one not
// started with an open reservation, a child (the children index), a
// failed act's outcome, and a job attempt's claim.
type tamperFixture struct {
	home  string // its vault is used by every run
	file  string // the store, never changed
	key   *neuron.Key
	invs  []string // every invocation
	waits []string // the invocations a daemon drives
	// driven are the ids of what those drives read (invocations,
	// operations, progs): a record that names one is of a shape of its
	// own, so that one of them is always altered.
	driven map[string]bool
}

// chainProgram calls act tag on its input, then on the witness: its
// second act's argument is the first act's outcome.
func chainProgram(tag uint64) string {
	c := fmt.Sprintf("[16 [[1 %d] [1 0]]]", tag)
	return "[2 [[2 [[0 2] [1 " + c + "]]] [1 " + c + "]]]"
}

func buildTamperFixture(t *testing.T) *tamperFixture {
	t.Helper()
	h := newHarnessSync(t, false)
	h.grant(tagCount)
	h.bind()
	chain := h.install(chainProgram(tagCount), tagCount)
	old := h.install(callOnInput(tagCount), tagCount)
	_, _, err := h.e.UpgradeProg(ctx, old.ID, 0, ProgSpec{Program: parse(t, chainProgram(tagCount))})
	h.must(err)
	f := &tamperFixture{home: h.home, file: filepath.Join(h.home, "store", bolt.FileName)}
	invoke := func(p *store.Prog, in uint64) *store.Invocation {
		inv := h.invoke(p, in)
		f.invs = append(f.invs, inv.ID)
		return inv
	}
	// Completed and archived.
	done := invoke(chain, 1)
	if got := h.drive(done); got.Status != store.InvocationCompleted {
		t.Fatalf("fixture: %s", got.Status)
	}
	h.must(h.e.Archive(ctx, done.ID))
	// Waiting on a proposal (its argument is the input).
	proposed := invoke(chain, 2)
	h.awaiting(proposed)
	// Waiting on an outcome its program has not taken: the next act's
	// argument is that outcome.
	outcome := invoke(chain, 3)
	h.awaiting(outcome)
	if _, err := h.e.Dispatch(ctx, mustPrepare(t, h, outcome.ID)); err != nil {
		t.Fatal(err)
	}
	// An attempt never claimed: unknown until reconciled.
	unknown := invoke(chain, 4)
	h.awaiting(unknown)
	mustPrepare(t, h, unknown.ID)
	// Not started, with a reservation a crash left open.
	fresh := invoke(chain, 5)
	h.must(h.st.Local().Update(ctx, func(tx store.LocalTx) error {
		inv, err := tx.Invocation(fresh.ID)
		if err != nil {
			return err
		}
		return tx.Reserve(&store.Reservation{Invocation: inv.ID, Steps: 1000, Base: inv.Charged, Boot: h.e.Boot(), Created: inv.Created})
	}))
	// A child of the proposal's invocation, not started.
	child, err := h.e.InvokeWith(ctx, InvokeSpec{Prog: chain.ID, Inputs: []uint64{6}, Parent: proposed.ID, Allowance: 2000})
	h.must(err)
	f.invs = append(f.invs, child.ID)
	// A failed act: the invocation failed.
	h.count.set("fail")
	failed := invoke(chain, 7)
	if got := h.drive(failed); got.Status != store.InvocationFailed {
		t.Fatalf("fixture: %s", got.Status)
	}
	h.count.set("")
	// An invocation of the upgraded prog, at its new revision.
	upgraded := invoke(old, 8)
	h.awaiting(upgraded)
	f.waits = []string{proposed.ID, outcome.ID, unknown.ID, fresh.ID, child.ID, upgraded.ID}
	// What the daemon's drives read: the waiting invocations, their
	// operations, their progs.
	f.driven = map[string]bool{chain.ID: true, old.ID: true}
	h.must(h.st.Local().View(ctx, func(tx store.LocalTx) error {
		for _, id := range f.waits {
			f.driven[id] = true
			ops, err := tx.Operations(id)
			if err != nil {
				return err
			}
			for _, op := range ops {
				f.driven[op.ID] = true
			}
		}
		return nil
	}))
	// A job attempt and its claim.
	spec := []byte(`{"job":"tampered"}`)
	sum := sha256Hex(spec)
	now := time.Now().UTC()
	h.must(h.st.Local().Update(ctx, func(tx store.LocalTx) error {
		seq, err := tx.NextSeq()
		if err != nil {
			return err
		}
		j := &store.Job{ID: "job-1", SpecDigest: sum, State: lifecycle.Queued, Seq: seq, Created: now, Updated: now,
			Retry: store.RetryPolicy{MaxAttempts: 1}}
		if err := tx.CreateJob(j, spec); err != nil {
			return err
		}
		j.Attempts = 1
		if err := tx.PutJob(j); err != nil {
			return err
		}
		r, err := tx.Root()
		if err != nil {
			return err
		}
		if err := tx.PutAttempt(&store.Attempt{Job: j.ID, N: 1, Boot: h.e.Boot(), Generation: r.Generation, Created: now, State: lifecycle.Queued}); err != nil {
			return err
		}
		d := h.e.Descriptor("testnet")
		d.Executor.Warrior, d.Executor.Backend = protocol.WarriorNoxWorker, protocol.BackendIsolatedProcess
		d.Machine, d.Environment, d.ProofProfile = protocol.MachineNox, protocol.EnvPublicStateless, protocol.ProfileNone
		d.Acts = nil
		c := &store.JobClaim{Job: j.ID, Attempt: 1, Generation: r.Generation, Worker: d, Created: now}
		if err := h.e.SignJobClaim(c); err != nil {
			return err
		}
		return tx.RecordJobClaim(c)
	}))
	h.e.Close()
	h.must(h.st.Close())
	f.key, err = neuron.OpenVault(neuron.VaultDir(h.home)).Load()
	h.must(err)
	return f
}

// actCall is what an act was run with.
type actCall struct {
	invocation, operation string
	tag                   uint64
	argument              string
}

// daemonRun is what a daemon started on a copy of the fixture's store
// did: it binds its worker and drives every waiting invocation (the
// counting act returns its argument).
type daemonRun struct {
	calls []actCall
	// read is the daemon's store refusing the altered record (nil: it
	// read it).
	read error
	// check is the daemon's store check.
	check *bolt.CheckReport
}

func (f *tamperFixture) runDaemon(t *testing.T, file string, readBack func(store.LocalTx) error) daemonRun {
	t.Helper()
	var run daemonRun
	st, err := bolt.OpenWith(filepath.Dir(file), bolt.Options{LockWait: time.Second, NoSync: true})
	if err != nil {
		t.Fatalf("open the altered store: %v", err)
	}
	defer st.Close()
	acts := hostact.NewRegistry()
	if err := acts.Register("count", tagCount, func(_ context.Context, c hostact.Call) hostact.Result {
		run.calls = append(run.calls, actCall{c.Invocation, c.Operation, c.Tag, c.Argument.String()})
		return hostact.Value(c.Argument)
	}); err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Store: st.Fencing(), Trust: st.Trust(), Vault: neuron.OpenVault(neuron.VaultDir(f.home)), Acts: acts, Boot: "tampered",
		Version: "test", DeviceID: "test-device", Unbatched: true})
	if err != nil {
		// A daemon that does not start runs nothing.
		return run
	}
	defer e.Close()
	if readBack != nil {
		run.read = st.Local().View(ctx, readBack)
	}
	if run.check, err = st.Check(ctx); err != nil {
		t.Fatalf("the daemon's check: %v", err)
	}
	if _, err := e.BindBoot(ctx); err != nil {
		return run
	}
	for _, id := range f.waits {
		_, _ = e.Drive(ctx, id)
	}
	return run
}

// copyStore copies the fixture's store into a directory of its own.
func (f *tamperFixture) copyStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	in, err := os.Open(f.file)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	path := filepath.Join(dir, bolt.FileName)
	out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// storedRecord is a record of the fixture as the file holds it.
type storedRecord struct {
	bucket       string
	key, payload []byte
	tag          []byte // nil: untagged
}

func (f *tamperFixture) records(t *testing.T) []storedRecord {
	t.Helper()
	db, err := bbolt.Open(f.file, 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []storedRecord
	err = db.View(func(tx *bbolt.Tx) error {
		for _, name := range fencingBuckets {
			b := tx.Bucket([]byte(name))
			if b == nil {
				return fmt.Errorf("no bucket %s", name)
			}
			if err := b.ForEach(func(k, v []byte) error {
				p, tag := splitValue(v)
				out = append(out, storedRecord{name, bytes.Clone(k), bytes.Clone(p), bytes.Clone(tag)})
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sha256Hex is a job spec's digest.
func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
