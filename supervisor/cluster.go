package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// Several hosts on one store (docs/cluster.md). A supervisor whose store
// is a store.Cluster joins it as a host boot: the registration's revision
// is the boot's placement generation, stamped on every attempt it
// prepares, and the store compares the registration in every write. A
// lease is not a lock: when the registration is lost, or may be, the
// boot stops taking jobs and kills its workers (fence), then joins again
// as a new boot. The attempts of boots whose registration is gone (this
// host's earlier ones included) are recovered by whoever is registered:
// marked unknown, never dispatched again, and the job queued for a new
// attempt where its retry policy allows it.

// maxHostID bounds a host id (a key of the shared store).
const maxHostID = 64

// takeSpread is the most a host waits before taking a job another host
// queued.
const takeSpread = 8 * time.Millisecond

// DefaultHostID is the host id of a home unless one is configured: the
// machine's name and a digest of the home's path, so that several homes
// on one machine are several hosts and a home keeps its id across
// restarts.
func DefaultHostID(home string) string {
	name, _ := os.Hostname()
	name = strings.Map(func(r rune) rune {
		if hostIDRune(r) {
			return r
		}
		return '-'
	}, name)
	if name == "" {
		name = "host"
	}
	sum := sha256.Sum256([]byte(home))
	return fmt.Sprintf("%.40s-%s", name, hex.EncodeToString(sum[:4]))
}

func hostIDRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
}

// homeTag names this home in its cluster registration (HostBoot.Home):
// the machine's name and the home's absolute path.
func (s *Supervisor) homeTag() string {
	name, _ := os.Hostname()
	home, err := filepath.Abs(s.cfg.Home)
	if err != nil {
		home = s.cfg.Home
	}
	return name + ":" + home
}

// CheckHostID: 1 to 64 of [A-Za-z0-9._-], not starting with a dot (the
// CLI checks --host-id with it before anything starts).
func CheckHostID(id string) error {
	if id == "" || len(id) > maxHostID || id[0] == '.' || strings.IndexFunc(id, func(r rune) bool { return !hostIDRune(r) }) >= 0 {
		return fmt.Errorf("%w: host id %q: 1 to %d letters, digits, '.', '_' or '-', not starting with '.'", ErrConfig, id, maxHostID)
	}
	return nil
}

// identity is who prepares attempts now: host, boot and generation.
type identity struct {
	host string
	boot string
	gen  uint64
}

func (s *Supervisor) ident() identity {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// fenced says whether this boot has lost its registration and has not
// joined again yet: nothing is taken or dispatched meanwhile.
func (s *Supervisor) fenced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.isFenced
}

// txIdent is the identity a write in tx is made under: on a shared store
// the registration its commit compares, which differs from ident while
// the boot joins again (the handle has the new registration before s.id
// does) and in an Update begun before that.
func (s *Supervisor) txIdent(tx store.Tx) identity {
	id := s.ident()
	if s.cluster == nil {
		return id
	}
	if r, ok := txAs[store.Registered](tx); ok {
		if hb, ok := r.Registration(); ok {
			id.boot, id.gen = hb.Boot, hb.Generation
		}
	}
	return id
}

// registrationStands says whether a's worker may be given its job now:
// always on the home's own store; on a shared one while the registration
// a was prepared under is this boot's and stands
// (store.Membership.Standing).
func (s *Supervisor) registrationStands(a *active) bool {
	if s.cluster == nil {
		return true
	}
	m := s.membership()
	return m != nil && m.HostBoot().Generation == a.gen && m.Standing()
}

// membership is the boot's current registration in the shared store
// (nil on the home's own store): after a fence, the lost one until the
// boot has joined again.
func (s *Supervisor) membership() store.Membership {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.member
}

