package supervisor

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// submitN submits jobs id0..id(n-1) of prefix, executing add2.
func submitN(t testing.TB, s *Supervisor, prefix string, n int) {
	t.Helper()
	for i := range n {
		sub := spec(t, fmt.Sprintf("%s%d", prefix, i), protocol.OpExecute, add2, []uint64{uint64(i), 1}, protocol.Limits{}, nil)
		if _, _, err := s.Submit(context.Background(), SubmitRequest{Spec: sub}); err != nil {
			t.Fatal(err)
		}
	}
}

// recountJobs counts the store's jobs by state with a full scan.
func recountJobs(t testing.TB, s *Supervisor) map[lifecycle.State]uint64 {
	t.Helper()
	out := map[lifecycle.State]uint64{}
	if err := s.store.View(context.Background(), func(tx store.Tx) error {
		return tx.ForEachJob(func(j *store.Job) bool { out[j.State]++; return true })
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func overview(t testing.TB, s *Supervisor) *Overview {
	t.Helper()
	o, err := s.Overview(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// sum of a series' buckets.
func sum(v []uint64) (n uint64) {
	for _, c := range v {
		n += c
	}
	return n
}

// The overview's counts follow every write of a mixed workload (accepted,
// failed, rejected, cancelled, removed by retention, new jobs queued)
// without a scan, and equal a full recount of the store after it, and
// after a restart (which takes them from one scan). The series count the
// acceptances and failures by code; the latencies have a sample per
// accepted job.
func TestOverviewCountsFollowWrites(t *testing.T) {
	home := t.TempDir()
	s, _ := openStub(t, home, nil)
	ctx := context.Background()
	submitN(t, s, "mix", 10)
	if o := overview(t, s); o.Jobs[lifecycle.Queued] != 10 || o.QueueDepth != 10 || o.OldestQueued.IsZero() {
		t.Fatalf("after 10 submissions: %v, queue %d, oldest %v", o.Jobs, o.QueueDepth, o.OldestQueued)
	}
	endStub(t, s, nil, "")
	endStub(t, s, nil, "")
	endStub(t, s, nil, "")
	endStub(t, s, protocol.Errorf(protocol.CodeMemoryExhausted, "out of memory"), lifecycle.Failed)
	endStub(t, s, protocol.Errorf(protocol.CodeMemoryExhausted, "out of memory"), lifecycle.Failed)
	endStub(t, s, protocol.Errorf(protocol.CodeProofRejected, "refused"), lifecycle.Rejected)
	if _, err := s.Cancel(ctx, "mix9", "test"); err != nil {
		t.Fatal(err)
	}
	if rep, err := s.GC(ctx, GCRequest{State: lifecycle.Accepted}); err != nil || len(rep.Removed) != 3 {
		t.Fatalf("gc: %v %v", rep, err)
	}
	submitN(t, s, "late", 2)

	o := overview(t, s)
	want := recountJobs(t, s)
	if !maps.Equal(o.Jobs, want) {
		t.Fatalf("counts %v, a recount finds %v", o.Jobs, want)
	}
	if want := map[lifecycle.State]uint64{lifecycle.Queued: 5, lifecycle.Failed: 2, lifecycle.Rejected: 1, lifecycle.Cancelled: 1}; !maps.Equal(o.Jobs, want) {
		t.Errorf("counts %v, want %v", o.Jobs, want)
	}
	if o.QueueDepth != 5 {
		t.Errorf("queue depth %d", o.QueueDepth)
	}
	// /metrics shows the same counts.
	var prom strings.Builder
	if err := s.WritePrometheus(ctx, &prom); err != nil {
		t.Fatal(err)
	}
	for _, st := range lifecycle.States {
		if line := fmt.Sprintf("cyber_supervisor_jobs{state=%q} %d\n", st, want[st]); !strings.Contains(prom.String(), line) {
			t.Errorf("metrics lack %q", line)
		}
	}
	for _, se := range []Series{o.LastHour, o.LastDay} {
		if got := sum(se.Accepted); got != 3 {
			t.Errorf("%v series: %d accepted, want 3", se.Step, got)
		}
		failures := map[protocol.Code]uint64{}
		for _, f := range se.Failures {
			failures[f.Code] = f.Total
		}
		if want := map[protocol.Code]uint64{protocol.CodeMemoryExhausted: 2, protocol.CodeProofRejected: 1}; !maps.Equal(failures, want) {
			t.Errorf("%v series: failures %v, want %v", se.Step, failures, want)
		}
	}
	if len(o.LastHour.Accepted) != 60 || len(o.LastDay.Accepted) != 24 {
		t.Errorf("buckets: %d and %d", len(o.LastHour.Accepted), len(o.LastDay.Accepted))
	}
	if l := o.Latency; l.Admission.Samples != 3 || l.Run.Samples != 3 || l.Verify.Samples != 3 || l.Admission.P95 < l.Admission.P50 {
		t.Errorf("latencies %+v", l)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}

	s2, _ := openStub(t, home, nil)
	o2 := overview(t, s2)
	if !maps.Equal(o2.Jobs, want) || sum(o2.LastHour.Accepted) != 0 || o2.QueueDepth != 5 {
		// Retention removed the accepted jobs: a scan finds none.
		t.Errorf("after a restart: counts %v (want %v), %d accepted in the hour", o2.Jobs, want, sum(o2.LastHour.Accepted))
	}
	if o2.Latency.Admission.Samples != 0 || len(o2.LastHour.Failures) != 2 {
		t.Errorf("after a restart: %+v, failures %v", o2.Latency, o2.LastHour.Failures)
	}
}

// listAll walks every page of q, calling between(page) after each.
func listAll(t testing.TB, s *Supervisor, q JobQuery, between func(int)) []*store.JobSummary {
	t.Helper()
	var all []*store.JobSummary
	for page := 0; ; page++ {
		p, err := s.ListJobs(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, p.Jobs...)
		if p.Next == "" {
			return all
		}
		if page > 10000 {
			t.Fatal("no end of the list")
		}
		q.Cursor = p.Next
		if between != nil {
			between(page)
		}
	}
}

// Pages return every job that was there when the walk began exactly
// once, newest first, while jobs are being submitted between pages (they
// go to the front, before the walk's cursor); none twice.
func TestListJobsPagesEveryJobOnceWhileAdding(t *testing.T) {
	s, _ := openStub(t, t.TempDir(), nil)
	submitN(t, s, "old", 60)
	added := 0
	all := listAll(t, s, JobQuery{Limit: 7}, func(int) {
		submitN(t, s, fmt.Sprintf("new%d-", added), 1)
		added++
	})
	seen := map[string]int{}
	var last uint64
	for i, j := range all {
		seen[j.ID]++
		if i > 0 && j.Seq >= last {
			t.Errorf("not newest first: %s (seq %d) after seq %d", j.ID, j.Seq, last)
		}
		last = j.Seq
	}
	for i := range 60 {
		if id := fmt.Sprintf("old%d", i); seen[id] != 1 {
			t.Errorf("%s listed %d times", id, seen[id])
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", id, n)
		}
	}
	if added < 8 {
		t.Errorf("only %d pages", added)
	}
}

// A filter that matches rarely costs at most the page's scan budget per
// page: pages come back short (even empty) with a cursor to go on, and
// the walk still finds every match once.
func TestListJobsScanBudget(t *testing.T) {
	s, _ := openStub(t, t.TempDir(), nil)
	s.pageScan = 5
	submitN(t, s, "b", 23)
	for range 2 {
		endStub(t, s, protocol.Errorf(protocol.CodeDeadlineExceeded, "late"), lifecycle.Failed)
	}
	q := JobQuery{State: lifecycle.Failed}
	p, err := s.ListJobs(context.Background(), q)
	if err != nil || len(p.Jobs) != 0 || p.Next == "" || p.Scanned != 5 {
		t.Fatalf("first page: %d jobs, next %q, scanned %d, %v", len(p.Jobs), p.Next, p.Scanned, err)
	}
	all := listAll(t, s, q, nil)
	if len(all) != 2 || all[0].ID != "b1" || all[1].ID != "b0" {
		t.Errorf("failed jobs: %v", all)
	}
}

// Each filter keeps what it says, alone and combined.
func TestListJobsFilters(t *testing.T) {
	s, _ := openStub(t, t.TempDir(), nil)
	ctx := context.Background()
	other := "[5 [[0 6] [0 2]]]"
	for i, c := range []struct {
		op      protocol.Operation
		program string
	}{{protocol.OpExecute, add2}, {protocol.OpProve, add2}, {protocol.OpExecute, other}, {protocol.OpExecute, add2}, {protocol.OpProve, other}} {
		sub := spec(t, fmt.Sprintf("f%d", i), c.op, c.program, []uint64{1, 2}, protocol.Limits{}, nil)
		if _, _, err := s.Submit(ctx, SubmitRequest{Spec: sub}); err != nil {
			t.Fatal(err)
		}
	}
	endStub(t, s, nil, "")                                                                  // f0 accepted
	endStub(t, s, protocol.Errorf(protocol.CodeMemoryExhausted, "oom"), lifecycle.Failed)   // f1
	endStub(t, s, protocol.Errorf(protocol.CodeDeadlineExceeded, "late"), lifecycle.Failed) // f2
	job := func(id string) *store.Job {
		st, err := s.Status(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return st.Job
	}
	f0, f2, f3 := job("f0"), job("f2"), job("f3")
	if f0.Program == "" || f0.Program == f2.Program {
		t.Fatalf("programs %q and %q", f0.Program, f2.Program)
	}
	ids := func(q JobQuery) string {
		var out string
		for _, j := range listAll(t, s, q, nil) {
			out += j.ID + " "
		}
		return out
	}
	for _, c := range []struct {
		name string
		q    JobQuery
		want string
	}{
		{"none", JobQuery{}, "f4 f3 f2 f1 f0 "},
		{"state", JobQuery{State: lifecycle.Failed}, "f2 f1 "},
		{"op", JobQuery{Operation: "prove"}, "f4 f1 "},
		{"code", JobQuery{Code: protocol.CodeMemoryExhausted}, "f1 "},
		{"program", JobQuery{Program: f2.Program}, "f4 f2 "},
		{"since", JobQuery{Since: f2.Created}, "f4 f3 f2 "},
		{"until", JobQuery{Until: f3.Created}, "f2 f1 f0 "},
		{"since and until", JobQuery{Since: f2.Created, Until: f3.Created}, "f2 "},
		{"state and op", JobQuery{State: lifecycle.Queued, Operation: "execute"}, "f3 "},
		{"program and op", JobQuery{Program: f0.Program, Operation: "execute"}, "f3 f0 "},
		{"limit", JobQuery{Limit: 2}, "f4 f3 f2 f1 f0 "},
	} {
		if got := ids(c.q); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if p, err := s.ListJobs(ctx, JobQuery{Limit: 2}); err != nil || len(p.Jobs) != 2 || p.Next == "" {
		t.Errorf("a page of 2: %v %v", p, err)
	}
}

// A damaged cursor is invalid_cursor, whatever is wrong with it; never a
// panic, never another position.
func TestListJobsDamagedCursor(t *testing.T) {
	s, _ := openStub(t, t.TempDir(), nil)
	submitN(t, s, "c", 5)
	ctx := context.Background()
	p, err := s.ListJobs(ctx, JobQuery{Limit: 2})
	if err != nil || p.Next == "" {
		t.Fatal(p, err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(p.Next)
	var bad []string
	for i := range raw {
		for _, bit := range []byte{1, 0x80} {
			b := append([]byte(nil), raw...)
			b[i] ^= bit
			bad = append(bad, base64.RawURLEncoding.EncodeToString(b))
		}
	}
	bad = append(bad, p.Next[:len(p.Next)-1], p.Next+"A", "!!!", "AAAA", p.Next+"=", base64.RawURLEncoding.EncodeToString(append(raw, 0)))
	for _, c := range bad {
		if _, err := s.ListJobs(ctx, JobQuery{Limit: 2, Cursor: c}); !errors.Is(err, ErrInvalidCursor) {
			t.Errorf("cursor %q: %v", c, err)
		}
	}
	// A cursor goes on only with the filters it was made for.
	if _, err := s.ListJobs(ctx, JobQuery{Limit: 2, Cursor: p.Next, State: lifecycle.Queued}); !errors.Is(err, ErrInvalidCursor) {
		t.Errorf("another filter's cursor: %v", err)
	}
	if p2, err := s.ListJobs(ctx, JobQuery{Limit: 5, Cursor: p.Next}); err != nil || len(p2.Jobs) != 3 {
		t.Errorf("another limit: %v %v", p2, err)
	}
}

// FindJob: an exact id, a unique prefix, an ambiguous one, an unknown one.
func TestFindJob(t *testing.T) {
	s, _ := openStub(t, t.TempDir(), nil)
	ctx := context.Background()
	for _, id := range []string{"abc", "abcd1", "abce2", "xyz"} {
		submitN(t, s, id, 1)
	}
	for _, c := range []struct {
		prefix, want string
		err          error
	}{
		{"xy", "xyz0", nil},
		{"abcd", "abcd10", nil},
		{"abc0", "abc0", nil},
		{"abc", "", ErrAmbiguousJob},
		{"q", "", ErrUnknownJob},
		{"zzz", "", ErrUnknownJob},
	} {
		got, err := s.FindJob(ctx, c.prefix)
		if got != c.want || !errors.Is(err, c.err) {
			t.Errorf("%q: %q %v, want %q %v", c.prefix, got, err, c.want, c.err)
		}
	}
	if _, err := s.FindJob(ctx, ".x"); protocol.AsError(err).Code != protocol.CodeInvalidJob {
		t.Errorf("an invalid prefix: %v", err)
	}
}
