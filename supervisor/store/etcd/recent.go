package etcd

import (
	"strings"
	"sync"
)

// recentKeys are keys as this handle's own commits left them. After a
// commit at revision rev, every key it compared was unchanged at rev (it
// holds what was read) and every key it wrote has rev as its mod
// revision: the handle knows them as of rev without asking. A running
// attempt's transactions touch the same few keys one after the other, so
// they need no read at all; another host's write in between makes the
// commit's compare fail, and the run after the conflict reads etcd.
type recentKeys struct {
	mu sync.Mutex
	m  map[string]recentEntry
}

// recentEntry is a key's value as of a revision.
type recentEntry struct {
	entry
	asOf int64
}

const maxRecent = 8192

func (r *recentKeys) get(k string) (entry, int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.m[k]
	return e.entry, e.asOf, ok
}

func (r *recentKeys) remember(t *tx, rev int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]recentEntry{}
	}
	set := func(k string, e entry) {
		if _, ok := r.m[k]; !ok && len(r.m) >= maxRecent {
			for old := range r.m {
				delete(r.m, old)
				break
			}
		}
		r.m[k] = recentEntry{entry: e, asOf: rev}
	}
	for k := range t.compared {
		if _, written := t.writes[k]; !written {
			set(k, t.cache[k])
		}
	}
	for _, d := range t.delRanges {
		for k := range r.m {
			if d.has(k) {
				delete(r.m, k)
			}
		}
	}
	for k, w := range t.writes {
		if w.del {
			set(k, entry{})
			continue
		}
		set(k, entry{val: w.val, mod: rev, present: true})
	}
}

// forget drops what the run read or wrote: it conflicted (something of it
// changed), or its outcome was unknown.
func (r *recentKeys) forget(t *tx) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range t.compared {
		delete(r.m, k)
	}
	for k := range t.writes {
		delete(r.m, k)
	}
	for _, d := range t.delRanges {
		for k := range r.m {
			if strings.HasPrefix(k, d.start) {
				delete(r.m, k)
			}
		}
	}
}
