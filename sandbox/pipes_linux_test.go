package sandbox

import (
	"os"
	"testing"
	"time"
)

// A worker that writes without end is read no faster than the pipe's
// rate after its burst: a token bucket lets through at most pipeBurst +
// pipeRate × elapsed bytes, whatever the load (a slower reader reads
// less). Close ends a reader's wait for the rate at once. (Before, the
// supervisor read a worker's output as fast as it came, to discard it.)
func TestPipeReaderBoundsTheRate(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	go func() {
		buf := make([]byte, 64<<10)
		for {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	}()
	p := newPipeReader(r, nil, nil)
	buf := make([]byte, 1<<20)
	start := time.Now()
	total := 0
	for time.Since(start) < time.Second {
		n, err := p.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	elapsed := time.Since(start)
	if bound := pipeBurst + int(pipeRate*elapsed.Seconds()) + 1<<10; total > bound {
		t.Fatalf("read %d bytes in %v, at most %d allowed", total, elapsed, bound)
	}
	t.Logf("read %d bytes in %v", total, elapsed)

	// The next read pays for 256 KiB, a quarter second's wait: Close
	// ends it, and the read after it fails.
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := p.Read(buf); err != nil {
				done <- err
				return
			}
		}
	}()
	time.Sleep(10 * time.Millisecond)
	p.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a reader waiting for the rate was not ended by Close")
	}
}
