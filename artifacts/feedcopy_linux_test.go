package artifacts

import (
	"bytes"
	"crypto/rand"
	"io"
	"testing"
)

// closeCounter is a reader that counts its Close calls.
type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// A feed copy delivers its source exactly and closes it; Stop returns
// whether the reader never came or left with the pipe full, and may be
// called again. Fails before feedcopy_linux.go (no StartFeed).
func TestStartFeed(t *testing.T) {
	want := make([]byte, 5<<20+3)
	rand.Read(want)

	_, d := newSandbox(t)
	src := &closeCounter{Reader: bytes.NewReader(want)}
	c, err := d.StartFeed("certificate.feed", src)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFeed(t, d, "certificate.feed"); !bytes.Equal(got, want) {
		t.Fatalf("read %d of %d bytes", len(got), len(want))
	}
	c.Stop()
	if src.closed != 1 {
		t.Fatalf("source closed %d times, want 1", src.closed)
	}

	// Never opened.
	_, d = newSandbox(t)
	src = &closeCounter{Reader: bytes.NewReader(want)}
	if c, err = d.StartFeed("certificate.feed", src); err != nil {
		t.Fatal(err)
	}
	c.Stop()
	if src.closed != 1 {
		t.Fatalf("unopened: source closed %d times, want 1", src.closed)
	}

	// Opened, one read, then left with the pipe full and the reader
	// still open: the copy waits on the pipe until Stop.
	_, d = newSandbox(t)
	if c, err = d.StartFeed("certificate.feed", &closeCounter{Reader: bytes.NewReader(want)}); err != nil {
		t.Fatal(err)
	}
	in, err := d.OpenFeedReader("certificate.feed", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if _, err := io.ReadFull(in, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	c.Stop()
	c.Stop() // again: nothing more

	// The name taken: no copy starts.
	if _, err := d.StartFeed("certificate.feed", &closeCounter{Reader: bytes.NewReader(want)}); err == nil {
		t.Fatal("a second feed under a taken name started")
	}
}
