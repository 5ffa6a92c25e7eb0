package etcd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// Schema is the layout version written in the meta key (keys.go). Any
// other version is refused rather than misread.
const Schema = 1

// Store is the job store on etcd.
type Store struct {
	cli    *clientv3.Client
	cfg    Config
	k      keys
	log    *slog.Logger
	closed chan struct{}
	once   sync.Once

	mu     sync.Mutex
	member *member // the joined boot, nil before Join
	// markers is the namespace of this handle's outcome markers: its
	// boot once joined.
	markers   string
	markerSeq atomic.Uint64
	// done are markers of committed writes, deleted by later writes.
	done []string
	// lastSeq is the highest job seq this handle handed out.
	lastSeq atomic.Uint64
	// fault is a test's injected commit fault (send); lostReply, if set,
	// runs once a reply the fault loses has been applied (a test's other
	// hosts act before the writer finds out).
	fault     atomic.Int32
	lostReply func()
	trust     *store.Trust
	// recent are keys as the handle's own last commits left them (what
	// they read and compared, what they wrote), with their revisions:
	// the next transaction on the same job starts from them instead of
	// asking etcd (tx.recent).
	recent recentKeys

	jobs     recordCache[store.Job]
	attempts recordCache[store.Attempt]
	stats    counters
	// own are the revisions of this handle's recent commits: the watch
	// leaves them out (the supervisor already knows its own changes).
	own revisions
}

// revisions is a bounded set of recent revisions.
type revisions struct {
	mu   sync.Mutex
	set  map[int64]struct{}
	ring []int64
	next int
}

const ownRevisions = 4096

func (r *revisions) add(rev int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.set == nil {
		r.set, r.ring = map[int64]struct{}{}, make([]int64, ownRevisions)
	}
	delete(r.set, r.ring[r.next])
	r.ring[r.next] = rev
	r.set[rev] = struct{}{}
	r.next = (r.next + 1) % ownRevisions
}

func (r *revisions) has(rev int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.set[rev]
	return ok
}

// Open connects to etcd and checks (or writes, on an empty prefix) the
// store's meta record. An etcd that does not answer within the dial
// timeout is ErrUnavailable.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: cfg.Endpoints, TLS: cfg.TLS, DialTimeout: cfg.DialTimeout,
		Logger: zap.NewNop(), Context: context.WithoutCancel(ctx),
		// A request that cannot be sent fails instead of waiting for the
		// connection: the store's own loop decides about retrying.
		RejectOldCluster: false,
	})
	if err != nil {
		return nil, fmt.Errorf("connect to etcd %v: %w: %w", cfg.Endpoints, store.ErrUnavailable, err)
	}
	s := &Store{cli: cli, cfg: cfg, k: newKeys(cfg.Prefix), log: cfg.Logger, closed: make(chan struct{}), trust: cfg.Trust,
		markers: randomID(), jobs: newRecordCache[store.Job](), attempts: newRecordCache[store.Attempt]()}
	if s.trust == nil {
		s.trust = store.NewTrust()
	}
	if err := s.init(ctx); err != nil {
		cli.Close()
		return nil, err
	}
	return s, nil
}

func randomID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // the platform is broken
	}
	return hex.EncodeToString(b[:])
}

// init creates the meta record if the prefix is empty and checks its
// schema otherwise.
func (s *Store) init(ctx context.Context) error {
	m := store.Meta{SchemaVersion: Schema, Created: time.Now().UTC()}
	raw, _ := json.Marshal(m)
	c, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	defer cancel()
	key := s.k.meta()
	// The seq mark starts at zero: its value is compared as bytes, and a
	// missing key compares as nothing.
	zero := string(make([]byte, 8))
	resp, err := s.cli.Txn(c).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(raw)), clientv3.OpPut(s.k.seq(), zero)).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return fmt.Errorf("open etcd store %v%s: %w: %w", s.cfg.Endpoints, s.k.prefix, store.ErrUnavailable, err)
	}
	if resp.Succeeded {
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return fmt.Errorf("open etcd store: meta record vanished")
	}
	if err := json.Unmarshal(kvs[0].Value, &m); err != nil {
		return s.damaged(key, "the record does not decode: "+err.Error())
	}
	if m.SchemaVersion != Schema {
		return fmt.Errorf("%w: etcd store %s has version %d, this build reads %d", store.ErrSchema, s.k.prefix, m.SchemaVersion, Schema)
	}
	return nil
}

func (s *Store) damaged(key, reason string) error {
	return &store.CorruptError{File: "etcd " + s.k.prefix, Bucket: "key", Key: []byte(key), Reason: reason}
}

// Close stops the handle: a registration it holds is left to expire
// (Membership.Leave deletes it).
func (s *Store) Close() error {
	s.once.Do(func() { close(s.closed) })
	s.mu.Lock()
	m := s.member
	s.mu.Unlock()
	if m != nil {
		m.stopKeepalive()
	}
	return s.cli.Close()
}

