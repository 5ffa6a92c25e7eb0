package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// member is a joined host boot: its registration hosts/<host> under a
// lease, and the keepalive that renews it. The registration's mod
// revision is the boot's generation; every write of the handle compares
// it (commit), so a boot whose key expired, or was replaced by a later
// boot of the same host, can write nothing.
type member struct {
	s     *Store
	hb    store.HostBoot
	key   string
	lease clientv3.LeaseID
	ttl   time.Duration

	mu       sync.Mutex
	deadline time.Time // renewal needed before this, or the boot fences itself
	lost     chan struct{}
	lostOnce sync.Once
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// margin is how long before the lease's expiry (as this host's clock
// can bound it) the boot stops: a lease is not a lock, and the other
// hosts may recover its attempts as soon as etcd expires it.
func margin(ttl time.Duration) time.Duration { return max(ttl/4, 250*time.Millisecond) }

func (s *Store) joined() *member {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.member
}

// Join registers the boot. A registration of the same host left by an
// earlier boot (a crash, a fenced boot of this process) is replaced in
// one compare-and-swap on its mod revision.
func (s *Store) Join(ctx context.Context, h store.HostBoot) (store.Membership, error) {
	if h.Host == "" || h.Boot == "" {
		return nil, fmt.Errorf("%w: a host boot needs a host id and a boot id", ErrConfig)
	}
	if m := s.joined(); m != nil && !m.isLost() {
		return nil, fmt.Errorf("etcd store: already joined as host %s boot %s", m.hb.Host, m.hb.Boot)
	}
	ttl := s.cfg.LeaseTTL
	c, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	sent := time.Now()
	grant, err := s.cli.Grant(c, int64(ttl/time.Second))
	if err != nil {
		return nil, fmt.Errorf("join as host %s: lease: %w: %w", h.Host, store.ErrUnavailable, err)
	}
	m := &member{s: s, key: s.k.host(h.Host), lease: grant.ID, ttl: ttl,
		deadline: sent.Add(ttl - margin(ttl)), lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	h.Started = time.Now().UTC()
	h.Generation = 0
	raw, _ := json.Marshal(h)
	var prior int64 // mod revision of the registration replaced, 0: none
	for range 8 {
		cmp := clientv3.Compare(clientv3.CreateRevision(m.key), "=", 0)
		if prior != 0 {
			cmp = clientv3.Compare(clientv3.ModRevision(m.key), "=", prior)
		}
		resp, err := s.cli.Txn(c).If(cmp).Then(clientv3.OpPut(m.key, string(raw), clientv3.WithLease(grant.ID))).
			Else(clientv3.OpGet(m.key)).Commit()
		s.stats.commits.Add(1)
		if err != nil {
			s.cli.Revoke(context.WithoutCancel(c), grant.ID)
			return nil, fmt.Errorf("join as host %s: %w: %w", h.Host, store.ErrUnavailable, err)
		}
		if resp.Succeeded {
			h.Generation = uint64(resp.Header.Revision)
			break
		}
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			prior = 0
			continue
		}
		var old store.HostBoot
		json.Unmarshal(kvs[0].Value, &old)
		if old.Home != "" && old.Home != h.Home {
			// The key lives only as long as its lease: another daemon
			// holds this host id now, or did until less than a TTL ago.
			s.cli.Revoke(context.WithoutCancel(c), grant.ID)
			return nil, fmt.Errorf("join as host %s: %w (%s, boot %s, started %s): give each home its own --host-id; if that home is gone, its registration expires within its lease TTL",
				h.Host, store.ErrHostInUse, old.Home, old.Boot, old.Started.Format(time.RFC3339))
		}
		s.log.Warn("replacing the registration of an earlier boot of this host", "host", h.Host, "old_boot", old.Boot,
			"old_generation", kvs[0].ModRevision)
		prior = kvs[0].ModRevision
	}
	if h.Generation == 0 {
		s.cli.Revoke(context.WithoutCancel(c), grant.ID)
		return nil, fmt.Errorf("join as host %s: the registration kept changing", h.Host)
	}
	m.hb = h
	s.mu.Lock()
	s.member = m
	s.markers = h.Boot
	s.done = nil
	s.mu.Unlock()
	go m.keepalive()
	s.log.Info("joined the cluster", "host", h.Host, "boot", h.Boot, "generation", h.Generation, "lease_ttl", ttl)
	return m, nil
}

func (m *member) HostBoot() store.HostBoot { return m.hb }
func (m *member) Lost() <-chan struct{}    { return m.lost }

func (m *member) Standing() bool {
	if m.isLost() {
		return false
	}
	m.mu.Lock()
	deadline := m.deadline
	m.mu.Unlock()
	if time.Now().Before(deadline) {
		return true
	}
	m.lose("the lease's deadline passed before its renewal")
	return false
}

func (m *member) isLost() bool {
	select {
	case <-m.lost:
		return true
	default:
		return false
	}
}

// lose fences the boot: the handle writes nothing more for it, and the
// lease is revoked (when etcd can be reached) so that the other hosts
// need not wait for its expiry to recover the boot's attempts.
func (m *member) lose(why string) {
	m.lostOnce.Do(func() {
		m.s.log.Error("lost the cluster registration: this boot stops", "host", m.hb.Host, "boot", m.hb.Boot,
			"generation", m.hb.Generation, "why", why)
		close(m.lost)
		m.stopKeepalive()
		go func() {
			c, cancel := context.WithTimeout(context.Background(), m.s.cfg.RequestTimeout)
			defer cancel()
			m.s.cli.Revoke(c, m.lease)
		}()
	})
}

func (m *member) stopKeepalive() { m.stopOnce.Do(func() { close(m.stop) }) }

// keepalive renews the lease every third of its TTL. Each renewal moves
// the deadline to when it was sent plus the TTL minus the margin: etcd
// renewed it no earlier than that. A deadline that passes, or etcd
// saying the lease is gone, fences the boot.
func (m *member) keepalive() {
	defer close(m.done)
	tick := time.NewTicker(m.ttl / 3)
	defer tick.Stop()
	for {
		m.mu.Lock()
		left := time.Until(m.deadline)
		m.mu.Unlock()
		if left <= 0 {
			m.lose("the lease was not renewed within its TTL less the margin")
			return
		}
		watchdog := time.NewTimer(left)
		select {
		case <-m.stop:
			watchdog.Stop()
			return
		case <-watchdog.C:
			continue
		case <-tick.C:
			watchdog.Stop()
		}
		sent := time.Now()
		c, cancel := context.WithTimeout(context.Background(), m.ttl/3)
		resp, err := m.s.cli.KeepAliveOnce(c, m.lease)
		cancel()
		switch {
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			m.lose("etcd says the lease has expired")
			return
		case err != nil:
			m.s.log.Warn("lease renewal failed", "host", m.hb.Host, "err", err)
		case resp.TTL <= 0:
			m.lose("etcd says the lease has expired")
			return
		default:
			m.mu.Lock()
			if d := sent.Add(time.Duration(resp.TTL)*time.Second - margin(m.ttl)); d.After(m.deadline) {
				m.deadline = d
			}
			m.mu.Unlock()
		}
	}
}

// Leave deletes the registration and this boot's outcome markers; the
// handle writes nothing for the boot afterwards.
func (m *member) Leave(ctx context.Context) error {
	m.stopKeepalive()
	<-m.done
	m.lostOnce.Do(func() { close(m.lost) })
	c, cancel := context.WithTimeout(ctx, m.s.cfg.RequestTimeout)
	defer cancel()
	if _, err := m.s.cli.Revoke(c, m.lease); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("leave as host %s: %w", m.hb.Host, err)
	}
	// The registration is gone: no write of this boot still in flight can
	// commit, so its markers are of no more use.
	if _, err := m.s.cli.Delete(c, m.s.k.markers(m.hb.Boot), clientv3.WithPrefix()); err != nil {
		return fmt.Errorf("leave as host %s: %w", m.hb.Host, err)
	}
	return nil
}

