package api

import (
	"errors"
	"fmt"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"golang.org/x/sys/unix"
)

// Config bounds what clients can hold of the daemon: connections, time
// and memory. The zero value means the defaults.
type Config struct {
	// MaxConns caps the connections served at once. At the cap, a new
	// connection takes the place of the one that has waited longest
	// without a request in progress (idle, or still sending its request
	// line, headers or body); when every connection is in a request the
	// new one is answered busy. Default 1024.
	MaxConns int
	// HeaderTimeout bounds reading a request's line and headers, from the
	// first byte on a new connection (default 5 s).
	HeaderTimeout time.Duration
	// BodyTimeout bounds reading a request's body once its headers are in
	// (default 60 s: a 48 MiB submission needs well under a second).
	BodyTimeout time.Duration
	// IdleTimeout closes a kept-alive connection with no request for this
	// long (default 60 s).
	IdleTimeout time.Duration
	// WriteTimeout bounds writing one answer to a client that does not
	// read it (default 30 s).
	WriteTimeout time.Duration
	// LongPoll bounds one wait request; clients poll again (default 30 s).
	LongPoll time.Duration
	// BodyBudget bounds the request body bytes held at once beyond the
	// first BodyAllowance bytes of each connection's: a submission that
	// would exceed it waits (within its body timeout) for others to finish.
	// Default 128 MiB, at least one maximal submission.
	BodyBudget int64
}

// BodyAllowance is what each request may buffer of its body without
// drawing on the shared budget: a typical submission is a few KiB.
const BodyAllowance = 64 << 10

// Defaults.
const (
	DefaultMaxConns      = 1024
	DefaultHeaderTimeout = 5 * time.Second
	DefaultBodyTimeout   = 60 * time.Second
	DefaultIdleTimeout   = 60 * time.Second
	DefaultWriteTimeout  = 30 * time.Second
	DefaultLongPoll      = 30 * time.Second
	DefaultBodyBudget    = 128 << 20
)

// Bounds of the configurable values.
const (
	maxTimeout = time.Hour
	// reservedFDs are descriptors the daemon keeps for itself beyond the
	// API's connections: the store, cgroup files, workers' sockets and
	// pipes, sandbox directories.
	reservedFDs = 256
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("invalid API configuration")

// withDefaults fills in the defaults and refuses values outside their
// bounds, before anything listens.
func (c Config) withDefaults() (Config, error) {
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&c.HeaderTimeout, DefaultHeaderTimeout}, {&c.BodyTimeout, DefaultBodyTimeout}, {&c.IdleTimeout, DefaultIdleTimeout},
		{&c.WriteTimeout, DefaultWriteTimeout}, {&c.LongPoll, DefaultLongPoll}} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if c.BodyBudget == 0 {
		c.BodyBudget = DefaultBodyBudget
	}
	if c.MaxConns < 1 {
		return c, fmt.Errorf("%w: max connections %d: must be at least 1", ErrConfig, c.MaxConns)
	}
	if limit, ok := openFileLimit(); ok && uint64(c.MaxConns)+reservedFDs > limit {
		return c, fmt.Errorf("%w: max connections %d: the open file limit is %d and the daemon keeps %d descriptors for itself",
			ErrConfig, c.MaxConns, limit, reservedFDs)
	}
	for name, d := range map[string]time.Duration{"header timeout": c.HeaderTimeout, "body timeout": c.BodyTimeout,
		"idle timeout": c.IdleTimeout, "write timeout": c.WriteTimeout, "long poll": c.LongPoll} {
		if d < time.Millisecond || d > maxTimeout {
			return c, fmt.Errorf("%w: %s %s: must be within 1ms..%s", ErrConfig, name, d, maxTimeout)
		}
	}
	if c.BodyBudget < protocol.MaxSubmissionBytes {
		return c, fmt.Errorf("%w: body budget %d bytes: must hold one maximal submission (%d bytes)", ErrConfig, c.BodyBudget, protocol.MaxSubmissionBytes)
	}
	return c, nil
}

// Validate reports whether c (with defaults filled in) can be served.
func (c Config) Validate() error {
	_, err := c.withDefaults()
	return err
}

// openFileLimit is the soft RLIMIT_NOFILE (the Go runtime has already
// raised it to the hard limit).
func openFileLimit() (uint64, bool) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY {
		return 0, false
	}
	return rl.Cur, true
}
