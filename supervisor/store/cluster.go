package store

import (
	"context"
	"errors"
	"time"
)

var (
	// ErrFenced: this host boot's registration in a shared store is lost
	// (its lease expired or may have): the write was refused, and every
	// later one is, until the host joins again as a new boot.
	ErrFenced = errors.New("this host's registration in the shared store is lost")
	// ErrOutcomeUnknown: a write may or may not have committed and the
	// store could not find out before it was closed.
	ErrOutcomeUnknown = errors.New("the outcome of the store write is unknown")
	// ErrUnavailable: the shared store could not be reached.
	ErrUnavailable = errors.New("the shared store is unavailable")
	// ErrHostInUse: Join found the host id registered, under a lease
	// still alive, by another home (HostBoot.Home): two daemons were given
	// one --host-id. Nothing was replaced.
	ErrHostInUse = errors.New("the host id is registered by another home")
)

// HostBoot is one registered host boot of a shared store.
type HostBoot struct {
	Host string `json:"host"`
	Boot string `json:"boot"`
	// Generation is the revision of the registration: the boot's
	// placement generation, increasing across the cluster.
	Generation uint64    `json:"generation"`
	Slots      int       `json:"slots"`
	Started    time.Time `json:"started"`
	// Home is where the boot runs: the machine's name and the home's
	// path. Join replaces a registration of the same host id only when it
	// is of the same home (an earlier boot, which the home's lock says is
	// gone) or names none (a registration of an older version).
	Home string `json:"home,omitempty"`
	// The registration's lease as the store saw it when it listed the
	// hosts (not stored: etcd keeps the lease): its TTL and what was
	// left of it. TTL − Left is how long ago the boot last renewed it;
	// a boot whose Left nears 0 is about to be fenced. Both 0 where the
	// store has no leases (the home's own file).
	LeaseTTL  time.Duration `json:"-"`
	LeaseLeft time.Duration `json:"-"`
}

// Cluster is a store that several hosts share (supervisor/store/etcd,
// docs/cluster.md). A host boot joins it before it writes; every write
// made through the handle afterwards compares that registration, so a
// host that lost it (paused past its lease, cut off) writes nothing.
type Cluster interface {
	Store
	// Join registers the boot (h.Host, h.Boot, h.Slots, h.Home) under a
	// lease and keeps it alive. A registration left by an earlier boot of
	// the same host and home is replaced: the host's lock on its home says
	// that boot is gone. One of another home is refused (ErrHostInUse).
	Join(ctx context.Context, h HostBoot) (Membership, error)
	// Hosts lists the registered host boots.
	Hosts(ctx context.Context) ([]HostBoot, error)
	// Watch calls jobs with every job record other handles write from
	// now on (this handle's own writes are left out) and
	// hosts whenever a registration goes or comes, until ctx ends. After
	// a gap (the watch restarted) it calls jobs(nil): anything may have
	// changed.
	Watch(ctx context.Context, jobs func(*Job), hosts func())
}

// Registered is a transaction of a Cluster handle: Registration names the
// host boot whose registration its commit compares (false before the
// handle joined). An Update that is run again after the handle joined as
// a new boot runs under the new registration, so what a transaction
// writes in a boot's name (an attempt's boot and generation) is taken
// from here, not from what the host last knew of itself.
type Registered interface {
	Registration() (HostBoot, bool)
}

// Membership is a joined host boot.
type Membership interface {
	HostBoot() HostBoot
	// Lost is closed once the registration is lost or may be: the lease
	// was not renewed within its TTL minus a margin, or etcd said it has
	// expired. The handle's writes fail with ErrFenced from then on.
	Lost() <-chan struct{}
	// Standing reports whether the registration is known to stand now:
	// not lost, and its lease's deadline (as this host's clock bounds it)
	// not passed. A deadline found passed fences the boot at once (Lost
	// closes): a process that was paused past it may run before its
	// keepalive does.
	Standing() bool
	// Leave deletes the registration (a clean shutdown).
	Leave(ctx context.Context) error
}

type readPatienceKey struct{}

// WithReadPatience marks ctx for reads (View) that give up once a shared
// store has not answered for d: they fail with ErrUnavailable instead of
// waiting for it until ctx ends. A read that makes progress (a long scan
// whose requests are answered) is not cut short. The home's own store
// reads its file and ignores it.
func WithReadPatience(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, readPatienceKey{}, d)
}

// ReadPatience is the patience WithReadPatience set on ctx (0: none).
func ReadPatience(ctx context.Context) time.Duration {
	d, _ := ctx.Value(readPatienceKey{}).(time.Duration)
	return d
}
