package fencing

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// alteration is one change a writer without the vault makes.
type alteration struct {
	what   string
	bucket string
	key    []byte // the record it writes
	value  []byte // sealed
	delete []byte // a key it removes first (a move), or nil
}

// alterations of a record: every field of its payload changed (its tag
// kept: it no longer verifies), the record moved to another key (tag and
// all), and its tag dropped (a record of the format before tags).
func alterations(r storedRecord) []alteration {
	var out []alteration
	withTag := func(p []byte) []byte { return append(slices.Clone(p), r.tag...) }
	for _, e := range editsOf(r.payload) {
		out = append(out, alteration{what: "field " + e.path, bucket: r.bucket, key: r.key,
			value: resealed(r.bucket, r.key, withTag(e.payload))})
	}
	// Moved within its kind: the last byte of its first part (an id,
	// before the 0 that separates a number) flipped, or of a number.
	moved := slices.Clone(r.key)
	end := bytes.IndexByte(moved, 0)
	if end <= 0 {
		end = len(moved)
	}
	moved[end-1] ^= 1
	out = append(out, alteration{what: "moved to another key", bucket: r.bucket, key: moved, delete: r.key,
		value: resealed(r.bucket, moved, withTag(r.payload))})
	if r.tag != nil {
		out = append(out, alteration{what: "its tag dropped", bucket: r.bucket, key: r.key,
			value: resealed(r.bucket, r.key, slices.Clone(r.payload))})
	}
	return out
}

func (a alteration) apply(t *testing.T, path string) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(a.bucket))
		if a.delete != nil {
			if err := b.Delete(a.delete); err != nil {
				return err
			}
		}
		return b.Put(a.key, a.value)
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// edit is a payload with one field changed.
type edit struct {
	path    string
	payload []byte
}

// editsOf changes each field of a JSON payload in turn (a leaf: a string
// gets another last digit or letter, a number one more, a bool the other
// value; objects and lists are walked), or the text of an index value.
// An empty index value has no field.
func editsOf(p []byte) []edit {
	d := json.NewDecoder(bytes.NewReader(p))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		if len(p) == 0 {
			return nil
		}
		return []edit{{"(index value)", []byte(alterText(string(p)))}}
	}
	var out []edit
	walkLeaves(v, "", func(path string, set func(any), cur any) {
		var changed any
		switch x := cur.(type) {
		case string:
			changed = alterText(x)
		case json.Number:
			if n, err := strconv.ParseUint(string(x), 10, 64); err == nil {
				changed = json.Number(strconv.FormatUint(n+1, 10))
			} else {
				changed = json.Number(string(x) + "1")
			}
		case bool:
			changed = !x
		default:
			return // null: an absent value
		}
		set(changed)
		raw, err := json.Marshal(v)
		set(cur)
		if err != nil {
			panic(err)
		}
		out = append(out, edit{path, raw})
	})
	return out
}

// walkLeaves calls fn with every leaf of v, and how to set it.
func walkLeaves(v any, path string, fn func(path string, set func(any), cur any)) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			switch c := x[k].(type) {
			case map[string]any, []any:
				walkLeaves(c, path+"."+k, fn)
			default:
				fn(path+"."+k, func(n any) { x[k] = n }, c)
			}
		}
	case []any:
		for i := range x {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch c := x[i].(type) {
			case map[string]any, []any:
				walkLeaves(c, p, fn)
			default:
				fn(p, func(n any) { x[i] = n }, c)
			}
		}
	}
}

// alterText changes the last digit of s (to keep numbers, times and hex
// well formed), or its last letter, or makes an empty s "0".
func alterText(s string) string {
	b := []byte(s)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] >= '0' && b[i] <= '9' {
			b[i] = '0' + (b[i]-'0'+1)%10
			return string(b)
		}
	}
	for i := len(b) - 1; i >= 0; i-- {
		switch c := b[i] | 0x20; {
		case c >= 'a' && c <= 'z':
			b[i] = b[i]&^0x1f | (c-'a'+1)%26 + 1
			return string(b)
		}
	}
	return s + "0"
}

