package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	etcdstore "github.com/cyberia-to/cyber-supervisor/supervisor/store/etcd"
)

// clusterFlags choose the job store of serve: the home's own file (the
// default), or a store on etcd shared by several hosts (docs/cluster.md).
type clusterFlags struct {
	store    string
	hostID   string
	leaseTTL time.Duration
	ca       string
	cert     string
	key      string
	// keepLocalJobs: serve on etcd although the home's own store holds
	// jobs (they stay there; supervisor.ErrLocalJobs otherwise).
	keepLocalJobs bool
	etcd          etcdstore.Config
}

const maxLeaseTTL = time.Hour

func (c *clusterFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.store, "store", "", "the job store: empty for the home's own file, or etcd://HOST:PORT[,HOST:PORT...][/PREFIX] to share one with other hosts")
	fs.StringVar(&c.hostID, "host-id", "", "this host's name in the cluster and on its attempts (default: the machine's name and a digest of the home)")
	fs.DurationVar(&c.leaseTTL, "lease-ttl", 10*time.Second, "the lease of this host's cluster registration (whole seconds): a host not heard from for that long is taken for gone")
	fs.StringVar(&c.ca, "etcd-ca", "", "PEM CA bundle to check etcd's servers by (TLS)")
	fs.StringVar(&c.cert, "etcd-cert", "", "PEM client certificate for etcd (TLS, with --etcd-key)")
	fs.StringVar(&c.key, "etcd-key", "", "PEM key of --etcd-cert")
	fs.BoolVar(&c.keepLocalJobs, "keep-local-jobs", false, "serve on --store etcd://... although the home's own store holds jobs: they stay there, untouched (certificates included), until the home serves on its own store again (without it such a start is refused, exit 2)")
}

// check validates the flags before anything starts.
func (c *clusterFlags) check(fs *pflag.FlagSet) error {
	if c.hostID != "" {
		if err := supervisor.CheckHostID(c.hostID); err != nil {
			return usagef("--host-id: %v", strings.TrimPrefix(err.Error(), supervisor.ErrConfig.Error()+": "))
		}
	}
	if c.store == "" {
		for _, name := range []string{"lease-ttl", "etcd-ca", "etcd-cert", "etcd-key", "keep-local-jobs"} {
			if fs.Changed(name) {
				return usagef("--%s needs --store etcd://...", name)
			}
		}
		return nil
	}
	cfg, err := etcdstore.ParseURL(c.store)
	if err != nil {
		return usagef("--store: %v", strings.TrimPrefix(err.Error(), etcdstore.ErrConfig.Error()+": "))
	}
	if c.leaseTTL < time.Second || c.leaseTTL > maxLeaseTTL || c.leaseTTL%time.Second != 0 {
		return usagef("--lease-ttl %s: whole seconds from 1s to %s", c.leaseTTL, maxLeaseTTL)
	}
	if c.ca != "" || c.cert != "" || c.key != "" {
		if cfg.TLS, err = etcdstore.TLSFiles(c.ca, c.cert, c.key); err != nil {
			return usagef("%v", err)
		}
	}
	cfg.LeaseTTL = c.leaseTTL
	c.etcd = cfg
	return nil
}

// open connects to the shared store, or returns nil for the home's own.
func (c *clusterFlags) open(ctx context.Context, log *slog.Logger, trust *store.Trust) (store.Store, error) {
	if c.store == "" {
		return nil, nil
	}
	cfg := c.etcd
	cfg.Logger, cfg.Trust = log, trust
	s, err := etcdstore.Open(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open the job store %s: %w", c.store, err)
	}
	return s, nil
}
