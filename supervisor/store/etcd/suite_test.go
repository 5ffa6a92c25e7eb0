package etcd_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/etcdtest"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	etcdstore "github.com/cyberia-to/cyber-supervisor/supervisor/store/etcd"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/storetest"
)

var prefixes atomic.Uint64

// backend gives each backing store a prefix of its own on one etcd.
func backend(srv *etcdtest.Server) storetest.Backend {
	return storetest.Backend{Shared: true, New: func(t testing.TB) storetest.Opener {
		prefix := fmt.Sprintf("/suite-%d/", prefixes.Add(1))
		return func(t testing.TB) store.Store { return openStore(t, srv, prefix) }
	}}
}

func openStore(t testing.TB, srv *etcdtest.Server, prefix string) *etcdstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := etcdstore.Open(ctx, etcdstore.Config{Endpoints: []string{srv.Endpoint}, Prefix: prefix, LeaseTTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDriverSuite runs the driver suite (supervisor/store/storetest) on a
// real etcd.
func TestDriverSuite(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	storetest.Run(t, backend(srv))
}