// readBack reads the record under bucket and key through the store's
// interface, as the daemon does.
func readBack(bucket string, key []byte) func(store.LocalTx) error {
	before, after, _ := bytes.Cut(key, []byte{0})
	u64 := func(b []byte) uint64 {
		if len(b) != 8 {
			return ^uint64(0)
		}
		return binary.BigEndian.Uint64(b)
	}
	u32 := func(b []byte) uint32 {
		if len(b) != 4 {
			return ^uint32(0)
		}
		return binary.BigEndian.Uint32(b)
	}
	return func(tx store.LocalTx) (err error) {
		switch bucket {
		case "neuron":
			_, err = tx.Root()
		case "grants":
			_, err = tx.GrantRevision(u64(key))
		case "progs":
			_, err = tx.Prog(string(key))
		case "prog_revisions":
			_, err = tx.ProgRevision(string(before), u64(after))
		case "invocations":
			_, err = tx.Invocation(string(key))
		case "archive":
			_, err = tx.ArchivedInvocation(string(key))
		case "children":
			_, err = tx.Children(string(before))
		case "prog_live":
			_, err = tx.LiveInvocations(string(before))
		case "reservations":
			_, err = tx.Reservation(string(key))
		case "operations":
			_, err = tx.Operation(string(key))
		case "op_index":
			_, err = tx.Operations(string(before))
		case "act_attempts":
			_, err = tx.ActAttempt(string(before), u32(after))
		case "claims":
			_, err = tx.Claim(string(before), u32(after))
		case "outcomes":
			_, err = tx.Outcome(string(before), u32(after))
		case "job_claims":
			_, err = tx.JobClaim(string(before), u32(after))
		default:
			err = fmt.Errorf("no reader for %s", bucket)
		}
		return err
	}
}

var tamperAll = flag.Bool("tamper.all", false, "TestTamperedRecordsAreRefused alters every record, not one of each shape")

// oneOfEachShape keeps the first record of each shape: its bucket, its
// fields, the values that say what it is (an operation's stage, an
// invocation's status, an outcome's kind), and whether the daemon's
// drives read it. The others are alike: their
// fields are read and checked by the same code.
func (f *tamperFixture) oneOfEachShape(records []storedRecord) []storedRecord {
	seen := map[string]bool{}
	var out []storedRecord
	for _, r := range records {
		var shape strings.Builder
		shape.WriteString(r.bucket)
		for id := range f.driven {
			if bytes.Contains(r.key, []byte(id)) || bytes.Contains(r.payload, []byte(id)) {
				shape.WriteString(" driven")
				break
			}
		}
		var v map[string]any
		if json.Unmarshal(r.payload, &v) == nil {
			for _, e := range editsOf(r.payload) {
				shape.WriteString(" " + e.path)
			}
			for _, k := range []string{"stage", "status", "kind", "executor"} {
				fmt.Fprintf(&shape, " %s=%v", k, v[k])
			}
		}
		if !seen[shape.String()] {
			seen[shape.String()] = true
			out = append(out, r)
		}
	}
	return out
}

