package fencing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// v6Home is a home made from the store of the release before
// authenticated records (supervisor/store/bolt/testdata/v6-release.db,
// written through that release's CLI) and its vault's key.
type v6Home struct {
	t     *testing.T
	home  string
	vault *neuron.Vault
	calls atomic.Int64 // of the host act
	st    *bolt.Store
	e     *Engine
}

func newV6Home(t *testing.T) *v6Home {
	t.Helper()
	h := &v6Home{t: t, home: t.TempDir()}
	h.vault = neuron.OpenVault(neuron.VaultDir(h.home))
	for _, d := range []string{filepath.Join(h.home, "store"), h.vault.Dir()} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	h.put("v6-release.db", filepath.Join(h.home, "store", bolt.FileName))
	h.put("v6-release.key", filepath.Join(h.vault.Dir(), neuron.KeyFile))
	return h
}

// put copies a fixture of the store's testdata to path.
func (h *v6Home) put(fixture, path string) {
	h.t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "store", "bolt", "testdata", fixture))
	if err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		h.t.Fatal(err)
	}
}

// start opens the store and an engine on it, as a daemon's start does.
func (h *v6Home) start(boot string) error {
	h.t.Helper()
	st, err := bolt.OpenWith(filepath.Join(h.home, "store"), bolt.Options{LockWait: time.Second, NoSync: true})
	if err != nil {
		h.t.Fatal(err)
	}
	acts := hostact.NewRegistry()
	if err := acts.Register("host", tagHost, func(ctx context.Context, c hostact.Call) hostact.Result {
		h.calls.Add(1)
		return hostact.Host(ctx, c)
	}); err != nil {
		h.t.Fatal(err)
	}
	e, err := New(Config{Store: st.Fencing(), Trust: st.Trust(), Vault: h.vault, Acts: acts, Boot: boot, Version: "test", DeviceID: "test-device"})
	if err != nil {
		st.Close()
		return err
	}
	h.st, h.e = st, e
	return nil
}

func (h *v6Home) stop() {
	h.e.Close()
	if err := h.st.Close(); err != nil {
		h.t.Fatal(err)
	}
}

