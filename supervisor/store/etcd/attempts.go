package etcd

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// A job's attempts and the index of the unfinished ones.

func (t *tx) Attempt(job string, n uint32) (*store.Attempt, error) {
	k := t.s.k.attempt(job, n)
	// An attempt's transaction reads its job next: one request for both.
	if err := t.fetchJobUnlessKnown(job, k); err != nil {
		return nil, err
	}
	raw, ok, mod, err := t.get(k)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("attempt %s/%d: %w", job, n, store.ErrNotFound)
	}
	return t.decodeAttempt(k, raw, mod)
}

func (t *tx) decodeAttempt(k string, raw []byte, mod int64) (*store.Attempt, error) {
	a, err := t.s.attempts.get(k, mod, raw, (*store.Attempt).Clone)
	if err != nil {
		return nil, t.s.damaged(k, "the record does not decode: "+err.Error())
	}
	return a, nil
}

// unfinishedEntry is the value of an unfinished/ key.
type unfinishedEntry struct {
	Job  string `json:"job"`
	N    uint32 `json:"n"`
	Host string `json:"host,omitempty"`
	Boot string `json:"boot"`
}

func (t *tx) PutAttempt(a *store.Attempt) error {
	if a.N == 0 || !a.State.Valid() {
		return store.CheckAttempt(nil, nil, a)
	}
	job, err := t.Job(a.Job)
	if err != nil {
		return err
	}
	old, err := t.Attempt(a.Job, a.N)
	switch {
	case errors.Is(err, store.ErrNotFound):
		old = nil
	case err != nil:
		return err
	}
	if err := store.CheckAttempt(job, old, a); err != nil {
		return err
	}
	if old == nil {
		// A joined host prepares attempts as itself only: its host, boot
		// and generation are what its registration compare vouches for.
		if m := t.member; m != nil && (a.Host != m.hb.Host || a.Boot != m.hb.Boot || a.Generation != m.hb.Generation) {
			return fmt.Errorf("attempt %s/%d: %w: prepared as host %q boot %q generation %d, this handle is host %q boot %q generation %d",
				a.Job, a.N, store.ErrInvariant, a.Host, a.Boot, a.Generation, m.hb.Host, m.hb.Boot, m.hb.Generation)
		}
	}
	if a.State == lifecycle.Accepted {
		if job.Accepted == 0 {
			// The accepted index is written with the job's Accepted.
			t.assumeAbsent(t.s.k.accepted(a.Job))
		}
		n, ok, err := t.accepted(a.Job)
		if err != nil {
			return err
		}
		if err := store.CheckAcceptance(a, n, ok); err != nil {
			return err
		}
		// Write-once: compared as absent at commit, never deleted.
		t.put(t.s.k.accepted(a.Job), binary.BigEndian.AppendUint32(nil, a.N))
	}
	uk := t.s.k.unfinishedAttempt(a.Job, a.N)
	switch {
	case old == nil:
		if err := t.putJSON(uk, unfinishedEntry{Job: a.Job, N: a.N, Host: a.Host, Boot: a.Boot}); err != nil {
			return err
		}
	case a.State.Terminal():
		t.del(uk)
	}
	return t.putJSON(t.s.k.attempt(a.Job, a.N), a)
}

func (t *tx) Attempts(job string) ([]*store.Attempt, error) {
	var out []*store.Attempt
	p := t.s.k.attempts(job)
	err := t.scan(p, prefixEnd(p), false, false, true, func(e kv) (bool, error) {
		a, err := t.decodeAttempt(e.key, e.val, e.mod)
		if err != nil {
			return false, err
		}
		out = append(out, a)
		return true, nil
	})
	return out, err
}

func (t *tx) ForEachUnfinished(fn func(*store.Attempt) bool) error {
	var entries []unfinishedEntry
	p := t.s.k.unfinished()
	err := t.scan(p, prefixEnd(p), false, false, true, func(e kv) (bool, error) {
		var u unfinishedEntry
		if err := t.decodeJSON(e.key, e.val, &u); err != nil {
			return false, err
		}
		entries = append(entries, u)
		return true, nil
	})
	if err != nil {
		return err
	}
	keys := make([]string, len(entries))
	for i, u := range entries {
		keys[i] = t.s.k.attempt(u.Job, u.N)
	}
	for len(keys) > 0 {
		n := min(len(keys), submittedBatch)
		if err := t.fetch(keys[:n]...); err != nil {
			return err
		}
		keys = keys[n:]
	}
	for _, u := range entries {
		a, err := t.Attempt(u.Job, u.N)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if a.State.Terminal() {
			continue
		}
		j, err := t.Job(u.Job)
		if err != nil {
			return err
		}
		if !j.State.Terminal() && !fn(a) {
			return nil
		}
	}
	return nil
}
