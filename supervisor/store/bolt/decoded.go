package bolt

import (
	"bytes"
	"encoding/json"
	"sync"
)

// decoded remembers records by key together with the exact bytes they were
// decoded from. A record's decoded value is a function of its bytes alone,
// so a hit (same key, equal bytes) returns what decoding would return,
// whichever transaction reads it and whether or not the write that stored
// those bytes committed: only the cost differs. The supervisor reads a
// job's record several times per state change (its own read, then the
// invariant checks of PutAttempt and PutJob) and status queries read it
// again; JSON-decoding it each time was the largest part of a trivial
// job's store CPU.
type decoded[T any] struct {
	mu    sync.Mutex
	max   int
	clone func(*T) *T
	m     map[string]*decodedRecord[T]
}

type decodedRecord[T any] struct {
	raw []byte
	v   *T
}

// maxDecoded bounds each cache; beyond it an arbitrary entry is dropped.
// It covers a full queue (1024 by default) and the running attempts.
const maxDecoded = 4096

func newDecoded[T any](clone func(*T) *T) *decoded[T] {
	return &decoded[T]{max: maxDecoded, clone: clone, m: map[string]*decodedRecord[T]{}}
}

// get returns a copy of the record stored as raw under key: from the cache
// when raw is what it was decoded from, else decoded (and remembered when
// keep is set).
func (c *decoded[T]) get(key string, raw []byte, keep bool) (*T, error) {
	c.mu.Lock()
	e := c.m[key]
	c.mu.Unlock()
	if e != nil && bytes.Equal(e.raw, raw) {
		return c.clone(e.v), nil
	}
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, err
	}
	if keep {
		c.add(key, &decodedRecord[T]{raw: bytes.Clone(raw), v: c.clone(v)})
	}
	return v, nil
}

func (c *decoded[T]) add(key string, e *decodedRecord[T]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok && len(c.m) >= c.max {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[key] = e
}

// lookup returns a copy of the record remembered for key, if raw is what
// it was decoded from.
func (c *decoded[T]) lookup(key string, raw []byte) (*T, bool) {
	c.mu.Lock()
	e := c.m[key]
	c.mu.Unlock()
	if e != nil && bytes.Equal(e.raw, raw) {
		return c.clone(e.v), true
	}
	return nil, false
}

// shared is lookup without the copy: the remembered value itself, which
// nobody changes (the cache keeps its own copies and hands out copies).
// For the store's own read-only checks inside a transaction.
func (c *decoded[T]) shared(key string, raw []byte) (*T, bool) {
	c.mu.Lock()
	e := c.m[key]
	c.mu.Unlock()
	if e != nil && bytes.Equal(e.raw, raw) {
		return e.v, true
	}
	return nil, false
}

// remember keeps (copies of) v as the decoding of raw under key.
func (c *decoded[T]) remember(key string, raw []byte, v *T) {
	c.add(key, &decodedRecord[T]{raw: bytes.Clone(raw), v: c.clone(v)})
}
