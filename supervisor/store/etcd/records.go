package etcd

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// The store.Tx methods: the same rules as the local store
// (store/rules.go), over the keys of keys.go.

func (t *tx) decodeJSON(k string, raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return t.s.damaged(k, "the record does not decode: "+err.Error())
	}
	return nil
}

func (t *tx) putJSON(k string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", k, err)
	}
	t.put(k, raw)
	return nil
}

func (t *tx) Meta() (store.Meta, error) {
	var m store.Meta
	k := t.s.k.meta()
	raw, ok, _, err := t.get(k)
	if err != nil {
		return m, err
	}
	if !ok {
		return m, fmt.Errorf("meta: %w", store.ErrNotFound)
	}
	return m, t.decodeJSON(k, raw, &m)
}

// NextSeq: one counter for the cluster would make every two concurrent
// submissions conflict. The seq is instead the time (nanoseconds) or the
// highest seq handed out plus one, whichever is larger, and the commit
// raises the high-water mark (seq) to it in a nested transaction that
// never fails the outer one. A submission that began after another
// committed reads a mark at least as high, so causal order is FIFO order;
// concurrent ones are ordered by their clocks, and two that pick the same
// seq conflict on its submitted index key.
func (t *tx) NextSeq() (uint64, error) {
	k := t.s.k.seq()
	if err := t.fetch(k); err != nil {
		return 0, err
	}
	var mark uint64
	if e := t.cache[k]; e.present {
		if len(e.val) != 8 {
			return 0, t.s.damaged(k, fmt.Sprintf("a seq mark of %d bytes", len(e.val)))
		}
		mark = binary.BigEndian.Uint64(e.val)
	}
	seq := max(uint64(time.Now().UnixNano()), mark+1, t.s.lastSeq.Load()+1)
	for {
		last := t.s.lastSeq.Load()
		if last >= seq || t.s.lastSeq.CompareAndSwap(last, seq) {
			break
		}
	}
	t.seqMark = max(t.seqMark, seq)
	return seq, nil
}

func (t *tx) PutMeta(m store.Meta) error {
	m.SchemaVersion = Schema
	return t.putJSON(t.s.k.meta(), m)
}

// fetchJob reads, in one request, what a job's transactions read: its
// record, queue index entry, event counter, accepted index, tombstone,
// attempts and their claims (and the seq mark, for submissions).
func (t *tx) fetchJob(id string, more ...string) error {
	k := t.s.k
	p, c := k.attempts(id), k.jobClaims(id)
	return t.fetchWith([]keyRange{{start: p, end: prefixEnd(p)}, {start: c, end: prefixEnd(c)}},
		append(more, k.job(id), k.queueIdx(id), k.evseq(id), k.accepted(id), k.tombstone(id), k.seq())...)
}

// fetchJobUnlessKnown fetches the job's keys unless key is known
// already (then the others are read one by one, if at all).
func (t *tx) fetchJobUnlessKnown(id, key string) error {
	if t.known(key) {
		return nil
	}
	return t.fetchJob(id)
}

func (t *tx) Job(id string) (*store.Job, error) {
	k := t.s.k.job(id)
	if err := t.fetchJobUnlessKnown(id, k); err != nil {
		return nil, err
	}
	raw, ok, mod, err := t.get(k)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("job %q: %w", id, store.ErrNotFound)
	}
	return t.decodeJob(k, raw, mod)
}

func (t *tx) decodeJob(k string, raw []byte, mod int64) (*store.Job, error) {
	j, err := t.s.jobs.get(k, mod, raw, (*store.Job).Clone)
	if err != nil {
		return nil, t.s.damaged(k, "the record does not decode: "+err.Error())
	}
	return j, nil
}

