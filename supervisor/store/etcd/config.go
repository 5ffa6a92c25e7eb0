// Package etcd is the job store on etcd, shared by several supervisors
// (docs/cluster.md). It implements store.Store and store.Cluster: every
// transaction reads at one snapshot revision, remembers the revision of
// every key it read, and commits as one etcd transaction that compares
// all of them, so that each invariant the local store enforces holds
// across hosts. Host boots register under leases; every write of a
// joined handle also compares its own registration.
package etcd

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("invalid etcd store configuration")

// Config of the store.
type Config struct {
	// Trust is the neuron key this host's signed job claims are checked
	// against: the home's, shared with its own store (nil: one of the
	// handle's own, which trusts no key until set).
	Trust *store.Trust
	// Endpoints are etcd's client addresses, host:port.
	Endpoints []string
	// Prefix holds every key of the store (default /cyber-supervisor/):
	// several clusters may share one etcd under different prefixes.
	Prefix string
	// TLS, when set, is used for every connection.
	TLS *tls.Config
	// DialTimeout bounds the first connection (default 5 s).
	DialTimeout time.Duration
	// RequestTimeout bounds one call to etcd (default 5 s); a write that
	// runs out of it has an unknown outcome and is resolved (store.go).
	RequestTimeout time.Duration
	// LeaseTTL is the host registration's lease (default 10 s).
	LeaseTTL time.Duration
	Logger   *slog.Logger
}

// DefaultPrefix is where the store's keys live unless the URL names
// another prefix.
const DefaultPrefix = "/cyber-supervisor/"

// URL schemes.
const Scheme = "etcd://"

// ParseURL reads etcd://HOST:PORT[,HOST:PORT...][/PREFIX].
func ParseURL(s string) (Config, error) {
	var c Config
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return c, fmt.Errorf("%w: %q: want %sHOST:PORT[,HOST:PORT...][/PREFIX]", ErrConfig, s, Scheme)
	}
	hosts, prefix, _ := strings.Cut(rest, "/")
	for _, h := range strings.Split(hosts, ",") {
		host, port, err := net.SplitHostPort(h)
		if err != nil || host == "" || port == "" {
			return c, fmt.Errorf("%w: %q: endpoint %q is not HOST:PORT", ErrConfig, s, h)
		}
		c.Endpoints = append(c.Endpoints, h)
	}
	c.Prefix = DefaultPrefix
	if prefix != "" {
		if strings.ContainsAny(prefix, "\x00") || strings.Contains(prefix, "//") {
			return c, fmt.Errorf("%w: %q: bad prefix", ErrConfig, s)
		}
		c.Prefix = "/" + strings.TrimSuffix(prefix, "/") + "/"
	}
	return c, nil
}

// TLSFiles makes the client's TLS configuration from PEM files: ca to
// check the servers (empty: the system's roots), cert and key to present
// (both or neither).
func TLSFiles(ca, cert, key string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%w: read CA %s: %w", ErrConfig, ca, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: CA %s holds no PEM certificate", ErrConfig, ca)
		}
		cfg.RootCAs = pool
	}
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("%w: a client certificate needs its key and a key its certificate", ErrConfig)
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("%w: client certificate %s: %w", ErrConfig, cert, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

func (c Config) withDefaults() (Config, error) {
	if len(c.Endpoints) == 0 {
		return c, fmt.Errorf("%w: no endpoints", ErrConfig)
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = 5 * time.Second
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 5 * time.Second
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 10 * time.Second
	}
	if c.LeaseTTL < time.Second || c.LeaseTTL%time.Second != 0 {
		return c, fmt.Errorf("%w: lease TTL %s: whole seconds, at least 1 s (etcd's leases count seconds)", ErrConfig, c.LeaseTTL)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}