// join registers the boot in the cluster store, waiting out an
// unreachable etcd until ctx ends.
func (s *Supervisor) join(ctx context.Context) error {
	id := s.ident()
	wait := 100 * time.Millisecond
	for {
		m, err := s.cluster.Join(ctx, store.HostBoot{Host: id.host, Boot: id.boot, Slots: s.cfg.Slots, Home: s.homeTag()})
		if err == nil {
			hb := m.HostBoot()
			s.mu.Lock()
			s.member = m
			s.id.gen = hb.Generation
			s.isFenced = false
			s.mu.Unlock()
			s.metrics.setHost(id.host, id.boot, hb.Generation)
			return nil
		}
		if !errors.Is(err, store.ErrUnavailable) {
			return err
		}
		s.log.Warn("cannot join the cluster yet", "host", id.host, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("join the cluster: %w (last: %w)", ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// runCluster follows the shared store until ctx ends: other hosts'
// changes to jobs (waiters, cancels, new work), departures of hosts
// (their attempts are recovered here), and the loss of this boot's own
// registration (fence, then join again).
func (s *Supervisor) runCluster(ctx context.Context) {
	sweep := make(chan struct{}, 1)
	poke := func() {
		select {
		case sweep <- struct{}{}:
		default:
		}
	}
	s.background.Add(2)
	go func() {
		defer s.background.Done()
		s.cluster.Watch(ctx, func(j *store.Job) { s.jobChanged(ctx, j) }, poke)
	}()
	go func() {
		defer s.background.Done()
		// A departed host's lease is gone within its TTL; the watch
		// reports it, and this tick covers a watch that missed it.
		tick := time.NewTicker(s.leaseTTL())
		defer tick.Stop()
		for {
			s.sweep(ctx)
			select {
			case <-ctx.Done():
				return
			case <-sweep:
			case <-tick.C:
			}
		}
	}()
	for {
		m := s.membership()
		select {
		case <-ctx.Done():
			return
		case <-m.Lost():
		}
		s.fenceBoot()
		if err := s.rejoin(ctx); err != nil {
			if ctx.Err() == nil {
				s.log.Error("cannot join the cluster again", "err", err)
				s.broken <- fmt.Errorf("join the cluster again: %w", err)
			}
			return
		}
		poke()
	}
}

func (s *Supervisor) leaseTTL() time.Duration {
	if t, ok := s.cluster.(interface{ LeaseTTL() time.Duration }); ok {
		return t.LeaseTTL()
	}
	return 10 * time.Second
}

// fenceBoot stops the boot that lost its registration: no more jobs are
// taken, every worker is killed at once (their attempts are another
// host's to recover now), and the attempts' goroutines are waited for.
func (s *Supervisor) fenceBoot() {
	s.mu.Lock()
	s.isFenced = true
	id := s.id
	actives := make([]*active, 0, len(s.active))
	for _, a := range s.active {
		actives = append(actives, a)
	}
	s.mu.Unlock()
	s.metrics.fenced()
	s.log.Error("fenced: the cluster registration is lost; killing this boot's workers", "host", id.host, "boot", id.boot,
		"generation", id.gen, "running", len(actives))
	// Waiters (events --follow, wait) read again now: etcd may be what
	// cut this boot off, and a read etcd does not answer is answered busy
	// within the read timeout (reads.go), where the long poll would wait
	// out its bound for a change no watch may bring.
	s.changes.notifyAll()
	for _, a := range actives {
		a.requestCancel("this host lost its cluster registration", true)
		a.kill()
	}
	for _, a := range actives {
		<-a.finished
	}
}

// rejoin starts a new boot of the host in the running process.
func (s *Supervisor) rejoin(ctx context.Context) error {
	s.mu.Lock()
	old := s.id.boot
	s.id.boot = newBootID()
	s.mu.Unlock()
	if err := s.join(ctx); err != nil {
		return err
	}
	id := s.ident()
	s.log.Info("joined the cluster as a new boot", "host", id.host, "boot", id.boot, "generation", id.gen, "previous_boot", old)
	s.kick()
	return nil
}

// jobChanged is the watch's report of a job record written by any host.
// Its reads end with ctx (the daemon's run): one that waited for an etcd
// that does not answer would hold up the daemon's stop, which waits for
// the watch.
func (s *Supervisor) jobChanged(ctx context.Context, j *store.Job) {
	if j == nil {
		if ctx.Err() != nil {
			return
		}
		// A gap in the watch: anything may have changed.
		s.changes.notifyAll()
		s.kick()
		s.mu.Lock()
		ids := make([]string, 0, len(s.active))
		for id := range s.active {
			ids = append(ids, id)
		}
		s.mu.Unlock()
		for _, id := range ids {
			if st, err := s.Status(ctx, id); err == nil && st.Job.CancelRequested {
				s.cancelLocal(st.Job)
			}
		}
		return
	}
	// The record as another host committed it: watch events come in
	// revision order, so a later terminal state is a later event.
	s.changes.notifyState(j.ID, j.State)
	if j.State == lifecycle.Queued {
		// Every host hears of the job at once; a little spread between
		// their takes spares most of them a conflict on the queue's head.
		time.AfterFunc(time.Duration(rand.Int64N(int64(takeSpread))), s.kick)
	}
	if j.CancelRequested {
		s.cancelLocal(j)
	}
}

// cancelLocal passes a cancel recorded through another host to the
// attempt running here, with the reason it was given (stored with the
// request; a record of a version before that has none).
func (s *Supervisor) cancelLocal(j *store.Job) {
	if a := s.lookupActive(j.ID); a != nil {
		reason := j.CancelReason
		if reason == "" {
			reason = "cancelled by request (through another host)"
		}
		a.requestCancel(reason, false)
	}
}

// sweep recovers the attempts of boots that are no longer registered.
// The unfinished attempts are read before the registrations: a boot that
// prepared one had joined by then, so a registration missing afterwards
// is gone for good (boot ids are never reused).
func (s *Supervisor) sweep(ctx context.Context) Recovery {
	var total Recovery
	if s.fenced() {
		return total
	}
	var atts []*store.Attempt
	if err := s.store.View(ctx, func(tx store.Tx) error {
		atts = atts[:0]
		return tx.ForEachUnfinished(func(a *store.Attempt) bool { atts = append(atts, a); return true })
	}); err != nil {
		if ctx.Err() == nil {
			s.log.Warn("cluster sweep: list unfinished attempts", "err", err)
		}
		return total
	}
	if len(atts) == 0 {
		return total
	}
	hosts, err := s.cluster.Hosts(ctx)
	if err != nil {
		s.log.Warn("cluster sweep: list hosts", "err", err)
		return total
	}
	live := map[string]bool{s.ident().boot: true}
	for _, h := range hosts {
		live[h.Boot] = true
	}
	dead := func(a *store.Attempt) bool { return !live[a.Boot] }
	gone := map[string]bool{}
	for _, a := range atts {
		if !dead(a) || gone[a.Job] {
			continue
		}
		gone[a.Job] = true
		var rec Recovery
		err := s.store.Update(ctx, func(tx store.Tx) error {
			rec = Recovery{}
			j, err := tx.Job(a.Job)
			if err != nil {
				return err
			}
			if j.State.Terminal() {
				return nil
			}
			return s.recoverJob(tx, j, dead, "host "+a.Host+" (boot "+a.Boot+") left the cluster", &rec)
		})
		switch {
		case err == nil && rec.UnknownAttempts == 0:
			// Another host recovered it first.
		case err == nil:
			total.add(rec)
			s.metrics.recoveredFromHost()
			s.changes.notify(a.Job)
			s.log.Warn("recovered the attempt of a departed host: outcome unknown", "job", a.Job, "attempt", a.N,
				"host", a.Host, "boot", a.Boot)
		case errors.Is(err, store.ErrFenced) || ctx.Err() != nil:
			return total
		default:
			s.log.Error("recover the attempt of a departed host", "job", a.Job, "attempt", a.N, "err", err)
		}
	}
	if f, ok := s.cluster.(interface {
		ForgetBoot(context.Context, string) error
	}); ok {
		for _, a := range atts {
			if dead(a) {
				f.ForgetBoot(ctx, a.Boot)
			}
		}
	}
	s.kick()
	return total
}

// history logs (at debug) a decision that committed: the claim of an
// attempt (prepared) or its acceptance, with when the transaction was
// started and when it returned, so that a history checker can place it
// (the cluster fault test: integration/cluster_fault_test.go). id is the
// identity the committed run wrote under (txIdent): read again after the
// commit it may already be a later registration's (the host lost its
// lease while the reply was on its way, and joined again).
func (s *Supervisor) history(op, job string, n uint32, id identity, invoked time.Time) {
	if !s.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	s.log.Debug("history", "op", op, "job", job, "attempt", n, "host", id.host, "boot", id.boot, "generation", id.gen,
		"invoked_ns", invoked.UnixNano(), "returned_ns", time.Now().UnixNano())
}

// HostStatus is one registered host as `cyber-supervisor hosts` shows it.
type HostStatus struct {
	store.HostBoot
	// Running are the host boot's unfinished attempts, job/attempt.
	Running []string `json:"running"`
	// Self: this is the host answering.
	Self bool `json:"self,omitempty"`
}

// Hosts lists the registered hosts (on a local store: this one).
func (s *Supervisor) Hosts(ctx context.Context) ([]HostStatus, error) {
	id := s.ident()
	var hosts []store.HostBoot
	if s.cluster != nil {
		var err error
		if hosts, err = s.cluster.Hosts(ctx); err != nil {
			return nil, err
		}
	} else {
		hosts = []store.HostBoot{{Host: id.host, Boot: id.boot, Generation: id.gen, Slots: s.cfg.Slots, Started: s.startedAt, Home: s.homeTag()}}
	}
	running := map[string][]string{}
	if err := s.view(ctx, "hosts: list running attempts", func(tx store.Tx) error {
		clear(running)
		return tx.ForEachUnfinished(func(a *store.Attempt) bool {
			running[a.Boot] = append(running[a.Boot], fmt.Sprintf("%s/%d", a.Job, a.N))
			return true
		})
	}); err != nil {
		return nil, err
	}
	out := make([]HostStatus, len(hosts))
	for i, h := range hosts {
		out[i] = HostStatus{HostBoot: h, Running: running[h.Boot], Self: h.Boot == id.boot}
		if out[i].Running == nil {
			out[i].Running = []string{}
		}
	}
	return out, nil
}
