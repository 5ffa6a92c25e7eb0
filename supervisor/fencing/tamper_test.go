package fencing

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
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
	f := &tamperFixture{home: h.home, file: filepath.Join(h.home, "store", store.FileName)}
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
	h.must(h.st.Update(ctx, func(tx store.Tx) error {
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
	h.must(h.st.View(ctx, func(tx store.Tx) error {
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
	h.must(h.st.Update(ctx, func(tx store.Tx) error {
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
	check *store.CheckReport
}

func (f *tamperFixture) runDaemon(t *testing.T, file string, readBack func(store.Tx) error) daemonRun {
	t.Helper()
	var run daemonRun
	st, err := store.OpenBoltWith(filepath.Dir(file), store.Options{LockWait: time.Second, NoSync: true})
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
	e, err := New(Config{Store: st, Vault: neuron.OpenVault(neuron.VaultDir(f.home)), Acts: acts, Boot: "tampered",
		Version: "test", DeviceID: "test-device", Unbatched: true})
	if err != nil {
		// A daemon that does not start runs nothing.
		return run
	}
	defer e.Close()
	if readBack != nil {
		run.read = st.View(ctx, readBack)
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
	path := filepath.Join(dir, store.FileName)
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
	db, err := bolt.Open(f.file, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []storedRecord
	err = db.View(func(tx *bolt.Tx) error {
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
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
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
func readBack(bucket string, key []byte) func(store.Tx) error {
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
	return func(tx store.Tx) (err error) {
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
			offline, err := store.CheckFileTrusting(path, time.Second, f.key)
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

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
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
	h.must(h.st.Update(ctx, func(tx store.Tx) error {
		return tx.Reserve(&store.Reservation{Invocation: inv.ID, Steps: 100, Base: 0, Boot: h.e.Boot(), Created: inv.Created})
	}))
	boot := h.e.Boot()
	h.e.Close()
	h.must(h.st.Close())
	db, err := bolt.Open(filepath.Join(h.home, "store", store.FileName), 0o600, &bolt.Options{Timeout: time.Second})
	h.must(err)
	h.must(db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("reservations")).Delete([]byte(inv.ID)) }))
	h.must(db.Close())
	st, err := store.OpenBolt(filepath.Join(h.home, "store"), time.Second)
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