func (s *Store) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// Update runs fn in an optimistic transaction: fn reads at one snapshot
// revision, its writes are buffered, and the commit compares every key
// fn read (and the ranges it scanned, and the registration the handle
// held when the run began: the tx's Registration). On a conflict fn runs
// again on a fresh snapshot: fn must act only through tx. A commit whose
// outcome is unknown (a timeout, a lost connection) is resolved through
// its marker before fn may run again. etcd being unreachable is waited
// out until ctx ends, the store closes, or the registration is lost
// (ErrFenced).
func (s *Store) Update(ctx context.Context, fn func(store.Tx) error) error {
	return s.run(ctx, false, fn)
}

// View runs fn on one snapshot revision; nothing is compared or written.
func (s *Store) View(ctx context.Context, fn func(store.Tx) error) error {
	return s.run(ctx, true, fn)
}

func (s *Store) run(ctx context.Context, readOnly bool, fn func(store.Tx) error) error {
	var wait backoff
	fresh := false
	var heard *hearing
	if p := store.ReadPatience(ctx); readOnly && p > 0 {
		heard = &hearing{patience: p, last: time.Now()}
	}
	for {
		t := s.newTx(ctx, readOnly)
		t.heard = heard
		if err := s.usable(ctx, readOnly, t.member); err != nil {
			return err
		}
		// After a conflict, the run reads everything from etcd.
		t.recent = !readOnly && wait.conflicts == 0 && !fresh
		err := fn(t)
		if err != nil && t.usedRecent && t.failed == nil {
			// fn refused on what the handle knew; a refusal is answered
			// only on what etcd says (nothing of it was compared).
			fresh = true
			continue
		}
		if t.failed != nil {
			// A read failed on etcd (fn may have swallowed the error):
			// nothing fn decided on that snapshot counts. (A snapshot
			// that recent keys dated may have been compacted: the next
			// run reads etcd's current one.)
			fresh = true
			if heard != nil && heard.exhausted() {
				return fmt.Errorf("etcd %s%s did not answer for %s: %w (last: %w)", strings.Join(s.cfg.Endpoints, ","), s.k.prefix,
					heard.patience, store.ErrUnavailable, t.failed)
			}
			if err := wait.sleep(ctx, s.closed, t.failed); err != nil {
				return err
			}
			continue
		}
		if err != nil || readOnly {
			return err
		}
		if t.usedRecent && len(t.order) == 0 && len(t.delRanges) == 0 {
			// Nothing to write, so no commit compares what fn read: an
			// answer from the recent keys could be of a job another
			// host removed since (a resubmission would find it there).
			// fn runs again on what etcd says.
			fresh = true
			continue
		}
		switch err := s.commit(ctx, t); {
		case err == nil:
			return nil
		case errors.Is(err, errConflict):
			s.stats.conflicts.Add(1)
			s.recent.forget(t)
			wait.conflict()
		case errors.Is(err, errRetry):
			if err := wait.sleep(ctx, s.closed, err); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

var (
	errConflict = errors.New("a key read changed before the commit")
	errRetry    = errors.New("etcd did not answer; nothing was committed")
)

// usable refuses work on a closed handle, an ended ctx, and (for writes)
// a lost registration m.
func (s *Store) usable(ctx context.Context, readOnly bool, m *member) error {
	if s.isClosed() {
		return fmt.Errorf("etcd store: %w", errClosed)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if readOnly {
		return nil
	}
	if m != nil && m.isLost() {
		return fmt.Errorf("host %s boot %s: %w", m.hb.Host, m.hb.Boot, store.ErrFenced)
	}
	return nil
}

var errClosed = errors.New("closed")

// backoff spaces out retries: conflicts get a short random pause once
// they repeat, an unreachable etcd 50 ms doubling to 1 s.
type backoff struct {
	conflicts int
	wait      time.Duration
}

func (b *backoff) conflict() {
	b.conflicts++
	if b.conflicts > 2 {
		d := time.Duration(min(b.conflicts, 20)) * time.Millisecond
		time.Sleep(d/2 + jitter(d/2))
	}
}

func (b *backoff) sleep(ctx context.Context, closed <-chan struct{}, cause error) error {
	b.wait = min(max(2*b.wait, 50*time.Millisecond), time.Second)
	t := time.NewTimer(b.wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-closed:
		return fmt.Errorf("etcd store: %w: %w (last: %v)", errClosed, store.ErrUnavailable, cause)
	case <-ctx.Done():
		return fmt.Errorf("%w: %w (last: %v)", ctx.Err(), store.ErrUnavailable, cause)
	}
}

func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	var b [8]byte
	rand.Read(b[:])
	return time.Duration(uint64(b[0])|uint64(b[1])<<8|uint64(b[2])<<16) % d
}

// definite says whether etcd refused a request for sure (it was not
// applied), as opposed to an error after which it may have been.
func definite(err error) bool {
	if errors.Is(err, rpctypes.ErrTooManyOps) || errors.Is(err, rpctypes.ErrDuplicateKey) || errors.Is(err, rpctypes.ErrRequestTooLarge) {
		return true
	}
	var code codes.Code
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		code = ee.Code()
	} else if st, ok := status.FromError(err); ok {
		code = st.Code()
	} else {
		return false
	}
	switch code {
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange, codes.PermissionDenied,
		codes.Unauthenticated, codes.ResourceExhausted, codes.Unimplemented, codes.AlreadyExists, codes.NotFound:
		return true
	}
	return false
}

// commit sends t's writes as one transaction: If every key read is as it
// was (by its mod revision; CreateRevision 0 for one found absent), every
// scanned range holds nothing newer than the snapshot, this boot is still
// registered, and the write's marker does not exist yet; Then the writes
// and the marker. The marker (txn/<boot>/<n>, value "c") is what an
// unknown outcome is resolved by: resolve races it with a write of "a".
func (s *Store) commit(ctx context.Context, t *tx) error {
	if len(t.order) == 0 && len(t.delRanges) == 0 {
		return nil // nothing to write: fn's reads were one snapshot
	}
	m, ns := t.member, t.markers
	s.mu.Lock()
	// The markers this commit deletes are copied out: s.done keeps its
	// array, which the next committed or returnMarkers appends into while
	// this commit still reads them.
	keep := max(len(s.done)-maxMarkerDeletes, 0)
	done := slices.Clone(s.done[keep:])
	s.done = s.done[:keep]
	s.mu.Unlock()
	marker := s.k.markers(ns) + strconv.FormatUint(s.markerSeq.Add(1), 10)
	cmps := t.compares()
	var regKey string
	if m != nil {
		regKey = m.key
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(regKey), "=", int64(m.hb.Generation)))
	}
	cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(marker), "=", 0))
	ops, err := t.ops()
	if err != nil {
		s.returnMarkers(done)
		return fmt.Errorf("%w: %w", store.ErrInvariant, err)
	}
	ops = append(ops, clientv3.OpPut(marker, markerCommitted))
	for _, d := range done {
		ops = append(ops, clientv3.OpDelete(d))
	}
	if len(cmps) > maxTxnOps || len(ops) > maxTxnOps {
		s.returnMarkers(done)
		return fmt.Errorf("%w: the transaction compares %d keys and writes %d, etcd takes at most %d of each", store.ErrInvariant, len(cmps), len(ops), maxTxnOps)
	}
	var elses []clientv3.Op
	if regKey != "" {
		elses = append(elses, clientv3.OpGet(regKey))
	}
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.RequestTimeout)
	resp, err := s.send(c, cmps, ops, elses)
	cancel()
	s.stats.commits.Add(1)
	switch {
	case err == nil && resp.Succeeded:
		s.own.add(resp.Header.Revision)
		s.recent.remember(t, resp.Header.Revision)
		s.committed(marker)
		return nil
	case err == nil:
		s.returnMarkers(done)
		if m != nil && registrationGone(resp, m) {
			m.lose("a write found the registration gone")
			return fmt.Errorf("host %s boot %s: %w", m.hb.Host, m.hb.Boot, store.ErrFenced)
		}
		return errConflict
	case definite(err):
		s.returnMarkers(done)
		return fmt.Errorf("etcd refused the transaction: %w", err)
	}
	// The outcome is unknown: find out before anything runs again.
	s.stats.unknown.Add(1)
	committed, rerr := s.resolve(ctx, marker, m)
	if rerr != nil {
		return rerr
	}
	s.recent.forget(t)
	if committed {
		s.committed(marker)
		return nil
	}
	s.returnMarkers(done)
	return fmt.Errorf("%w: %w", errRetry, err)
}