// TestTamperedRecordsAreRefused alters every field of every record of
// every fencing bucket (signed records and the others alike; one record
// of each shape, every record with -tamper.all), moves each record to
// another key and drops each record's tag, each time on a fresh copy of
// a home that holds every kind of record, and checks that store check
// names the record (offline with the vault's key, and the daemon's),
// that the daemon's store refuses to read it (ErrTampered, naming it),
// and that a daemon started on the altered home runs no act the
// unaltered home does not run, with the same argument.
func TestTamperedRecordsAreRefused(t *testing.T) {
	f := buildTamperFixture(t)
	baseline := f.runDaemon(t, f.copyStore(t), nil)
	if len(baseline.check.Problems) != 0 {
		t.Fatalf("the fixture's check: %v", baseline.check.Problems)
	}
	want := map[actCall]bool{}
	for _, c := range baseline.calls {
		want[c] = true
	}
	// The proposal, the untaken outcome's next act, the reservation's
	// invocation, the child, the upgraded prog's invocation: each runs.
	if len(baseline.calls) < 8 {
		t.Fatalf("the unaltered home ran %d acts: %v", len(baseline.calls), baseline.calls)
	}
	records := f.records(t)
	if !*tamperAll {
		records = f.oneOfEachShape(records)
	}
	seen := map[string]int{}
	var n int
	for i, r := range records {
		alts := alterations(r)
		if raceEnabled && !*tamperAll {
			// The race detector makes each run about ten times
			// slower: one alteration of each record, in turn
			// (scripts/test.sh runs them all without it).
			alts = alts[i%len(alts) : i%len(alts)+1]
		}
		for _, a := range alts {
			n++
			seen[a.bucket]++
			name := recordName(a.bucket, a.key)
			label := fmt.Sprintf("%s: %s", name, a.what)
			path := f.copyStore(t)
			a.apply(t, path)
			// store check without a daemon: the file and the vault's key.
			offline, err := bolt.CheckFileTrusting(path, time.Second, f.key)
			if err != nil {
				t.Fatalf("%s: store check: %v", label, err)
			}
			if !slices.ContainsFunc(offline.Problems, func(p string) bool { return strings.Contains(p, name) }) {
				t.Errorf("%s: store check (offline) does not name it: %q", label, offline.Problems)
			}
			run := f.runDaemon(t, path, readBack(a.bucket, a.key))
			if !slices.ContainsFunc(run.check.Problems, func(p string) bool { return strings.Contains(p, name) }) {
				t.Errorf("%s: the store check does not name it: %q", label, run.check.Problems)
			}
			switch {
			case a.delete != nil && errors.Is(run.read, store.ErrNotFound):
				// Moved where the daemon never looks (another root, a
				// revision above the prog's): it is not found where
				// it was, and no act runs with it (below).
			case run.read == nil || !errors.Is(run.read, store.ErrTampered) || !strings.Contains(run.read.Error(), name):
				t.Errorf("%s: the daemon's store read it: %v", label, run.read)
			}
			for _, c := range run.calls {
				if !want[c] {
					t.Errorf("%s: an act ran with what the unaltered home never gives it: %+v", label, c)
				}
			}
		}
	}
	for _, b := range fencingBuckets {
		if seen[b] == 0 {
			t.Errorf("no record of %s was altered", b)
		}
	}
	t.Logf("%d records, %d alterations", len(records), n)
}

// TestLostReservationIsRefused: an invocation that holds steps whose
// reservation record is gone (deleted from the file) is refused by its
// drive, naming why. Before, the drive went round recovering a
// reservation it never found, for ever, holding the invocation's lock.
func TestLostReservationIsRefused(t *testing.T) {
	h := newHarness(t)
	h.grant(tagCount)
	h.bind()
	p := h.install(callOnInput(tagCount), tagCount)
	inv := h.invoke(p, 1)
	h.must(h.st.Local().Update(ctx, func(tx store.LocalTx) error {
		return tx.Reserve(&store.Reservation{Invocation: inv.ID, Steps: 100, Base: 0, Boot: h.e.Boot(), Created: inv.Created})
	}))
	boot := h.e.Boot()
	h.e.Close()
	h.must(h.st.Close())
	db, err := bbolt.Open(filepath.Join(h.home, "store", bolt.FileName), 0o600, &bbolt.Options{Timeout: time.Second})
	h.must(err)
	h.must(db.Update(func(tx *bbolt.Tx) error { return tx.Bucket([]byte("reservations")).Delete([]byte(inv.ID)) }))
	h.must(db.Close())
	st, err := bolt.Open(filepath.Join(h.home, "store"), time.Second)
	h.must(err)
	h.st = st
	t.Cleanup(func() { st.Close() })
	h.e = h.engine(boot)
	// A spinning drive would end only with the context (and fail).
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = h.e.Drive(c, inv.ID)
	wantRefusal(t, "a drive of an invocation whose reservation is lost", err, Conflict)
	wantCalls(t, "a lost reservation", h.count, 0)
}
