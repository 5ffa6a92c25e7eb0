package bolt

import (
	"bytes"
	"context"
	"encoding/json"
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

// testdata/v6-release.db is a home's store written by the release before
// authenticated records (schema 6, commit d8927d5) through its CLI, and
// testdata/v6-release.key that home's vault key (a test neuron's):
// neuron init, grant set, two progs calling host (one upgraded), invoke
// --wait (completed, then archived), invocations waiting on a proposal,
// on a manual take, on outcomes not taken yet (a one-shot run bound its
// worker and drove them), a child, and a job run whose attempt has a
// signed claim.
func copyV6Release(t *testing.T) (string, *neuron.Key) {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []struct{ from, to string }{{"v6-release.db", FileName}, {"v6-release.key", "neuron.key"}} {
		b, err := os.ReadFile(filepath.Join("testdata", f.from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.to), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	vault := filepath.Join(dir, "vault")
	if err := os.Mkdir(vault, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "neuron.key"), filepath.Join(vault, neuron.KeyFile)); err != nil {
		t.Fatal(err)
	}
	k, err := neuron.OpenVault(vault).Load()
	if err != nil {
		t.Fatal(err)
	}
	return dir, k
}

// authenticateV6 is what the first start with the key does: the root
// signed again saying that its records are authenticated, every record
// tagged, in one transaction.
func authenticateV6(t *testing.T, s *Store, k *neuron.Key) (tagged, left int) {
	t.Helper()
	err := s.Local().Update(context.Background(), func(tx store.LocalTx) error {
		root, err := tx.Root()
		if err != nil {
			return err
		}
		flagged := *root
		flagged.Records, flagged.Updated = store.RecordsAuthenticated, time.Now().UTC()
		if flagged.Signature, err = k.Sign(flagged.Statement()); err != nil {
			return err
		}
		tagged, left, err = tx.AuthenticateRecords(&flagged)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return tagged, left
}

// TestAuthenticateV6Release: the release before opens at schema 7 with
// every record kept byte for byte and read as before, its root saying
// nothing of tags (the open has no key and writes nothing but the
// meta); the check counts its records as not authenticated yet. The
// first start with the key tags every one of them, keeps each payload
// byte for byte, and replaces the root by the same root saying its
// records are authenticated; then the check finds nothing, and a record
// without its tag, or with a tag that does not verify, is refused and
// named.
func TestAuthenticateV6Release(t *testing.T) {
	dir, k := copyV6Release(t)
	before := unsealed(t, dump(t, dir))
	s, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := unsealed(t, dumpOpen(t, s)); !reflect.DeepEqual(withoutMeta(got), withoutMeta(before)) {
		t.Fatal("the migration to schema 7 changed records")
	}
	if err := s.Trust().SetSigner(k); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Check(context.Background())
	if err != nil || len(rep.Problems) != 0 || rep.Signatures != "verified" || rep.Fencing == 0 || rep.Unauthenticated != rep.Fencing {
		t.Fatalf("check of the store before its records are authenticated: %+v %v", rep, err)
	}
	fencing := rep.Fencing
	tagged, left := authenticateV6(t, s, k)
	if tagged != fencing-1 || left != 0 {
		t.Fatalf("tagged %d, left %d, of %d records and the root", tagged, left, fencing-1)
	}
	after := dumpOpen(t, s)
	rk := k.RecordKey()
	for _, name := range fencingBuckets {
		for key, v := range after[string(name)] {
			p, ok := unseal(name, []byte(key), []byte(v))
			payload, tag, isTagged := splitTag(p)
			if !ok || !isTagged || !rk.Verify(tag, name, []byte(key), payload) {
				t.Fatalf("%s: not sealed %v, tagged %v, or its tag does not verify", store.RecordName(name, []byte(key)), ok, isTagged)
			}
			if bytes.Equal(name, bucketNeuron) {
				var r store.Root
				if err := json.Unmarshal(payload, &r); err != nil || r.Records != store.RecordsAuthenticated {
					t.Fatalf("the root after: %+v %v", r, err)
				}
				continue
			}
			if string(payload) != before[string(name)][key] {
				t.Fatalf("%s: its payload changed", store.RecordName(name, []byte(key)))
			}
		}
	}
	rep, err = s.Check(context.Background())
	if err != nil || len(rep.Problems) != 0 || rep.Signatures != "verified" || rep.Fencing != fencing || rep.Unauthenticated != 0 {
		t.Fatalf("check of the authenticated store: %+v %v", rep, err)
	}
	// Every record reads as before.
	err = s.Local().View(context.Background(), func(tx store.LocalTx) error {
		n := 0
		err := tx.ForEachOperation(func(op *store.Operation) bool {
			n++
			_, err := tx.ActAttempts(op.ID)
			return err == nil
		})
		if err != nil || n == 0 {
			t.Fatalf("%d operations: %v", n, err)
		}
		return tx.ForEachInvocation(func(*store.Invocation) bool { return true })
	})
	if err != nil {
		t.Fatal(err)
	}
	// Authenticating again changes nothing.
	if tagged, left := authenticateV6Again(t, s); tagged != 0 || left != 0 {
		t.Fatalf("a second authentication tagged %d, left %d", tagged, left)
	}
	// A record without its tag (of the format before) is refused now.
	var op string
	for key := range after["operations"] {
		op = key
		break
	}
	p, _ := unseal(bucketOperations, []byte(op), []byte(after["operations"][op]))
	payload, _, _ := splitTag(p)
	path := s.Path()
	s.Close()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketOperations).Put([]byte(op), seal(bucketOperations, []byte(op), payload))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	rep, err = CheckFileTrusting(path, time.Second, k)
	name := store.RecordName(bucketOperations, []byte(op))
	if err != nil || !strings.Contains(strings.Join(rep.Problems, "\n"), name+": "+store.ErrUnauthenticated.Error()) {
		t.Fatalf("check of a record whose tag was dropped: %+v %v", rep, err)
	}
	s2, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := s2.Trust().SetSigner(k); err != nil {
		t.Fatal(err)
	}
	err = s2.Local().View(context.Background(), func(tx store.LocalTx) error { _, err := tx.Operation(op); return err })
	wantErr(t, "a record whose tag was dropped", err, store.ErrUnauthenticated)
	if !strings.Contains(err.Error(), name) {
		t.Fatalf("the refusal does not name the record: %v", err)
	}
}

// authenticateV6Again: a store whose root says its records are
// authenticated is left as it is.
func authenticateV6Again(t *testing.T, s *Store) (tagged, left int) {
	t.Helper()
	err := s.Local().Update(context.Background(), func(tx store.LocalTx) (err error) {
		tagged, left, err = tx.AuthenticateRecords(nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return tagged, left
}

// TestAuthenticateV6LeavesWhatDoesNotCheck: a signed record of the
// store before whose signature does not verify (altered before the
// upgrade) gets no tag: it stays refused, and named. An attempt of a
// later placement generation than the root's says the root was put
// back: nothing is tagged.
func TestAuthenticateV6LeavesWhatDoesNotCheck(t *testing.T) {
	dir, k := copyV6Release(t)
	path := filepath.Join(dir, FileName)
	var claimKey []byte
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketClaims)
		k, v := b.Cursor().First()
		claimKey = bytes.Clone(k)
		p, _ := unseal(bucketClaims, k, v)
		altered := bytes.Replace(p, []byte(`"created":"2`), []byte(`"created":"1`), 1)
		return b.Put(claimKey, seal(bucketClaims, claimKey, altered))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Trust().SetSigner(k); err != nil {
		t.Fatal(err)
	}
	if _, left := authenticateV6(t, s, k); left != 1 {
		t.Fatalf("left %d records without a tag, want the altered claim", left)
	}
	rep, err := s.Check(context.Background())
	name := store.RecordName(bucketClaims, claimKey)
	if err != nil || !strings.Contains(strings.Join(rep.Problems, "\n"), name+": "+store.ErrUnauthenticated.Error()) {
		t.Fatalf("check: %+v %v", rep, err)
	}

	// A root put back under an attempt of a later generation.
	dir, k = copyV6Release(t)
	path = filepath.Join(dir, FileName)
	db, err = bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketNeuron)
		p, _ := unseal(bucketNeuron, keyRoot, b.Get(keyRoot))
		var r store.Root
		if err := json.Unmarshal(p, &r); err != nil {
			return err
		}
		// The fixture's attempts are of generations 1 and 2: the root
		// of generation 1 (re-signed here, as the neuron signed it
		// then) is older than some of them.
		r.Generation, r.Worker = 1, nil
		r.Signature, err = k.Sign(r.Statement())
		if err != nil {
			return err
		}
		raw, err := json.Marshal(&r)
		if err != nil {
			return err
		}
		return b.Put(keyRoot, seal(bucketNeuron, keyRoot, raw))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	before := dump(t, dir)
	s2, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := s2.Trust().SetSigner(k); err != nil {
		t.Fatal(err)
	}
	err = s2.Local().Update(context.Background(), func(tx store.LocalTx) error {
		root, err := tx.Root()
		if err != nil {
			return err
		}
		flagged := *root
		flagged.Records = store.RecordsAuthenticated
		if flagged.Signature, err = k.Sign(flagged.Statement()); err != nil {
			return err
		}
		_, _, err = tx.AuthenticateRecords(&flagged)
		return err
	})
	wantErr(t, "authenticating under a root put back", err, store.ErrRootPutBack)
	if !reflect.DeepEqual(withoutMeta(dumpOpen(t, s2)), withoutMeta(before)) {
		t.Fatal("a refused authentication changed records")
	}
}
