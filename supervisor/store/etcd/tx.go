package etcd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// tx is one run of an Update or View closure: reads at one snapshot
// revision (the first read's), a cache of what was read, the keys and
// ranges to compare at commit, and the buffered writes.
type tx struct {
	s        *Store
	ctx      context.Context
	readOnly bool
	rev      int64 // the snapshot; 0 until the first read

	cache map[string]entry
	// compared are the keys read one by one: each is compared at commit
	// by its mod revision (CreateRevision 0 when it was absent).
	compared map[string]bool
	ranges   []keyRange // scanned, compared by ModRevision < rev+1

	writes    map[string]write
	order     []string
	delRanges []keyRange // deleted prefixes
	// failed is the first read that etcd did not answer: the run does
	// not count, whatever fn made of the error.
	failed error
}

type entry struct {
	val     []byte
	mod     int64 // ModRevision; 0 when absent
	present bool
}

type write struct {
	val []byte
	del bool
}

type keyRange struct{ start, end string }

func (r keyRange) has(k string) bool { return k >= r.start && (r.end == "" || k < r.end) }

func (s *Store) newTx(ctx context.Context, readOnly bool) *tx {
	return &tx{s: s, ctx: ctx, readOnly: readOnly, cache: map[string]entry{}, compared: map[string]bool{}, writes: map[string]write{}}
}

// fail records a read etcd did not answer and returns it wrapped.
func (t *tx) fail(err error) error {
	if errors.Is(err, rpctypes.ErrCompacted) || errors.Is(err, rpctypes.ErrFutureRev) || !definite(err) {
		if t.failed == nil {
			t.failed = err
		}
	}
	return fmt.Errorf("etcd read: %w", err)
}

func (t *tx) readCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.ctx, t.s.cfg.RequestTimeout)
}

// snapshot is the option reading at the transaction's revision: the
// first read is linearizable and fixes it; later ones read that revision
// (serializable is enough: the revision is applied).
func (t *tx) snapshot() []clientv3.OpOption {
	if t.rev == 0 {
		return nil
	}
	return []clientv3.OpOption{clientv3.WithRev(t.rev), clientv3.WithSerializable()}
}

// buffered is what the transaction itself wrote under k, if anything.
func (t *tx) buffered(k string) (val []byte, present, ok bool) {
	if w, ok := t.writes[k]; ok {
		return w.val, !w.del, true
	}
	for _, r := range t.delRanges {
		if r.has(k) {
			return nil, false, true
		}
	}
	return nil, false, false
}

// get reads one key (and compares it at commit). mod is its mod
// revision, 0 for what the transaction wrote itself.
func (t *tx) get(k string) (val []byte, present bool, mod int64, err error) {
	if v, present, ok := t.buffered(k); ok {
		return v, present, 0, nil
	}
	if err := t.fetch(k); err != nil {
		return nil, false, 0, err
	}
	e := t.cache[k]
	t.compared[k] = true
	return e.val, e.present, e.mod, nil
}

