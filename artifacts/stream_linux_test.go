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

	"golang.org/x/sys/unix"
)

// A stream delivers what its writer wrote and its end only once the
// writer closed it: a Read started before any writer opened the FIFO
// waits instead of taking the empty FIFO for the end (which a plain read
// of a FIFO returns then), and the bytes published through a Writer are
// exactly the writer's.
func TestStreamCarriesTheWriterBytes(t *testing.T) {
	_, d := newSandbox(t)
	in, err := d.MakeStream("artifact.stream")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	want := make([]byte, 3<<20+17) // many pipe buffers
	rand.Read(want)
	type got struct {
		info Info
		err  error
	}
	res := make(chan got, 1)
	go func() {
		// Started before the writer exists.
		w, err := d.Create("cert.zst", int64(len(want)))
		if err != nil {
			res <- got{err: err}
			return
		}
		if _, err := w.ReadFrom(in); err != nil {
			res <- got{err: err}
			return
		}
		info, err := w.Commit()
		res <- got{info, err}
	}()
	out, err := d.OpenStream("artifact.stream")
	if err != nil {
		t.Fatal(err)
	}
	for p := want; len(p) > 0; {
		n := min(len(p), 100_000)
		if _, err := out.Write(p[:n]); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
	}
	out.Close()
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	b, err := d.ReadFile("cert.zst", int64(len(want)))
	if err != nil || !bytes.Equal(b, want) || r.info.Size != int64(len(want)) {
		t.Fatalf("published %d bytes (%v), info %+v; want the writer's %d", len(b), err, r.info, len(want))
	}
}

// The reader's limit holds whatever the writer does: the write past it
// makes the reader's Writer fail with ErrTooLarge and leave nothing, and
// once the reader closes, the writer's next write fails (EPIPE) instead
// of blocking.
func TestStreamLimitStopsTheWriter(t *testing.T) {
	_, d := newSandbox(t)
	in, err := d.MakeStream("artifact.stream")
	if err != nil {
		t.Fatal(err)
	}
	const limit = 1 << 20
	done := make(chan error, 1)
	go func() {
		w, err := d.Create("cert.zst", limit)
		if err == nil {
			_, err = w.ReadFrom(in)
		}
		in.Close()
		done <- err
	}()
	out, err := d.OpenStream("artifact.stream")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	buf := make([]byte, 64<<10)
	var werr error
	written := 0
	for written < 64<<20 && werr == nil { // a writer that never stops
		var n int
		n, werr = out.Write(buf)
		written += n
	}
	if err := <-done; !errors.Is(err, ErrTooLarge) {
		t.Fatalf("reader: %v, want ErrTooLarge", err)
	}
	if !errors.Is(werr, syscall.EPIPE) {
		t.Fatalf("writer after %d bytes: %v, want EPIPE", written, werr)
	}
	if names := entries(t, d.Path()); len(names) != 1 || names[0] != "artifact.stream" {
		t.Fatalf("sandbox holds %v, want only the stream's FIFO", names)
	}
}

// A writer that never came and cannot come any more (Drain) is an empty
// stream, not a wait; what a writer left in the pipe before it went is
// still read.
func TestStreamDrain(t *testing.T) {
	_, d := newSandbox(t)
	in, err := d.MakeStream("s")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(in)
		done <- b
	}()
	in.Drain()
	if b := <-done; len(b) != 0 {
		t.Fatalf("read %q from a stream nobody wrote", b)
	}
	in.Close()

	in, err = d.MakeStream("t")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	// Opened and written but never closed: the reader would wait for
	// more; drained, it ends with what is there.
	out, err := d.OpenStream("t")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	out.Write([]byte("partial"))
	in.Drain()
	if b, err := io.ReadAll(in); err != nil || string(b) != "partial" {
		t.Fatalf("drained %q, %v", b, err)
	}
}

// The writer's side opens only a FIFO: no name is ErrNotFound (a worker
// then publishes a file), anything else — a regular file, a symlink to a
// FIFO, a directory — is refused, and a name is one component.
func TestOpenStreamRefusals(t *testing.T) {
	_, d := newSandbox(t)
	if _, err := d.OpenStream("none"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing: %v, want ErrNotFound", err)
	}
	mustWrite(t, filepath.Join(d.Path(), "file"), []byte("x"))
	if _, err := d.OpenStream("file"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("regular file: %v, want ErrNotRegular", err)
	}
	fifo := filepath.Join(outside(t), "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fifo, filepath.Join(d.Path(), "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.OpenStream("link"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("symlink to a FIFO: %v, want ErrNotRegular", err)
	}
	if err := os.Mkdir(filepath.Join(d.Path(), "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := d.OpenStream("dir"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("directory: %v, want ErrNotRegular", err)
	}
	for _, name := range []string{"a/b", "..", ".tmp-x", ""} {
		if _, err := d.OpenStream(name); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("OpenStream(%q): %v, want ErrUnsafePath", name, err)
		}
		if _, err := d.MakeStream(name); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("MakeStream(%q): %v, want ErrUnsafePath", name, err)
		}
	}
	if _, err := d.MakeStream("file"); !errors.Is(err, ErrExists) {
		t.Errorf("MakeStream over a file: %v, want ErrExists", err)
	}
	// A FIFO whose reader is gone is no stream to write to.
	in, err := d.MakeStream("orphan")
	if err != nil {
		t.Fatal(err)
	}
	in.Close()
	if _, err := d.OpenStream("orphan"); err == nil {
		t.Error("opened a stream nobody reads")
	}
}
