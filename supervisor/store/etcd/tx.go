package etcd

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
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
	// member is the registration the commit compares, and markers its
	// boot's marker namespace: both pinned when the run began, so what
	// fn wrote in the boot's name (Registration) is what is compared.
	member  *member
	markers string
	rev     int64 // the snapshot; 0 until the first read

	cache map[string]entry
	// compared are the keys read one by one: each is compared at commit
	// by its mod revision (CreateRevision 0 when it was absent).
	compared map[string]bool
	ranges   []keyRange // scanned, compared by ModRevision < rev+1
	// complete are ranges read whole at the snapshot: a key in one that
	// the cache does not hold is absent, and a scan of one needs no
	// request.
	complete []keyRange

	writes    map[string]write
	order     []string
	delRanges []keyRange // deleted prefixes
	// failed is the first read that etcd did not answer: the run does
	// not count, whatever fn made of the error.
	failed error
	// seqMark is the highest job seq handed out (NextSeq), raised at
	// commit.
	seqMark uint64
	// recent: reads may be answered from what the handle's own commits
	// left known (Store.recent); every such read is compared at commit
	// like any other, so a stale one costs a conflict, not a wrong write.
	recent bool
	// usedRecent: a read was answered so.
	usedRecent bool
	// heard, in a View with a read patience (store.WithReadPatience),
	// is when etcd last answered it; nil otherwise.
	heard *hearing
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
	s.mu.Lock()
	m, ns := s.member, s.markers
	s.mu.Unlock()
	return &tx{s: s, ctx: ctx, readOnly: readOnly, member: m, markers: ns,
		cache: map[string]entry{}, compared: map[string]bool{}, writes: map[string]write{}}
}

// Registration is the host boot whose registration the commit compares
// (false before the handle joined).
func (t *tx) Registration() (store.HostBoot, bool) {
	if t.member == nil {
		return store.HostBoot{}, false
	}
	return t.member.hb, true
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
	if t.heard != nil {
		// A request waits no longer than the read's patience has left.
		return context.WithDeadline(t.ctx, t.heard.deadline(t.s.cfg.RequestTimeout))
	}
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

// known says whether k's value at the snapshot is in the cache (a key
// of a range read whole is: absent if not cached).
func (t *tx) known(k string) bool {
	if _, ok := t.cache[k]; ok {
		return true
	}
	for _, r := range t.complete {
		if r.has(k) {
			t.cache[k] = entry{}
			return true
		}
	}
	if t.recent {
		// Only what was known at the transaction's own snapshot: reads
		// of two revisions could disagree about a key a scan saw and
		// a point read did not (a deletion no range compare catches).
		if e, asOf, ok := t.s.recent.get(k); ok && (t.rev == 0 || asOf == t.rev) {
			t.rev = asOf
			t.cache[k] = e
			t.usedRecent = true
			return true
		}
	}
	return false
}

func (t *tx) isComplete(start, end string) bool {
	for _, r := range t.complete {
		if r.start <= start && (r.end == "" || end <= r.end) {
			return true
		}
	}
	return false
}

// wholeRange is the most keys a range fetched beside point keys may hold
// to be read whole (a job's attempts).
const wholeRange = 64

// fetch reads every key of ks not read yet, in one request.
func (t *tx) fetch(ks ...string) error { return t.fetchWith(nil, ks...) }

// fetchWith reads the keys of ks not read yet and the ranges rs not read
// whole yet, in one request.
func (t *tx) fetchWith(rs []keyRange, ks ...string) error {
	var missing []string
	for _, k := range ks {
		if !t.known(k) && !slices.Contains(missing, k) {
			missing = append(missing, k)
		}
	}
	var ranges []keyRange
	for _, r := range rs {
		if !t.isComplete(r.start, r.end) {
			ranges = append(ranges, r)
		}
	}
	if len(missing) == 0 && len(ranges) == 0 {
		return nil
	}
	if t.failed != nil {
		return fmt.Errorf("etcd read: %w", t.failed)
	}
	t.s.stats.reads.Add(1)
	if len(missing) == 1 && len(ranges) == 0 {
		ctx, cancel := t.readCtx()
		defer cancel()
		resp, err := t.s.cli.Get(ctx, missing[0], t.snapshot()...)
		if err != nil {
			return t.fail(err)
		}
		t.pin(resp.Header.Revision)
		t.remember(missing[0], resp.Kvs)
		return nil
	}
	return t.fetchTxn(missing, ranges)
}

// fetchTxn reads keys and ranges in one read-only transaction.
func (t *tx) fetchTxn(keys []string, ranges []keyRange) error {
	ctx, cancel := t.readCtx()
	defer cancel()
	ops := make([]clientv3.Op, 0, len(keys)+len(ranges))
	for _, k := range keys {
		ops = append(ops, clientv3.OpGet(k, t.snapshot()...))
	}
	for _, r := range ranges {
		ops = append(ops, clientv3.OpGet(r.start, append(t.snapshot(), clientv3.WithRange(r.end), clientv3.WithLimit(wholeRange))...))
	}
	resp, err := t.s.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return t.fail(err)
	}
	t.pin(resp.Header.Revision)
	for i, k := range keys {
		t.remember(k, resp.Responses[i].GetResponseRange().GetKvs())
	}
	for i, r := range ranges {
		rr := resp.Responses[len(keys)+i].GetResponseRange()
		for _, e := range rr.GetKvs() {
			if _, ok := t.cache[string(e.Key)]; !ok {
				t.cache[string(e.Key)] = entry{val: e.Value, mod: e.ModRevision, present: true}
			}
		}
		if !rr.GetMore() {
			t.complete = append(t.complete, r)
		}
	}
	return nil
}

// cachedRange is the cached keys of a range read whole, in key order
// (reverse: descending), as etcd would have answered.
func (t *tx) cachedRange(start, end string, reverse bool) []*mvccKV {
	var out []*mvccKV
	for k, e := range t.cache {
		if e.present && k >= start && k < end {
			out = append(out, &mvccKV{Key: []byte(k), Value: e.val, ModRevision: e.mod})
		}
	}
	sort.Slice(out, func(i, j int) bool { return before(string(out[i].Key), string(out[j].Key), reverse) })
	return out
}

func (t *tx) pin(rev int64) {
	if t.rev == 0 {
		t.rev = rev
	}
	if t.heard != nil {
		t.heard.answered()
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
		var (
			kvs  []*mvccKV
			more bool
		)
		if t.isComplete(lo, hi) {
			kvs = t.cachedRange(lo, hi, reverse)
		} else {
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
			kvs, more = resp.Kvs, resp.More
		}
		last := len(kvs) == 0 || !more
		for _, e := range kvs {
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
		lastKey := string(kvs[len(kvs)-1].Key)
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
	if t.seqMark != 0 {
		k, v := t.s.k.seq(), string(binary.BigEndian.AppendUint64(nil, t.seqMark))
		out = append(out, clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.Value(k), "<", v)}, []clientv3.Op{clientv3.OpPut(k, v)}, nil))
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
