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

// A writer that opens, writes and closes between the reader's empty read
// and its look for the writer's end (a short certificate, a reader slow
// to be scheduled) loses nothing: the reader sees the pipe's end only
// after the bytes in it. Before, it took the end for the end of the
// stream and the bytes were dropped.
func TestStreamWriterComesAndGoesBetweenReadAndPoll(t *testing.T) {
	_, d := newSandbox(t)
	in, err := d.MakeStream("s")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var came bool
	in.poll = func(fds []unix.PollFd, timeout int) (int, error) {
		if !came {
			came = true
			out, err := d.OpenStream("s")
			if err != nil {
				return 0, err
			}
			out.Write([]byte("certificate"))
			out.Close()
		}
		return unix.Poll(fds, timeout)
	}
	b, err := io.ReadAll(in)
	if err != nil || string(b) != "certificate" || !came {
		t.Fatalf("read %q, %v (writer came: %v); want the writer's bytes", b, err, came)
	}
}

// A signal that interrupts the reader's poll (the supervisor gets SIGCHLD
// for every worker and the runtime's SIGURG) is not the stream's failure:
// the reader goes on waiting for its writer. Before, the read failed with
// EINTR, the supervisor closed the stream before its worker opened it,
// and the worker's open failed with ENXIO: a prove through the daemon
// ended io_error "publishing the artifact failed: no such device or
// address" (integration TestRunThroughTheDaemon, once in a CI run).
func TestStreamPollInterruptedBySignal(t *testing.T) {
	_, d := newSandbox(t)
	in, err := d.MakeStream("s")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var interrupted int
	waiting := make(chan struct{}) // the reader found no writer yet
	in.poll = func(fds []unix.PollFd, timeout int) (int, error) {
		if interrupted < 3 {
			if interrupted++; interrupted == 3 {
				defer close(waiting)
			}
			return -1, unix.EINTR
		}
		return unix.Poll(fds, timeout)
	}
	type read struct {
		b   []byte
		err error
	}
	done := make(chan read, 1)
	go func() {
		b, err := io.ReadAll(in)
		done <- read{b, err}
	}()
	select {
	case <-waiting:
	case r := <-done:
		t.Fatalf("the reader ended before any writer came: %q, %v", r.b, r.err)
	}
	out, err := d.OpenStream("s") // ENXIO once the reader gave up
	if err != nil {
		t.Fatal(err)
	}
	out.Write([]byte("certificate"))
	out.Close()
	if r := <-done; r.err != nil || string(r.b) != "certificate" {
		t.Fatalf("read %q, %v; want the writer's bytes", r.b, r.err)
	}
}