func (t *tx) CreateJob(j *store.Job, spec []byte) error {
	if err := store.CheckNewJob(j, spec); err != nil {
		return err
	}
	k := t.s.k
	t.assumeCreatedWithJob(j, k.submittedSeq(j.Seq), k.spec(j.ID))
	if err := t.fetchJob(j.ID, k.submittedSeq(j.Seq), k.spec(j.ID)); err != nil {
		return err
	}
	if _, ok, _, err := t.get(k.job(j.ID)); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("create job %q: %w: the job exists", j.ID, store.ErrConflict)
	}
	if _, ok, _, err := t.get(k.tombstone(j.ID)); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("create job %q: %w: %w", j.ID, store.ErrConflict, store.ErrRemoved)
	}
	if _, ok, _, err := t.get(k.submittedSeq(j.Seq)); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("create job %q: %w: seq %d is taken", j.ID, store.ErrInvariant, j.Seq)
	}
	// The spec is write-once: found absent, it is compared as absent
	// (CreateRevision 0) at commit.
	if old, ok, _, err := t.get(k.spec(j.ID)); err != nil {
		return err
	} else if ok && !bytes.Equal(old, spec) {
		return fmt.Errorf("create job %q: %w: the frozen spec is write-once", j.ID, store.ErrConflict)
	}
	if err := t.checkAccepted(j); err != nil {
		return err
	}
	t.put(k.spec(j.ID), spec) // the spec is the store's (store.Tx.CreateJob)
	t.put(k.submittedSeq(j.Seq), []byte(j.ID))
	if !j.State.Terminal() {
		t.put(k.liveJob(j.ID), nil)
	}
	return t.putJSON(k.job(j.ID), j)
}

// assumeCreatedWithJob takes keys that exist only once their job has
// been created (its frozen spec, its seq's submission entry; a spec
// outlives its job only beside a tombstone) for absent without reading
// them, where the job and its tombstone were read absent.
func (t *tx) assumeCreatedWithJob(j *store.Job, keys ...string) {
	for _, k := range []string{t.s.k.job(j.ID), t.s.k.tombstone(j.ID)} {
		if e, ok := t.cache[k]; !ok || e.present {
			return
		}
	}
	t.assumeAbsent(keys...)
}

// assumeAbsent takes write-once keys that what the transaction read says
// do not exist yet for absent, without reading them. Each is compared as
// absent at commit like a key read so: one that exists after all (a
// damaged store, two submissions with one seq, an attempt accepted
// meanwhile) is a conflict, and the run after a conflict reads
// everything. A first run only, like the reads answered from recent
// commits (a refusal is answered on what etcd says).
func (t *tx) assumeAbsent(keys ...string) {
	if !t.recent {
		return
	}
	for _, k := range keys {
		if _, ok := t.cache[k]; !ok {
			t.cache[k] = entry{}
			t.usedRecent = true
		}
	}
}

func (t *tx) PutJob(j *store.Job) error {
	if err := store.CheckJobRecord(j); err != nil {
		return err
	}
	old, err := t.Job(j.ID)
	if err != nil {
		return fmt.Errorf("put job: %w", err)
	}
	if err := store.CheckJobUpdate(old, j); err != nil {
		return err
	}
	if err := t.checkAccepted(j); err != nil {
		return err
	}
	switch {
	case j.State.Terminal() && !old.State.Terminal():
		t.del(t.s.k.liveJob(j.ID))
	case !j.State.Terminal() && old.State.Terminal():
		// An unknown job resolved with a retry (store.CheckJobUpdate).
		t.put(t.s.k.liveJob(j.ID), nil)
	}
	return t.putJSON(t.s.k.job(j.ID), j)
}

// ForEachLive visits the jobs that have not ended (the live index).
func (t *tx) ForEachLive(fn func(*store.Job) bool) error {
	p := t.s.k.live()
	var ids []string
	if err := t.scan(p, prefixEnd(p), false, true, true, func(e kv) (bool, error) {
		ids = append(ids, strings.TrimPrefix(e.key, p))
		return true, nil
	}); err != nil {
		return err
	}
	for len(ids) > 0 {
		batch := ids[:min(len(ids), submittedBatch)]
		ids = ids[len(batch):]
		keys := make([]string, len(batch))
		for i, id := range batch {
			keys[i] = t.s.k.job(id)
		}
		if err := t.fetch(keys...); err != nil {
			return err
		}
		for _, id := range batch {
			j, err := t.Job(id)
			if err != nil {
				return fmt.Errorf("live index: %w", err)
			}
			if j.State.Terminal() {
				return t.s.damaged(t.s.k.liveJob(id), "names a job that has ended "+string(j.State))
			}
			if !fn(j) {
				return nil
			}
		}
	}
	return nil
}

