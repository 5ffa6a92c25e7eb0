package supervisor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// DefaultReadTimeout bounds how long a read a client's request makes of
// a shared store waits for etcd to answer (Config.ReadTimeout): the etcd
// store waits out an etcd it cannot reach until its context ends, and a
// request's context ends only when its client gives up. So `list`,
// `status`, `result` and `events` through a daemon whose etcd is down
// hung for as long as the client waited; bounded, they answer busy
// (store.ErrUnavailable) once etcd has not answered for the timeout,
// naming etcd. The home's own store answers from its file and is not
// bounded.
const DefaultReadTimeout = 5 * time.Second

// view runs fn in a read transaction of the job store for a client's
// request (what names the read in the error). On a shared store the
// read gives up once etcd has not answered for the read timeout
// (store.WithReadPatience): the answer is then store.ErrUnavailable,
// naming etcd, which the API answers busy. A read whose requests etcd
// keeps answering (a long scan) is not cut short, and ctx's own end (the
// client went, a long poll's bound) is returned as it is.
func (s *Supervisor) view(ctx context.Context, what string, fn func(store.Tx) error) error {
	if s.cluster == nil {
		return s.store.View(ctx, fn)
	}
	err := s.store.View(store.WithReadPatience(ctx, s.cfg.ReadTimeout), fn)
	if err != nil && ctx.Err() == nil && errors.Is(err, store.ErrUnavailable) {
		return fmt.Errorf("%s: %w (the daemon's read timeout; nothing is lost: ask again once etcd answers)", what, err)
	}
	return err
}
