package etcd

import (
	"encoding/json"
	"sync"
)

// recordCache remembers decoded records by key and mod revision: a key's
// value at one mod revision never changes, so a hit returns what decoding
// would. The supervisor reads a job's record several times per state
// change (as the local store's decoded cache explains).
type recordCache[T any] struct {
	mu sync.Mutex
	m  map[string]cached[T]
}

type cached[T any] struct {
	mod int64
	v   *T
}

const maxCached = 4096

func newRecordCache[T any]() recordCache[T] { return recordCache[T]{m: map[string]cached[T]{}} }

// get decodes raw (the value of key at mod) or returns the remembered
// copy; clone copies what is handed out, which the caller may change.
func (c *recordCache[T]) get(key string, mod int64, raw []byte, clone func(*T) *T) (*T, error) {
	if mod != 0 {
		c.mu.Lock()
		e, ok := c.m[key]
		c.mu.Unlock()
		if ok && e.mod == mod {
			return clone(e.v), nil
		}
	}
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, err
	}
	if mod != 0 {
		c.mu.Lock()
		if _, ok := c.m[key]; !ok && len(c.m) >= maxCached {
			for k := range c.m {
				delete(c.m, k)
				break
			}
		}
		c.m[key] = cached[T]{mod: mod, v: clone(v)}
		c.mu.Unlock()
	}
	return v, nil
}
