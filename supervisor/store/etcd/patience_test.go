package etcd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/storetest"
)

// A read with a patience (a client's request through a daemon) gives up
// once etcd stops answering: ErrUnavailable, naming etcd. Without one it
// waits for etcd until its context ends, as the supervisor's own reads
// do.
func TestReadPatienceGivesUpOnASilentEtcd(t *testing.T) {
	a, _, srv := pair(t)
	mustUpdate(t, a, func(tx store.Tx) error { return storetest.Create(tx, storetest.NewJob("p1")) })
	read := func(ctx context.Context) error {
		return a.View(ctx, func(tx store.Tx) error {
			_, err := tx.Job("p1")
			return err
		})
	}
	if err := read(store.WithReadPatience(context.Background(), time.Minute)); err != nil {
		t.Fatalf("a read while etcd answers: %v", err)
	}
	srv.Stop()
	err := read(store.WithReadPatience(context.Background(), 300*time.Millisecond))
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), srv.Endpoint) || !strings.Contains(err.Error(), "did not answer for 300ms") {
		t.Fatalf("a read with a patience of an etcd that stopped: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := read(ctx); !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "did not answer for") {
		t.Fatalf("a read without a patience: %v", err)
	}
}
