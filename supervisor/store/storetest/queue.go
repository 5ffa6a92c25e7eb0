package storetest

import (
	"reflect"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// QueueOrderAndEvents: priority then FIFO; re-enqueue moves; events are
// kept per job in order.
func QueueOrderAndEvents(t *testing.T, b Backend) {
	s, _ := b.Open(t)
	err := update(s, func(tx store.Tx) error {
		for _, q := range []struct {
			id  string
			pri int32
			seq uint64
		}{{"low1", -5, 1}, {"mid1", 0, 2}, {"high", 7, 3}, {"mid2", 0, 4}, {"low2", -5, 5}} {
			if err := tx.Enqueue(q.id, q.pri, q.seq); err != nil {
				return err
			}
		}
		if err := tx.Dequeue("mid2"); err != nil {
			return err
		}
		return tx.Enqueue("low1", -5, 9)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"high", "mid1", "low2", "low1"}
	view(t, s, func(tx store.Tx) error {
		got, err := tx.Queued(10)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("queue %v %v, want %v", got, err, want)
		}
		if n, err := tx.QueueLen(); n != 4 || err != nil {
			t.Fatalf("queue length %d %v", n, err)
		}
		return nil
	})
	// What a transaction wrote itself is in what it reads.
	err = update(s, func(tx store.Tx) error {
		if err := tx.Enqueue("top", 100, 10); err != nil {
			return err
		}
		if err := tx.Dequeue("mid1"); err != nil {
			return err
		}
		got, err := tx.Queued(10)
		if w := []string{"top", "high", "low2", "low1"}; err != nil || !reflect.DeepEqual(got, w) {
			t.Errorf("queue inside the transaction %v %v, want %v", got, err, w)
		}
		if n, err := tx.QueueLen(); n != 4 || err != nil {
			t.Errorf("queue length inside the transaction %d %v", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = update(s, func(tx store.Tx) error {
		for i := range 3 {
			if err := tx.AppendEvent(store.Event{Job: "x", To: lifecycle.Queued, Reason: string(rune('a' + i))}); err != nil {
				return err
			}
		}
		return tx.AppendEvent(store.Event{Job: "xy", To: lifecycle.Queued})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := update(s, func(tx store.Tx) error {
		return tx.AppendEvent(store.Event{Job: "x", To: lifecycle.Running, Reason: "d", Host: "h1"})
	}); err != nil {
		t.Fatal(err)
	}
	view(t, s, func(tx store.Tx) error {
		ev, _ := tx.Events("x")
		if len(ev) != 4 || ev[0].Reason != "a" || ev[2].Reason != "c" || ev[3].Host != "h1" {
			t.Fatalf("events %+v", ev)
		}
		for i := 1; i < len(ev); i++ {
			if ev[i-1].Seq >= ev[i].Seq {
				t.Fatalf("event seqs out of order: %+v", ev)
			}
		}
		if ev, _ := tx.Events("xy"); len(ev) != 1 {
			t.Fatalf("events of xy: %+v", ev)
		}
		return nil
	})
}

// QueueVisitStops: ForEachQueued stops when told.
func QueueVisitStops(t *testing.T, b Backend) {
	s, _ := b.Open(t)
	// Ten per transaction: a store on etcd takes at most 128 writes in
	// one (docs/cluster.md).
	for b := 0; b < 300; b += 10 {
		if err := update(s, func(tx store.Tx) error {
			for i := b; i < b+10; i++ {
				if err := tx.Enqueue(string(rune('A'+i%26))+string(rune('a'+i/26)), 0, uint64(i+1)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	view(t, s, func(tx store.Tx) error {
		var got []string
		if err := tx.ForEachQueued(func(id string) bool { got = append(got, id); return len(got) < 200 }); err != nil {
			return err
		}
		if len(got) != 200 || got[0] != "Aa" || got[199] != "Rh" {
			t.Fatalf("visited %d: %v…%v", len(got), got[:2], got[len(got)-1])
		}
		if n, _ := tx.QueueLen(); n != 300 {
			t.Fatalf("queue length %d", n)
		}
		return nil
	})
}
