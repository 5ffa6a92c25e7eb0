package bolt

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

func fullJob() *store.Job {
	now := time.Unix(1700000000, 5).UTC()
	retry := store.RetryPolicy{MaxAttempts: 2, Backoff: 1, MaxBackoff: 2, Retryable: []protocol.Code{protocol.CodeIOError}}
	return &store.Job{ID: "j", SpecDigest: "d", Operation: "prove", Priority: 3, Retry: retry,
		Seq: 4, State: lifecycle.Failed, Attempts: 2, Accepted: 1, CancelRequested: true, NotBefore: now,
		Created: now, Updated: now, Error: protocol.Errorf(protocol.CodeIOError, "x"), Result: []byte(`{}`),
		Resolved: &store.Resolution{Attempt: 1, As: store.ResolveRetry, Time: now}}
}

func fullAttempt() *store.Attempt {
	now := time.Unix(1700000000, 5).UTC()
	return &store.Attempt{Job: "j", N: 1, Boot: "b", Generation: 2, Created: now, State: lifecycle.Failed,
		Started: now, Ended: now, CancelRequested: now, CancelAcked: now, Error: protocol.Errorf(protocol.CodeIOError, "x"),
		Produced: []byte(`{}`), Artifact: "a", ArtifactDigest: "d", Verified: []byte(`{}`),
		Telemetry: store.Telemetry{WallTime: 1, PeakMemory: 2, Killed: "k", OOM: true}}
}

// TestCloneIsDeep: a record handed out must share no memory with the
// cached one. The fixtures fill every slice and pointer, so a field added
// later without a clone fails here.
func TestCloneIsDeep(t *testing.T) {
	j := fullJob()
	checkDeepCopy(t, "Job", reflect.ValueOf(j).Elem(), reflect.ValueOf(j.Clone()).Elem())
	a := fullAttempt()
	checkDeepCopy(t, "Attempt", reflect.ValueOf(a).Elem(), reflect.ValueOf(a.Clone()).Elem())
	c := &store.JobClaim{Job: "j", Attempt: 1, Generation: 2, Created: time.Now(), Signature: store.Hex{1, 2},
		Worker: protocol.WorkerDescriptor{Machine: protocol.MachineNox, Acts: []uint64{3}}}
	checkDeepCopy(t, "JobClaim", reflect.ValueOf(c).Elem(), reflect.ValueOf(cloneJobClaim(c)).Elem())
}

func checkDeepCopy(t *testing.T, path string, a, b reflect.Value) {
	t.Helper()
	if !reflect.DeepEqual(a.Interface(), b.Interface()) {
		t.Fatalf("%s: clone differs", path)
	}
	switch a.Kind() {
	case reflect.Slice:
		if a.Len() == 0 {
			t.Fatalf("%s: fill it in the fixture", path)
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: shared by the clone", path)
		}
	case reflect.Pointer, reflect.Map:
		if a.IsNil() {
			t.Fatalf("%s: fill it in the fixture", path)
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: shared by the clone", path)
		}
	case reflect.Struct:
		if a.Type() == reflect.TypeOf(time.Time{}) {
			return
		}
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				checkDeepCopy(t, path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i))
			}
		}
	}
}

// TestDecodedFollowsTheBytes: reads see every write, committed or rolled
// back, and what a caller does to a record it got never reaches the next
// reader.
func TestDecodedFollowsTheBytes(t *testing.T) {
	s := open(t, t.TempDir())
	ctx := context.Background()
	j := newJob("a")
	j.Retry.Retryable = []protocol.Code{protocol.CodeIOError}
	if err := update(t, s, func(tx store.Tx) error { return create(tx, j) }); err != nil {
		t.Fatal(err)
	}
	read := func() *store.Job {
		var got *store.Job
		if err := s.View(ctx, func(tx store.Tx) error {
			var err error
			got, err = tx.Job("a")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	first := read()
	first.Retry.Retryable[0] = "X"
	first.Priority = 9
	if got := read(); !reflect.DeepEqual(got, j) {
		t.Fatalf("a caller's change leaked into the cache: %+v", got)
	}
	// A write that rolls back leaves the stored (and so the read) record.
	errRollback := context.Canceled
	s.Update(ctx, func(tx store.Tx) error {
		k := *j
		k.Priority = 7
		if err := tx.PutJob(&k); err != nil {
			return err
		}
		if got, _ := tx.Job("a"); got.Priority != 7 {
			t.Errorf("own write not seen in the transaction: %d", got.Priority)
		}
		return errRollback
	})
	if got := read(); got.Priority != j.Priority {
		t.Fatalf("rolled back write seen: %d", got.Priority)
	}
	k := *j
	k.Priority = 5
	if err := update(t, s, func(tx store.Tx) error { return tx.PutJob(&k) }); err != nil {
		t.Fatal(err)
	}
	if got := read(); got.Priority != 5 {
		t.Fatalf("committed write not seen: %d", got.Priority)
	}
}

// TestRememberedIsDecoded: what a write remembers is exactly what a
// read of the written bytes decodes, in every shape the records take
// (lists nil, empty or full, an error or none, times with a monotonic
// reading), so a cached read cannot differ from an uncached one.
func TestRememberedIsDecoded(t *testing.T) {
	now := time.Now().UTC()
	perr := protocol.Errorf(protocol.CodeCancelled, "x")
	invs := []*store.Invocation{
		{ID: "i", Created: now, Updated: now},
		{ID: "i", Inputs: store.U64s{}, Output: store.U64s{}, Result: []byte{}, Created: now, Updated: now, Error: &protocol.Error{}},
		{ID: "i", Inputs: store.U64s{1, 2}, Output: store.U64s{3}, Result: []byte{0, 1}, Pending: "p", Error: perr, Created: now},
	}
	ops := []*store.Operation{{ID: "o", Created: now}, {ID: "o", Argument: []byte{}, Created: now}, {ID: "o", Argument: []byte{1}, Stage: store.StageOutcome, Attempt: 1}}
	outs := []*store.Outcome{{Operation: "o", Recorded: now}, {Operation: "o", Value: []byte{}, Recorded: now}, {Operation: "o", Value: []byte{1}, Kind: store.OutcomeValue}}
	res := []*store.Reservation{{Invocation: "i", Created: now}, {Invocation: "i", Steps: 3, Base: 2, Boot: "b"}}
	for _, v := range invs {
		checkRemembered(t, v, cloneInvocation, canonInvocation)
	}
	for _, v := range ops {
		checkRemembered(t, v, cloneOperation, nil)
	}
	for _, v := range outs {
		checkRemembered(t, v, cloneOutcome, canonOutcome)
	}
	for _, v := range res {
		checkRemembered(t, v, func(r *store.Reservation) *store.Reservation { c := *r; return &c }, nil)
	}
}

func checkRemembered[T any](t *testing.T, v *T, clone func(*T) *T, canon func(*T)) {
	t.Helper()
	c := newDecoded(clone)
	dir := t.TempDir()
	s, err := Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Update(context.Background(), func(tx store.Tx) error {
		return putRemembered(tx.(*boltTx).bucket(bucketMeta), c, "k", v, canon)
	})
	if err != nil {
		t.Fatal(err)
	}
	e := c.m["k"]
	got := new(T)
	if err := decodeStrict(e.raw, got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e.v, got) {
		t.Fatalf("remembered %#v, the bytes decode to %#v", e.v, got)
	}
}