// Hosts lists the registered host boots.
func (s *Store) Hosts(ctx context.Context) ([]store.HostBoot, error) {
	c, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	s.stats.reads.Add(1)
	resp, err := s.cli.Get(c, s.k.hosts(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("list hosts: %w: %w", store.ErrUnavailable, err)
	}
	out := make([]store.HostBoot, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var h store.HostBoot
		if err := json.Unmarshal(kv.Value, &h); err != nil {
			return nil, s.damaged(string(kv.Key), "the record does not decode: "+err.Error())
		}
		h.Generation = uint64(kv.ModRevision)
		if kv.Lease != 0 {
			// The lease's age is the dashboard's; a lease that expired
			// since the read is left at 0 (the registration is going).
			if l, err := s.cli.TimeToLive(c, clientv3.LeaseID(kv.Lease)); err == nil && l.TTL > 0 {
				h.LeaseTTL = time.Duration(l.GrantedTTL) * time.Second
				h.LeaseLeft = time.Duration(l.TTL) * time.Second
			}
		}
		out = append(out, h)
	}
	return out, nil
}

// ForgetBoot deletes the outcome markers of a boot whose registration is
// gone: none of its writes can commit any more.
func (s *Store) ForgetBoot(ctx context.Context, boot string) error {
	c, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	_, err := s.cli.Delete(c, s.k.markers(boot), clientv3.WithPrefix())
	return err
}

// Watch follows job records and registrations (store.Cluster). Changes
// this handle committed itself are left out: its supervisor made them.
func (s *Store) Watch(ctx context.Context, jobs func(*store.Job), hosts func()) {
	var rev int64
	for ctx.Err() == nil && !s.isClosed() {
		if rev == 0 {
			c, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
			resp, err := s.cli.Get(c, s.k.meta())
			cancel()
			if err != nil {
				select {
				case <-ctx.Done():
				case <-s.closed:
				case <-time.After(500 * time.Millisecond):
				}
				continue
			}
			rev = resp.Header.Revision + 1
		}
		rev = s.watchFrom(ctx, rev, jobs, hosts)
		if ctx.Err() != nil || s.isClosed() {
			return // not a gap: the watch is over
		}
		jobs(nil)
		hosts()
	}
}

// watchFrom watches from rev until the watch breaks, and returns where a
// new one should start (0: from now, after a compaction).
func (s *Store) watchFrom(ctx context.Context, rev int64, jobs func(*store.Job), hosts func()) int64 {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	go func() {
		select {
		case <-s.closed:
			cancel()
		case <-wctx.Done():
		}
	}()
	jw := s.cli.Watch(wctx, s.k.jobs(), clientv3.WithPrefix(), clientv3.WithRev(rev))
	hw := s.cli.Watch(wctx, s.k.hosts(), clientv3.WithPrefix(), clientv3.WithRev(rev), clientv3.WithKeysOnly())
	next := rev
	for {
		select {
		case r, ok := <-jw:
			if !ok || r.Canceled || r.Err() != nil {
				if r.CompactRevision != 0 {
					return 0
				}
				return next
			}
			for _, ev := range r.Events {
				next = max(next, ev.Kv.ModRevision+1)
				if ev.Type != clientv3.EventTypePut || s.own.has(ev.Kv.ModRevision) {
					continue
				}
				var j store.Job
				if json.Unmarshal(ev.Kv.Value, &j) == nil {
					jobs(&j)
				}
			}
		case r, ok := <-hw:
			if !ok || r.Canceled || r.Err() != nil {
				if r.CompactRevision != 0 {
					return 0
				}
				return next
			}
			if len(r.Events) > 0 {
				hosts()
			}
		}
	}
}

// RevokeForTest revokes the joined boot's lease behind its back, as its
// expiry would: for tests of fencing.
func (s *Store) RevokeForTest(ctx context.Context) error {
	m := s.joined()
	if m == nil {
		return errors.New("not joined")
	}
	_, err := s.cli.Revoke(ctx, m.lease)
	return err
}
