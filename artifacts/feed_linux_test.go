package artifacts

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A feed delivers exactly what its writer wrote, and the end once the
// writer closed: a short file written before the reader read a byte, and
// a long one that fills the pipe many times. Fails before feed_linux.go
// (no MakeFeed).
func TestFeedCarriesTheWriterBytes(t *testing.T) {
	for _, size := range []int{17, 3<<20 + 5} {
		_, d := newSandbox(t)
		feed, err := d.MakeFeed("certificate.feed")
		if err != nil {
			t.Fatal(err)
		}
		want := make([]byte, size)
		rand.Read(want)
		done := make(chan error, 1)
		go func() {
			out, err := feed.Open(nil)
			if err != nil {
				done <- err
				return
			}
			_, err = io.Copy(out, bytes.NewReader(want))
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			done <- err
		}()
		if got := readFeed(t, d, "certificate.feed"); !bytes.Equal(got, want) {
			t.Fatalf("size %d: read %d bytes", size, len(got))
		}
		if err := <-done; err != nil {
			t.Fatalf("size %d: writer: %v", size, err)
		}
		feed.Close()
	}
}

// A writer whose reader never comes stops when told, and so does a reader
// whose writer never comes; a writer whose reader left fails its next
// write instead of waiting forever.
func TestFeedWriterStops(t *testing.T) {
	_, d := newSandbox(t)
	feed, err := d.MakeFeed("certificate.feed")
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	stop := make(chan struct{})
	close(stop)
	if _, err := feed.Open(stop); !errors.Is(err, ErrClosed) {
		t.Fatalf("Open without a reader: %v, want ErrClosed", err)
	}
	if _, err := d.OpenFeedReader("certificate.feed", stop); !errors.Is(err, ErrClosed) {
		t.Fatalf("OpenFeedReader without a writer: %v, want ErrClosed", err)
	}
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		out, err := feed.Open(nil)
		ch <- opened{out, err}
	}()
	in, err := d.OpenFeedReader("certificate.feed", nil)
	if err != nil {
		t.Fatal(err)
	}
	o := <-ch
	if o.err != nil {
		t.Fatal(o.err)
	}
	out := o.f
	defer out.Close()
	in.Close()
	if _, err := out.Write(make([]byte, 1<<20)); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("write after the reader left: %v, want EPIPE", err)
	}
}

// The writer writes the FIFO it made, not what the reader put under its
// name afterwards; the reader opens nothing but a FIFO.
func TestFeedIgnoresASwappedEntry(t *testing.T) {
	_, d := newSandbox(t)
	feed, err := d.MakeFeed("certificate.feed")
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	path := filepath.Join(d.Path(), "certificate.feed")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := d.OpenFeedReader("certificate.feed", nil); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("OpenFeedReader of a regular file: %v", err)
	}
	stop := make(chan struct{})
	close(stop)
	if _, err := feed.Open(stop); !errors.Is(err, ErrClosed) {
		t.Fatalf("Open after the swap: %v, want ErrClosed (no reader of the FIFO made)", err)
	}
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Fatal("the feed wrote the file swapped in")
	}
}

// readFeed opens the feed name in d as its reader and reads it to its
// end.
func readFeed(t *testing.T, d *Dir, name string) []byte {
	t.Helper()
	in, err := d.OpenFeedReader(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	got, err := io.ReadAll(in)
	if err != nil {
		t.Fatalf("read the feed %s: %v", name, err)
	}
	return got
}