func (t *tx) checkAccepted(j *store.Job) error {
	var (
		n   uint32
		ok  bool
		err error
	)
	if j.Accepted != 0 {
		if n, ok, err = t.accepted(j.ID); err != nil {
			return err
		}
	}
	return store.CheckJobAccepted(j, n, ok)
}

func (t *tx) accepted(job string) (uint32, bool, error) {
	k := t.s.k.accepted(job)
	v, ok, _, err := t.get(k)
	switch {
	case err != nil || !ok:
		return 0, false, err
	case len(v) != 4:
		return 0, false, t.s.damaged(k, fmt.Sprintf("an accepted attempt of %d bytes", len(v)))
	}
	return binary.BigEndian.Uint32(v), true, nil
}

func (t *tx) Spec(id string) ([]byte, error) {
	v, ok, _, err := t.get(t.s.k.spec(id))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("spec of job %q: %w", id, store.ErrNotFound)
	}
	return bytes.Clone(v), nil
}

func (t *tx) ForEachJob(fn func(*store.Job) bool) error {
	return t.ForEachJobFrom("", fn)
}

func (t *tx) ForEachJobFrom(from string, fn func(*store.Job) bool) error {
	p := t.s.k.jobs()
	return t.scan(p+from, prefixEnd(p), false, false, true, func(e kv) (bool, error) {
		j, err := t.decodeJob(e.key, e.val, e.mod)
		if err != nil {
			return false, err
		}
		return fn(j), nil
	})
}

// submittedBatch is how many jobs ForEachSubmitted reads per request.
const submittedBatch = 64

func (t *tx) ForEachSubmitted(newestFirst bool, fn func(*store.Job) bool) error {
	from := uint64(0)
	if newestFirst {
		from = store.SeqNewest
	}
	return t.ForEachSubmittedFrom(from, newestFirst, fn)
}

func (t *tx) ForEachSubmittedFrom(from uint64, newestFirst bool, fn func(*store.Job) bool) error {
	return t.walkSubmitted(from, newestFirst, func(k string, raw []byte, mod int64) (bool, error) {
		j, err := t.decodeJob(k, raw, mod)
		if err != nil {
			return false, err
		}
		return fn(j), nil
	})
}

func (t *tx) ForEachSubmittedSummary(from uint64, newestFirst bool, fn func(*store.JobSummary) bool) error {
	return t.walkSubmitted(from, newestFirst, func(k string, raw []byte, _ int64) (bool, error) {
		j, err := store.DecodeJobSummary(raw)
		if err != nil {
			return false, t.s.damaged(k, "the record does not decode: "+err.Error())
		}
		return fn(j), nil
	})
}

// walkSubmitted visits the submitted index from seq from (see
// ForEachSubmittedFrom) with each job's key, record and revision, read a
// batch at a time.
func (t *tx) walkSubmitted(from uint64, newestFirst bool, visit func(k string, raw []byte, mod int64) (bool, error)) error {
	p := t.s.k.submitted()
	lo, hi := t.s.k.submittedSeq(from), prefixEnd(p)
	if newestFirst {
		// The end is exclusive: the key just past from's.
		lo, hi = p, t.s.k.submittedSeq(from)+"\x00"
	}
	for {
		var batch []kv
		err := t.scan(lo, hi, newestFirst, false, true, func(e kv) (bool, error) {
			batch = append(batch, e)
			return len(batch) < submittedBatch, nil
		})
		if err != nil {
			return err
		}
		ids := make([]string, len(batch))
		for i, e := range batch {
			ids[i] = t.s.k.job(string(e.val))
		}
		if err := t.fetch(ids...); err != nil {
			return err
		}
		for i, e := range batch {
			raw, ok, mod, err := t.get(ids[i])
			if err != nil {
				return err
			}
			if !ok {
				return t.s.damaged(e.key, fmt.Sprintf("names job %q, which has no record", e.val))
			}
			if more, err := visit(ids[i], raw, mod); err != nil || !more {
				return err
			}
		}
		if len(batch) < submittedBatch {
			return nil
		}
		last := batch[len(batch)-1].key
		if newestFirst {
			hi = last
		} else {
			lo = last + "\x00"
		}
	}
}
