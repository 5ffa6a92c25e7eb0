package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// byteBudget is the memory that request bodies may hold at once beyond
// each request's own allowance. Bodies draw on it as they grow, so a
// client trickling a large body holds only what it has sent.
type byteBudget struct {
	mu      sync.Mutex
	free    int64
	changed chan struct{} // closed and replaced on every release
}

func newByteBudget(n int64) *byteBudget {
	return &byteBudget{free: n, changed: make(chan struct{})}
}

// acquire takes n bytes, waiting until they are free or ctx ends.
func (b *byteBudget) acquire(ctx context.Context, n int64) error {
	for {
		b.mu.Lock()
		if b.free >= n {
			b.free -= n
			b.mu.Unlock()
			return nil
		}
		ch := b.changed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (b *byteBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.free += n
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// errBodyTooLarge: the body exceeds the route's bound.
var errBodyTooLarge = errors.New("request body too large")

// readBody reads the request's body, at most limit bytes, within the
// body timeout and the shared budget. A body beyond the allowance takes
// what it may need from the budget in one step (its declared length, or
// the limit when it declared none) before it is read: a request never
// holds part of the budget while it waits for more, so requests cannot
// starve each other into their timeouts. The caller calls release once it
// is done with the bytes and with what it built of them.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, limit int64) (body []byte, release func(), err error) {
	release = func() {}
	if r.ContentLength > limit {
		return nil, release, errBodyTooLarge
	}
	// The connection's read deadline bounds a client that stops sending.
	// A wait for budget is the daemon's doing, not the client's: it is
	// bounded on its own (twice the body timeout: long enough to outlast
	// one body that holds the budget until its own timeout), and the
	// client gets a whole body timeout for its bytes once it has the
	// budget.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
	ctx, cancel := context.WithTimeout(r.Context(), 2*s.cfg.BodyTimeout)
	defer cancel()
	var held int64
	charge := func(size int64) error {
		if need := size - BodyAllowance; need > 0 {
			if err := s.budget.acquire(ctx, need); err != nil {
				return err
			}
			held = need
			release = func() { s.budget.release(held) }
			_ = rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
		}
		return nil
	}
	fail := func(err error) ([]byte, func(), error) {
		release()
		return nil, func() {}, err
	}
	// The buffer grows with what arrives (a client trickling a large
	// body holds little memory, if budget), up to the declared length or,
	// without one, one byte past the limit to see an excess. Past the
	// allowance a declared length, whose share of the budget the request
	// holds, is taken at once: doubling up to it allocated twice to three
	// times the body (107 MiB for a 43 MiB submission), which the
	// daemon's GOGC=400 keeps around.
	size := limit + 1
	if r.ContentLength >= 0 {
		size = r.ContentLength
		if err := charge(size); err != nil {
			return fail(err)
		}
	}
	buf := make([]byte, 0, min(size, 4<<10))
	src := io.LimitReader(r.Body, size)
	for {
		if len(buf) == cap(buf) && int64(len(buf)) < size {
			next := min(2*int64(cap(buf)), size)
			if next > BodyAllowance && r.ContentLength >= 0 {
				next = size
			}
			if next > BodyAllowance && held == 0 {
				if err := charge(size); err != nil {
					return fail(err)
				}
			}
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			buf = grown
		}
		n, rerr := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return fail(errBodyTooLarge)
		}
		if rerr == io.EOF {
			if r.ContentLength >= 0 && int64(len(buf)) != r.ContentLength {
				return fail(io.ErrUnexpectedEOF)
			}
			return buf, release, nil
		}
		if rerr != nil {
			return fail(rerr)
		}
	}
}

// bodyError is the answer to a body that could not be read.
func bodyError(err error, limit int64) error {
	switch {
	case errors.Is(err, errBodyTooLarge):
		return protocol.Errorf(protocol.CodeInvalidJob, "request body exceeds %d bytes", limit)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return protocol.Errorf(protocol.CodeBusy, "request bodies in flight exceed the daemon's memory budget; try again")
	}
	return protocol.Errorf(protocol.CodeInvalidJob, "reading the request body failed (sent too slowly, or cut short)")
}

// noBody refuses a body on a route that takes none: a request means what
// its line says, nothing is ignored.
func (s *Server) noBody(w http.ResponseWriter, r *http.Request) error {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
	var one [1]byte
	n, _ := io.ReadFull(r.Body, one[:])
	if n > 0 {
		return protocol.Errorf(protocol.CodeInvalidJob, "%s %s takes no request body", methodOf(r), routeOf(r))
	}
	return nil
}