// fetch reads every key of ks not read yet, in one request.
func (t *tx) fetch(ks ...string) error {
	var missing []string
	for _, k := range ks {
		if _, ok := t.cache[k]; !ok && !slices.Contains(missing, k) {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if t.failed != nil {
		return fmt.Errorf("etcd read: %w", t.failed)
	}
	ctx, cancel := t.readCtx()
	defer cancel()
	t.s.stats.reads.Add(1)
	if len(missing) == 1 {
		resp, err := t.s.cli.Get(ctx, missing[0], t.snapshot()...)
		if err != nil {
			return t.fail(err)
		}
		t.pin(resp.Header.Revision)
		t.remember(missing[0], resp.Kvs)
		return nil
	}
	ops := make([]clientv3.Op, len(missing))
	for i, k := range missing {
		ops[i] = clientv3.OpGet(k, t.snapshot()...)
	}
	resp, err := t.s.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return t.fail(err)
	}
	t.pin(resp.Header.Revision)
	for i, k := range missing {
		t.remember(k, resp.Responses[i].GetResponseRange().GetKvs())
	}
	return nil
}

func (t *tx) pin(rev int64) {
	if t.rev == 0 {
		t.rev = rev
	}
}

func (t *tx) remember(k string, kvs []*mvccKV) {
	if len(kvs) == 0 {
		t.cache[k] = entry{}
		return
	}
	t.cache[k] = entry{val: kvs[0].Value, mod: kvs[0].ModRevision, present: true}
}

func (t *tx) put(k string, v []byte) {
	if _, ok := t.writes[k]; !ok {
		t.order = append(t.order, k)
	}
	t.writes[k] = write{val: v}
}

func (t *tx) del(k string) {
	if _, ok := t.writes[k]; !ok {
		t.order = append(t.order, k)
	}
	t.writes[k] = write{del: true}
}

// delPrefix deletes every key under p: stored ones by one range delete,
// and what the transaction itself wrote there.
func (t *tx) delPrefix(p string) {
	r := keyRange{start: p, end: prefixEnd(p)}
	t.delRanges = append(t.delRanges, r)
	kept := t.order[:0]
	for _, k := range t.order {
		if r.has(k) {
			delete(t.writes, k)
			continue
		}
		kept = append(kept, k)
	}
	t.order = kept
}

// kv is one key and value of a scan; mod is 0 for the transaction's own
// writes.
type kv struct {
	key string
	val []byte
	mod int64
}

// scan visits the keys in [start, end) in order (reverse: descending),
// the transaction's own writes merged in, until visit returns false. In
// an Update, the part visited is compared at commit: a key created or
// changed in it since the snapshot is a conflict. protect false scans
// without that (QueueLen). keysOnly leaves values nil.
func (t *tx) scan(start, end string, reverse, keysOnly, protect bool, visit func(kv) (bool, error)) error {
	const page = 128
	// The transaction's own puts in the range, in scan order.
	var own []string
	for _, k := range t.order {
		if w := t.writes[k]; !w.del && k >= start && k < end {
			own = append(own, k)
		}
	}
	sort.Strings(own)
	if reverse {
		slices.Reverse(own)
	}
	lo, hi := start, end // what is left to read from etcd
	visited := ""        // the last key visited
	stopped := false
	emit := func(k string, v []byte, mod int64) (bool, error) {
		visited = k
		return visit(kv{key: k, val: v, mod: mod})
	}
	for !stopped {
		if t.failed != nil {
			return fmt.Errorf("etcd read: %w", t.failed)
		}
		opts := append(t.snapshot(), clientv3.WithRange(hi), clientv3.WithLimit(page))
		if reverse {
			opts = append(opts, clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
		}
		if keysOnly {
			opts = append(opts, clientv3.WithKeysOnly())
		}
		ctx, cancel := t.readCtx()
		t.s.stats.reads.Add(1)
		resp, err := t.s.cli.Get(ctx, lo, opts...)
		cancel()
		if err != nil {
			return t.fail(err)
		}
		t.pin(resp.Header.Revision)
		last := len(resp.Kvs) == 0 || !resp.More
		for _, e := range resp.Kvs {
			k := string(e.Key)
			// Own writes that sort before this key come first.
			for len(own) > 0 && before(own[0], k, reverse) {
				more, err := emit(own[0], t.writes[own[0]].val, 0)
				if err != nil {
					return err
				}
				if !more {
					stopped = true
					break
				}
				own = own[1:]
			}
			if stopped {
				break
			}
			if !keysOnly {
				t.cache[k] = entry{val: e.Value, mod: e.ModRevision, present: true}
			}
			val, mod := e.Value, e.ModRevision
			if v, present, ok := t.buffered(k); ok {
				if !present {
					continue
				}
				val, mod = v, 0
				own = slices.DeleteFunc(own, func(o string) bool { return o == k })
			}
			if more, err := emit(k, val, mod); err != nil || !more {
				if err != nil {
					return err
				}
				stopped = true
				break
			}
		}
		if stopped || last {
			break
		}
		lastKey := string(resp.Kvs[len(resp.Kvs)-1].Key)
		if reverse {
			hi = lastKey
		} else {
			lo = lastKey + "\x00"
		}
	}
	for !stopped && len(own) > 0 {
		more, err := emit(own[0], t.writes[own[0]].val, 0)
		if err != nil {
			return err
		}
		stopped = !more
		own = own[1:]
	}
	if protect && !t.readOnly {
		r := keyRange{start: start, end: end}
		if stopped && visited != "" {
			if reverse {
				r.start = visited
			} else {
				r.end = visited + "\x00"
			}
		}
		t.ranges = append(t.ranges, r)
	}
	return nil
}

func before(a, b string, reverse bool) bool {
	if reverse {
		return a > b
	}
	return a < b
}

// compares are the commit's conditions on what was read.
func (t *tx) compares() []clientv3.Cmp {
	var out []clientv3.Cmp
	keys := make([]string, 0, len(t.compared))
	for k := range t.compared {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		e := t.cache[k]
		if !e.present {
			out = append(out, clientv3.Compare(clientv3.CreateRevision(k), "=", 0))
			continue
		}
		out = append(out, clientv3.Compare(clientv3.ModRevision(k), "=", e.mod))
	}
	for _, r := range t.ranges {
		out = append(out, clientv3.Compare(clientv3.ModRevision(r.start), "<", t.rev+1).WithRange(r.end))
	}
	return out
}

type mvccKV = mvccpb.KeyValue

// ops are the buffered writes. etcd refuses a transaction that writes a
// key twice (a put inside a deleted range included); delPrefix already
// dropped the writes it covers, so only a put after it can.
func (t *tx) ops() ([]clientv3.Op, error) {
	out := make([]clientv3.Op, 0, len(t.order)+len(t.delRanges))
	for _, r := range t.delRanges {
		out = append(out, clientv3.OpDelete(r.start, clientv3.WithRange(r.end)))
	}
	for _, k := range t.order {
		w := t.writes[k]
		if t.coveredByDelete(k) {
			if w.del {
				continue
			}
			return nil, fmt.Errorf("etcd transaction: key %q is written after its prefix was deleted", k)
		}
		if w.del {
			out = append(out, clientv3.OpDelete(k))
		} else {
			out = append(out, clientv3.OpPut(k, string(w.val)))
		}
	}
	return out, nil
}

func (t *tx) coveredByDelete(k string) bool {
	for _, r := range t.delRanges {
		if r.has(k) {
			return true
		}
	}
	return false
}
