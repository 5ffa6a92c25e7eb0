package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// endless is doubling.nox on a large n: about 2^(n+1) calls within a
// recursion depth of 3n, so it runs "forever" inside the depth limit.
func endless(t testing.TB, op protocol.Operation) []byte {
	return newJob(t, op, example(t, "doubling.nox"), []uint64{200}, field.P-1).bytes(t)
}

func TestCancelRun(t *testing.T) {
	w := newWorker(t, Config{})
	for _, op := range []protocol.Operation{protocol.OpExecute, protocol.OpProve} {
		dir := t.TempDir()
		cause := protocol.Errorf(protocol.CodeCancelled, "cancelled: by the test")
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(50*time.Millisecond, func() { cancel(cause) })
		start := time.Now()
		_, err := w.Run(ctx, protocol.RunRequest{JobSpec: endless(t, op), Attempt: 1, WorkDir: dir})
		wantCode(t, err, protocol.CodeCancelled, "by the test")
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("%s: cancellation took %v", op, d)
		}
		if names := dirNames(t, dir); len(names) != 0 {
			t.Fatalf("%s left %v", op, names)
		}
	}
	// A plain cancellation and a deadline.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := runSpecCtx(ctx, t, w, endless(t, protocol.OpExecute))
	wantCode(t, err, protocol.CodeCancelled, "")
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, _, err = runSpecCtx(ctx, t, w, endless(t, protocol.OpExecute))
	wantCode(t, err, protocol.CodeDeadlineExceeded, "")
}

func runSpecCtx(ctx context.Context, t testing.TB, w *Worker, spec []byte) (protocol.Result, string, error) {
	dir := t.TempDir()
	res, err := w.Run(ctx, protocol.RunRequest{JobSpec: spec, Attempt: 1, WorkDir: dir})
	return res, dir, err
}

func TestShutdown(t *testing.T) {
	w := newWorker(t, Config{})
	errc := make(chan error, 1)
	go func() {
		_, _, err := runSpec(t, w, endless(t, protocol.OpExecute))
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// The run ends with the shutdown's cause (or, had it not started yet,
	// is refused with it).
	select {
	case err := <-errc:
		wantCode(t, err, protocol.CodeCancelled, "shutting down")
	case <-time.After(5 * time.Second):
		t.Fatal("the run outlived Shutdown")
	}
	_, _, err := runSpec(t, w, newJob(t, protocol.OpExecute, addNox, []uint64{1, 2}, 10).bytes(t))
	if !errors.Is(err, protocol.ErrCancelled) {
		t.Fatalf("run after shutdown: %v", err)
	}
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}
