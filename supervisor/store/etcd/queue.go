package etcd

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// A job's events, the ready queue, and removal with its tombstone.

func (t *tx) AppendEvent(e store.Event) error {
	sk := t.s.k.evseq(e.Job)
	v, ok, _, err := t.get(sk)
	if err != nil {
		return err
	}
	var seq uint64
	if ok {
		if len(v) != 8 {
			return t.s.damaged(sk, fmt.Sprintf("an event sequence of %d bytes", len(v)))
		}
		seq = binary.BigEndian.Uint64(v)
	}
	seq++
	e.Seq = seq
	t.put(sk, binary.BigEndian.AppendUint64(nil, seq))
	return t.putJSON(t.s.k.event(e.Job, seq), e)
}

func (t *tx) Events(job string) ([]store.Event, error) {
	var out []store.Event
	p := t.s.k.events(job)
	err := t.scan(p, prefixEnd(p), false, false, true, func(e kv) (bool, error) {
		var ev store.Event
		if err := t.decodeJSON(e.key, e.val, &ev); err != nil {
			return false, err
		}
		out = append(out, ev)
		return true, nil
	})
	return out, err
}

func (t *tx) Enqueue(job string, priority int32, seq uint64) error {
	if err := t.Dequeue(job); err != nil {
		return err
	}
	k := t.s.k.queueEntry(priority, seq)
	t.put(k, []byte(job))
	t.put(t.s.k.queueIdx(job), []byte(k))
	return nil
}

func (t *tx) Dequeue(job string) error {
	ik := t.s.k.queueIdx(job)
	k, ok, _, err := t.get(ik)
	if err != nil || !ok {
		return err
	}
	if !bytes.HasPrefix(k, []byte(t.s.k.queue())) {
		return t.s.damaged(ik, "names no queue entry")
	}
	t.del(string(k))
	t.del(ik)
	return nil
}

func (t *tx) Queued(n int) ([]string, error) { return store.FirstQueued(t.ForEachQueued, n) }

func (t *tx) ForEachQueued(fn func(job string) bool) error {
	p := t.s.k.queue()
	return t.scan(p, prefixEnd(p), false, false, true, func(e kv) (bool, error) {
		// The visit reads the job, and a take its spec: one request.
		id := string(e.val)
		if err := t.fetchJob(id, t.s.k.spec(id)); err != nil {
			return false, err
		}
		return fn(id), nil
	})
}

func (t *tx) QueueLen() (int, error) {
	p := t.s.k.queue()
	end := prefixEnd(p)
	own := slices.ContainsFunc(t.order, func(k string) bool { return k >= p && k < end })
	if !own && len(t.delRanges) == 0 {
		ctx, cancel := t.readCtx()
		defer cancel()
		t.s.stats.reads.Add(1)
		resp, err := t.s.cli.Get(ctx, p, append(t.snapshot(), clientv3.WithRange(end), clientv3.WithCountOnly())...)
		if err != nil {
			return 0, t.fail(err)
		}
		t.pin(resp.Header.Revision)
		return int(resp.Count), nil
	}
	n := 0
	err := t.scan(p, end, false, true, false, func(kv) (bool, error) { n++; return true, nil })
	return n, err
}

func (t *tx) RemoveJob(id string, removed time.Time) (*store.Tombstone, error) {
	j, err := t.Job(id)
	if err != nil {
		return nil, fmt.Errorf("remove job: %w", err)
	}
	if err := store.CheckRemovable(j); err != nil {
		return nil, err
	}
	if err := t.Dequeue(id); err != nil {
		return nil, err
	}
	k := t.s.k
	for _, p := range []string{k.attempts(id), k.events(id), k.unfinishedOf(id)} {
		t.delPrefix(p)
	}
	// The accepted index entry stays: write-once keys are never deleted
	// (the tombstone keeps the id from being created again anyway).
	for _, key := range []string{k.spec(id), k.submittedSeq(j.Seq), k.job(id), k.evseq(id), k.liveJob(id)} {
		t.del(key)
	}
	ts := store.TombstoneOf(j, removed)
	if err := t.putJSON(k.tombstone(id), ts); err != nil {
		return nil, fmt.Errorf("remove job %q: tombstone: %w", id, err)
	}
	return ts, nil
}

func (t *tx) Tombstone(id string) (*store.Tombstone, error) {
	k := t.s.k.tombstone(id)
	raw, ok, _, err := t.get(k)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("tombstone of %q: %w", id, store.ErrNotFound)
	}
	var ts store.Tombstone
	if err := t.decodeJSON(k, raw, &ts); err != nil {
		return nil, err
	}
	return &ts, nil
}