func (h *v6Home) check() *bolt.CheckReport {
	h.t.Helper()
	rep, err := h.st.Check(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	return rep
}

// TestStartAuthenticatesAStoreOfSchema6: the first start on a home of the
// release before tags every record in one transaction, says so in its
// root and marks the vault; the home then goes on as before (its waiting
// invocations act and complete, the manual attempt stays unknown) with a
// clean check.
func TestStartAuthenticatesAStoreOfSchema6(t *testing.T) {
	h := newV6Home(t)
	if marked, _ := h.vault.RecordsAuthenticated(); marked {
		t.Fatal("the fixture's vault is marked")
	}
	if err := h.start("upgrade"); err != nil {
		t.Fatal(err)
	}
	defer h.stop()
	if marked, err := h.vault.RecordsAuthenticated(); err != nil || !marked {
		t.Fatalf("the vault is not marked: %v", err)
	}
	root, err := h.e.Root(ctx)
	if err != nil || root.Records != store.RecordsAuthenticated {
		t.Fatalf("root %+v: %v", root, err)
	}
	if rep := h.check(); len(rep.Problems) != 0 || rep.Unauthenticated != 0 || rep.Signatures != "verified" {
		t.Fatalf("check after the start: %+v", rep)
	}
	if _, err := h.e.BindBoot(ctx); err != nil {
		t.Fatal(err)
	}
	invs, err := h.e.Invocations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	completed, unknowns := 0, 0
	for _, inv := range invs {
		got, err := h.e.Drive(ctx, inv.ID)
		switch e, _ := AsRefusal(err); {
		case err == nil && got.Status == store.InvocationCompleted:
			completed++
		case e != nil && e.Refusal == UnknownOutcome:
			unknowns++
		default:
			t.Errorf("invocation %s: %v %v", inv.ID, got, err)
		}
	}
	// Three wait on outcomes and one on a proposal; one on its manual
	// attempt (the child's parent is among them).
	if completed != 4 || unknowns != 1 || h.calls.Load() == 0 {
		t.Fatalf("%d completed, %d unknown, %d acts", completed, unknowns, h.calls.Load())
	}
	if rep := h.check(); len(rep.Problems) != 0 || rep.Unauthenticated != 0 {
		t.Fatalf("check after the acts: %+v", rep)
	}
}

// TestPutBackRootIsRefused: after the upgrade a writer of the file puts
// back the root of before (signed by the neuron then, so valid), strips
// every record of its tag and forges a waiting proposal's argument, so
// that the store reads as one never upgraded. The vault's mark refuses
// it: no start, no act, and the error says what to do. Without the mark
// the store's own rule finds it (attempts of a later placement than the
// root's). The whole file of before put back (a backup of before the
// upgrade, copied in) is refused by the mark too.
func TestPutBackRootIsRefused(t *testing.T) {
	h := newV6Home(t)
	if err := h.start("upgrade"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.BindBoot(ctx); err != nil {
		t.Fatal(err)
	}
	progs, err := h.e.Progs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// An act at this start's placement, then an invocation waiting on
	// a proposal made after the upgrade.
	done, err := h.e.Invoke(ctx, progs[0].ID, []uint64{11})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := h.e.Drive(ctx, done.ID); err != nil || got.Status != store.InvocationCompleted {
		t.Fatalf("drive after the upgrade: %v %v", got, err)
	}
	inv, err := h.e.Invoke(ctx, progs[0].ID, []uint64{12})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Advance(ctx, inv.ID); err != nil {
		t.Fatal(err)
	}
	waiting := inv.ID
	view, err := h.e.Invocation(ctx, waiting)
	if err != nil || view.Pending == "" {
		t.Fatalf("the waiting invocation: %+v %v", view, err)
	}
	h.stop()
	calls := h.calls.Load()

	// The root of before, every tag stripped, the proposal forged.
	path := filepath.Join(h.home, "store", bolt.FileName)
	oldRoot := fixtureValue(t, "neuron", []byte("root"))
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, name := range fencingBuckets {
			b := tx.Bucket([]byte(name))
			type kv struct{ k, v []byte }
			var all []kv
			if err := b.ForEach(func(k, v []byte) error {
				p, _ := splitValue(v)
				if name == "operations" && string(k) == view.Pending {
					var op map[string]any
					if err := json.Unmarshal(p, &op); err != nil {
						return err
					}
					op["argument"] = noun.AppendTokens(nil, noun.Atom(99))
					if p, err = json.Marshal(op); err != nil {
						return err
					}
				}
				all = append(all, kv{bytes.Clone(k), resealed(name, k, bytes.Clone(p))})
				return nil
			}); err != nil {
				return err
			}
			for _, r := range all {
				if err := b.Put(r.k, r.v); err != nil {
					return err
				}
			}
		}
		return tx.Bucket([]byte("neuron")).Put([]byte("root"), oldRoot)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	err = h.start("put-back")
	if !errors.Is(err, store.ErrRootPutBack) || !errors.Is(err, store.ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte(neuron.RecordsMark)) {
		t.Fatalf("a start under a root put back: %v", err)
	}
	if now, err := os.ReadFile(path); err != nil || !bytes.Equal(now, saved) {
		t.Fatalf("a refused start changed the store (%v)", err)
	}
	// Without the vault's mark: the attempts of this test's start are of
	// a later placement generation than the root put back.
	if err := os.Remove(filepath.Join(h.vault.Dir(), neuron.RecordsMark)); err != nil {
		t.Fatal(err)
	}
	err = h.start("put-back-unmarked")
	if !errors.Is(err, store.ErrRootPutBack) {
		t.Fatalf("a start under a root put back, without the vault's mark: %v", err)
	}
	if h.calls.Load() != calls {
		t.Fatal("an act ran")
	}
	// The whole file of before, in a home whose vault is marked.
	if err := h.vault.MarkRecordsAuthenticated(); err != nil {
		t.Fatal(err)
	}
	h.put("v6-release.db", path)
	if err := h.start("backup-of-before"); !errors.Is(err, store.ErrRootPutBack) {
		t.Fatalf("a start on the file of before the upgrade: %v", err)
	}
}

// fixtureValue is the stored value under bucket and key of the release
// fixture.
func fixtureValue(t *testing.T, bucket string, key []byte) []byte {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("..", "store", "bolt", "testdata", "v6-release.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "v6.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v []byte
	err = db.View(func(tx *bbolt.Tx) error {
		v = slices.Clone(tx.Bucket([]byte(bucket)).Get(key))
		return nil
	})
	if err != nil || v == nil {
		t.Fatalf("%s/%q in the fixture: %v", bucket, key, err)
	}
	return v
}
