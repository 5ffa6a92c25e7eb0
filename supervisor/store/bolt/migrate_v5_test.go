package bolt

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// testdata/v5-release.db is a home's store written by the release before
// prog revisions and children (schema 5, commit 2abc7ce) through its
// CLI: neuron init, grant set, prog install of a program that calls host
// twice, invoke --wait (completed: two operations with attempts, claims
// and outcomes), invoke (waiting on a proposal) and invoke + operation
// take (waiting on a manual attempt).
func copyV5Release(t *testing.T) (string, neuron.PublicKey) {
	t.Helper()
	dir := t.TempDir()
	in, err := os.Open(filepath.Join("testdata", "v5-release.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	path := filepath.Join(dir, FileName)
	out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	// The neuron's public key is in its root (the fixture has no vault).
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var root store.Root
	err = db.View(func(tx *bbolt.Tx) error {
		raw, ok := unseal(bucketNeuron, keyRoot, tx.Bucket(bucketNeuron).Get(keyRoot))
		if !ok {
			t.Fatal("the fixture's root is not sealed")
		}
		return json.Unmarshal(raw, &root)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	return dir, root.PublicKey
}

// TestMigrateV5Release: the release before opens at schema 6 with every
// record kept byte for byte and the two new buckets empty; its progs are
// at revision 0, its invocations top-level with nothing delegated; the
// store check finds nothing, signatures included, and one of its
// invocations can be archived as before.
func TestMigrateV5Release(t *testing.T) {
	dir, pub := copyV5Release(t)
	before := dump(t, dir)
	s, err := OpenWith(dir, Options{LockWait: time.Second, Trust: &pub})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	after := unsealed(t, dumpOpen(t, s))
	if !reflect.DeepEqual(only(after, before), withoutMeta(unsealed(t, before))) {
		t.Fatal("the migration changed records")
	}
	for _, name := range schema6Buckets {
		if b, ok := after[string(name)]; !ok || len(b) != 0 {
			t.Fatalf("bucket %s: present %v, %d records", name, ok, len(b))
		}
	}
	var done string
	err = s.Local().View(context.Background(), func(tx store.LocalTx) error {
		m, err := tx.Meta()
		if err != nil || m.SchemaVersion != SchemaVersion {
			t.Fatalf("meta %+v %v", m, err)
		}
		if _, err := tx.Root(); err != nil {
			t.Fatalf("root: %v", err)
		}
		n := 0
		err = tx.ForEachInvocation(func(inv *store.Invocation) bool {
			n++
			if inv.Parent != "" || inv.Delegated != 0 || inv.ProgRevision != 0 {
				t.Fatalf("invocation %s: parent %q delegated %d revision %d", inv.ID, inv.Parent, inv.Delegated, inv.ProgRevision)
			}
			if inv.Status == store.InvocationCompleted {
				done = inv.ID
			}
			return true
		})
		if err != nil || n != 3 || done == "" {
			t.Fatalf("%d invocations, completed %q: %v", n, done, err)
		}
		return tx.ForEachProg(func(p *store.Prog) bool {
			if p.Revision != 0 {
				t.Fatalf("prog %s at revision %d", p.ID, p.Revision)
			}
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	// Its records have no tags until a start with the neuron's key
	// authenticates them (the fixture has no vault:
	// TestAuthenticateV6Release does that with one); until then they
	// read as before, and nothing is written without the key.
	rep, err := s.Check(context.Background())
	if err != nil || len(rep.Problems) != 0 || !strings.HasPrefix(rep.Signatures, "verified") || rep.Fencing == 0 || rep.Unauthenticated != rep.Fencing {
		t.Fatalf("check of the migrated store: %+v %v", rep, err)
	}
	err = s.Local().Update(context.Background(), func(tx store.LocalTx) error { return tx.ArchiveInvocation(done) })
	wantErr(t, "archive without the neuron's key", err, store.ErrUntrusted)
}

// TestMigrateV5AllOrNothing: a failure in the step to schema 6 leaves
// the schema 5 store as it was.
func TestMigrateV5AllOrNothing(t *testing.T) {
	dir, _ := copyV5Release(t)
	before := dump(t, dir)
	errStop := errors.New("stop")
	migrateStep = func(string) error { return errStop }
	_, err := Open(dir, time.Second)
	migrateStep = nil
	if !errors.Is(err, errStop) {
		t.Fatalf("open with a failing migration: %v", err)
	}
	if !reflect.DeepEqual(dump(t, dir), before) {
		t.Fatal("a failed migration changed the store")
	}
}

// TestDamagedOlderStoreIsRefused: a sealed store of an older schema whose
// record fails its seal is refused when opened, as a store of this schema
// is: not migrated (the migration would write the damage into a store of
// this schema, and the open would succeed on it), and left as it was.
func TestDamagedOlderStoreIsRefused(t *testing.T) {
	for _, bucket := range []string{"progs", "invocations", "grants"} {
		t.Run(bucket, func(t *testing.T) {
			dir, pub := copyV5Release(t)
			db, err := bbolt.Open(filepath.Join(dir, FileName), 0o600, &bbolt.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bbolt.Tx) error {
				b := tx.Bucket([]byte(bucket))
				k, v := b.Cursor().First()
				damaged := append([]byte(nil), v...)
				damaged[len(damaged)/2] ^= 1
				return b.Put(append([]byte(nil), k...), damaged)
			})
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			before := dump(t, dir)
			s, err := OpenWith(dir, Options{LockWait: time.Second, Trust: &pub})
			if err == nil {
				s.Close()
			}
			var ce *store.CorruptError
			if !errors.As(err, &ce) || ce.Bucket != bucket {
				t.Fatalf("open of a schema 5 store with a damaged %s record: %v, want a *CorruptError naming it", bucket, err)
			}
			if !reflect.DeepEqual(dump(t, dir), before) {
				t.Fatal("the refused store was changed")
			}
		})
	}
}
