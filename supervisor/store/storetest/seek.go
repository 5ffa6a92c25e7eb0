package storetest

import (
	"errors"
	"reflect"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// SubmittedFrom: a walk of the submitted index begins where it is told,
// both ways, an existing seq included and a seq between two jobs taken
// as the next one in the walk's direction, across more jobs than one
// read batch; 0 (oldest first) and SeqNewest (newest first) visit all.
func SubmittedFrom(t *testing.T, b Backend) {
	s, _ := b.Open(t)
	const n = 150
	// Seqs 10 apart (a range of the suite's counter of our own): a from
	// between two jobs is a from no job has.
	base := testSeq.Add(10*n+10) - 10*n
	var seqs []uint64
	for lo := 0; lo < n; lo += 25 {
		if err := update(s, func(tx store.Tx) error {
			for i := lo; i < lo+25; i++ {
				j := NewJob("from-" + string(rune('a'+i/26)) + string(rune('a'+i%26)))
				j.Seq = base + uint64(10*i)
				if i == 11 {
					j.State, j.Program = lifecycle.Failed, "9f"
					j.Error = protocol.Errorf(protocol.CodeMemoryExhausted, "out of memory")
				}
				if err := Create(tx, j); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		seqs = append(seqs, base+uint64(10*i))
	}
	walk := func(tx store.Tx, from uint64, newest bool, max int) []uint64 {
		var got []uint64
		if err := tx.ForEachSubmittedFrom(from, newest, func(j *store.Job) bool {
			got = append(got, j.Seq)
			return max == 0 || len(got) < max
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	reversed := func(in []uint64) []uint64 {
		out := make([]uint64, len(in))
		for i, v := range in {
			out[len(in)-1-i] = v
		}
		return out
	}
	view(t, s, func(tx store.Tx) error {
		cases := []struct {
			name   string
			from   uint64
			newest bool
			want   []uint64
		}{
			{"all oldest first", 0, false, seqs},
			{"all newest first", store.SeqNewest, true, reversed(seqs)},
			{"from an existing seq, oldest first", seqs[70], false, seqs[70:]},
			{"from an existing seq, newest first", seqs[70], true, reversed(seqs[:71])},
			{"from a gap, oldest first", seqs[70] + 5, false, seqs[71:]},
			{"from a gap, newest first", seqs[70] + 5, true, reversed(seqs[:71])},
			{"past the newest, oldest first", seqs[n-1] + 1, false, nil},
			{"below the oldest, newest first", seqs[0] - 1, true, nil},
			{"the oldest, newest first", seqs[0], true, seqs[:1]},
			{"past the newest, newest first", seqs[n-1] + 1, true, reversed(seqs)},
		}
		for _, c := range cases {
			if got := walk(tx, c.from, c.newest, 0); !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s: %d jobs %v, want %d %v", c.name, len(got), head(got), len(c.want), head(c.want))
			}
			var got []uint64
			if err := tx.ForEachSubmittedSummary(c.from, c.newest, func(j *store.JobSummary) bool {
				got = append(got, j.Seq)
				return true
			}); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s, summaries: %d jobs %v, want %d %v", c.name, len(got), head(got), len(c.want), head(c.want))
			}
		}
		// A summary is the record's, its error's code included.
		var jobs []*store.Job
		var sums []*store.JobSummary
		tx.ForEachSubmittedFrom(seqs[10], false, func(j *store.Job) bool { jobs = append(jobs, j); return len(jobs) < 3 })
		tx.ForEachSubmittedSummary(seqs[10], false, func(j *store.JobSummary) bool { sums = append(sums, j); return len(sums) < 3 })
		for i := range jobs {
			if i >= len(sums) || !reflect.DeepEqual(sums[i], store.SummaryOf(jobs[i])) {
				t.Errorf("summary %d: %+v, want %+v", i, sums, store.SummaryOf(jobs[i]))
			}
		}
		if len(sums) > 1 && (sums[1].ErrorCode != protocol.CodeMemoryExhausted || sums[1].Program != "9f" || sums[1].State != lifecycle.Failed) {
			t.Errorf("a failed job's summary: %+v", sums[1])
		}
		if got := walk(tx, seqs[100], true, 3); !reflect.DeepEqual(got, []uint64{seqs[100], seqs[99], seqs[98]}) {
			t.Errorf("early stop: %v", got)
		}
		return nil
	})
}

func head(s []uint64) []uint64 {
	if len(s) > 4 {
		return s[:4]
	}
	return s
}

// JobFrom: a walk in id order begins at the first id at or above from
// (a prefix of ids finds them first) and stops when told.
func JobFrom(t *testing.T, b Backend) {
	s, _ := b.Open(t)
	ids := []string{"pfx-a", "pfx-b1", "pfx-b2", "pfx-c", "pfy"}
	if err := update(s, func(tx store.Tx) error {
		for _, id := range ids {
			if err := Create(tx, NewJob(id)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	view(t, s, func(tx store.Tx) error {
		for _, c := range []struct {
			from string
			want []string
		}{
			{"pfx-b", []string{"pfx-b1", "pfx-b2", "pfx-c", "pfy"}},
			{"pfx-b2", []string{"pfx-b2", "pfx-c", "pfy"}},
			{"pfz", nil},
			{"", ids},
		} {
			var got []string
			if err := tx.ForEachJobFrom(c.from, func(j *store.Job) bool { got = append(got, j.ID); return true }); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("from %q: %v, want %v", c.from, got, c.want)
			}
		}
		var got []string
		tx.ForEachJobFrom("pfx", func(j *store.Job) bool { got = append(got, j.ID); return len(got) < 2 })
		if !reflect.DeepEqual(got, ids[:2]) {
			t.Errorf("early stop: %v", got)
		}
		return nil
	})
	// A job's program is as immutable as its spec.
	err := update(s, func(tx store.Tx) error {
		j, err := tx.Job("pfx-a")
		if err != nil {
			return err
		}
		j.Program = "00"
		return tx.PutJob(j)
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("a job's program changed: %v", err)
	}
}