// A commit's lost request or lost reply, injected by tests (the next
// commit only): either leaves the outcome unknown to the writer.
const (
	loseRequest int32 = 1 + iota
	loseReply
)

func (s *Store) send(c context.Context, cmps []clientv3.Cmp, ops, elses []clientv3.Op) (*clientv3.TxnResponse, error) {
	fault := s.fault.Swap(0)
	if fault == loseRequest {
		return nil, context.DeadlineExceeded
	}
	resp, err := s.cli.Txn(c).If(cmps...).Then(ops...).Else(elses...).Commit()
	if fault == loseReply && err == nil {
		if s.lostReply != nil {
			s.lostReply()
		}
		return nil, context.DeadlineExceeded
	}
	return resp, err
}

const (
	markerCommitted = "c"
	markerAborted   = "a"
	// maxTxnOps is etcd's default --max-txn-ops.
	maxTxnOps        = 128
	maxMarkerDeletes = 8
)

func registrationGone(resp *clientv3.TxnResponse, m *member) bool {
	if len(resp.Responses) == 0 {
		return false
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	return len(kvs) == 0 || kvs[0].ModRevision != int64(m.hb.Generation)
}

func (s *Store) committed(marker string) {
	s.mu.Lock()
	s.done = append(s.done, marker)
	s.mu.Unlock()
}

func (s *Store) returnMarkers(done []string) {
	if len(done) == 0 {
		return
	}
	s.mu.Lock()
	s.done = append(s.done, done...)
	s.mu.Unlock()
}

// resolve finds out whether the write with marker committed: it writes
// the marker itself, as aborted, if it does not exist. Exactly one of the
// two writes can create it, so once resolve's write is in, the original
// can never apply; if the marker exists, its value says who wrote it.
// It asks until etcd answers or the store closes: a write that may have
// accepted a job must not be taken for one that did not.
//
// The marker of a joined boot is taken for absent only while the boot's
// registration stands (m, compared in the same transaction): once it is
// gone, a host that recovers the boot deletes its markers (ForgetBoot),
// so a missing one may be of a write that committed before the lease
// expired. The write can no longer commit then (it compares the
// registration too), but whether it did is not known: ErrOutcomeUnknown,
// and ErrFenced.
func (s *Store) resolve(ctx context.Context, marker string, m *member) (bool, error) {
	var wait backoff
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(marker), "=", 0)}
	if m != nil {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(m.key), "=", int64(m.hb.Generation)))
	}
	for {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.RequestTimeout)
		resp, err := s.cli.Txn(c).If(cmps...).Then(clientv3.OpPut(marker, markerAborted)).Else(clientv3.OpGet(marker)).Commit()
		cancel()
		s.stats.commits.Add(1)
		if err == nil {
			if resp.Succeeded {
				s.log.Warn("etcd write of unknown outcome: it did not commit", "marker", marker)
				return false, nil
			}
			kvs := resp.Responses[0].GetResponseRange().GetKvs()
			if len(kvs) == 0 && m == nil {
				// Not possible in one transaction (the marker existed, so
				// the get has it), but a marker read as gone must not be
				// taken for "did not commit".
				return false, fmt.Errorf("%w: marker %s read as both present and absent", store.ErrOutcomeUnknown, marker)
			}
			if len(kvs) == 0 {
				s.log.Error("etcd write of unknown outcome: the registration is gone, and with it the write's marker; whether it committed is not known",
					"marker", marker, "host", m.hb.Host, "boot", m.hb.Boot)
				m.lose("a write of unknown outcome found the registration gone")
				return false, fmt.Errorf("%w: host %s boot %s: %w", store.ErrOutcomeUnknown, m.hb.Host, m.hb.Boot, store.ErrFenced)
			}
			committed := string(kvs[0].Value) == markerCommitted
			s.log.Warn("etcd write of unknown outcome resolved", "marker", marker, "committed", committed)
			return committed, nil
		}
		if err := wait.sleep(context.Background(), s.closed, err); err != nil {
			return false, fmt.Errorf("%w: %w", store.ErrOutcomeUnknown, err)
		}
		if m != nil && m.isLost() {
			// The boot is fenced (its lease may be gone): whatever the
			// write did is the others' to find, and waiting on would
			// hold up the stop, which closes the store only after
			// this boot's attempts have returned.
			return false, fmt.Errorf("%w: host %s boot %s: %w (last: %v)", store.ErrOutcomeUnknown, m.hb.Host, m.hb.Boot, store.ErrFenced, err)
		}
	}
}

// Stats are counts of the handle's calls to etcd, for benchmarks and
// metrics.
type Stats struct {
	Reads     uint64 `json:"reads"`   // read requests (a multi-key read is one)
	Commits   uint64 `json:"commits"` // write transactions sent, resolutions included
	Conflicts uint64 `json:"conflicts"`
	Unknown   uint64 `json:"unknown_outcomes"`
}

type counters struct{ reads, commits, conflicts, unknown atomic.Uint64 }

// Stats of this handle so far.
func (s *Store) Stats() Stats {
	return Stats{Reads: s.stats.reads.Load(), Commits: s.stats.commits.Load(),
		Conflicts: s.stats.conflicts.Load(), Unknown: s.stats.unknown.Load()}
}

// StoreStats is Stats for the supervisor's metrics.
func (s *Store) StoreStats() (reads, commits, conflicts, unknown uint64) {
	st := s.Stats()
	return st.Reads, st.Commits, st.Conflicts, st.Unknown
}

// LeaseTTL is the registrations' lease.
func (s *Store) LeaseTTL() time.Duration { return s.cfg.LeaseTTL }
