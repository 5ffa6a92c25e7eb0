package artifacts

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
)

func TestPublishReadRoundTrip(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		_, d := newSandbox(t)
		data := sample(300 << 10)
		info, err := d.Publish("cert.bin", bytes.NewReader(data), int64(len(data)))
		must(t, err)
		sum := sha256.Sum256(data)
		if info.Name != "cert.bin" || info.Size != int64(len(data)) || info.SHA256 != hex.EncodeToString(sum[:]) {
			t.Fatalf("Info = %+v", info)
		}
		got, err := d.ReadFile("cert.bin", int64(len(data)))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("ReadFile: %v (equal %v)", err, bytes.Equal(got, data))
		}
		st, err := os.Lstat(filepath.Join(d.Path(), "cert.bin"))
		must(t, err)
		if st.Mode() != 0o600 {
			t.Fatalf("published mode %v, want 0600", st.Mode())
		}
		if e := entries(t, d.Path()); !slices.Equal(e, []string{"cert.bin"}) {
			t.Fatalf("sandbox holds %q", e)
		}
	})
}

func TestPublishEmpty(t *testing.T) {
	_, d := newSandbox(t)
	info, err := d.Publish("empty", strings.NewReader(""), 0)
	must(t, err)
	if info.Size != 0 || info.SHA256 != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("Info = %+v", info)
	}
}

func TestPublishOverLimitLeavesNothing(t *testing.T) {
	_, d := newSandbox(t)
	data := make([]byte, 1<<20+1)
	_, err := d.Publish("big", bytes.NewReader(data), 1<<20)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Publish over the limit: %v, want ErrTooLarge", err)
	}
	if e := entries(t, d.Path()); len(e) != 0 {
		t.Fatalf("sandbox holds %q after a refused publish", e)
	}

	// The source is not drained past the limit.
	src := &countingReader{r: io.LimitReader(zeros{}, 100<<20)}
	if _, err := d.Publish("huge", src, 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Publish of an endless source: %v", err)
	}
	if src.n > 1<<20+64<<10 {
		t.Fatalf("read %d bytes of the source for a 1 MiB limit", src.n)
	}

	// Exactly the limit is fine.
	if _, err := d.Publish("exact", bytes.NewReader(data[:1<<20]), 1<<20); err != nil {
		t.Fatalf("Publish at the limit: %v", err)
	}
}

func TestWriterLimitAndSticky(t *testing.T) {
	_, d := newSandbox(t)
	w, err := d.Create("w", 10)
	must(t, err)
	if n, err := w.Write([]byte("123456")); n != 6 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if n, err := w.Write([]byte("78901")); n != 0 || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Write crossing the limit = %d, %v; want 0, ErrTooLarge", n, err)
	}
	if e := entries(t, d.Path()); len(e) != 0 {
		t.Fatalf("temp file left after the crossing write: %q", e)
	}
	if _, err := w.Write([]byte("7")); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Write after failure: %v", err)
	}
	if _, err := w.Commit(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Commit after failure: %v", err)
	}
	w.Abort()
	if _, err := d.ReadFile("w", 100); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ReadFile of an unpublished artifact: %v", err)
	}
}

func TestWriterAbortAndCommitTwice(t *testing.T) {
	_, d := newSandbox(t)
	w, err := d.Create("a", 10)
	must(t, err)
	w.Write([]byte("x"))
	w.Abort()
	w.Abort()
	if e := entries(t, d.Path()); len(e) != 0 {
		t.Fatalf("sandbox holds %q after Abort", e)
	}
	if _, err := w.Commit(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Commit after Abort: %v", err)
	}

	w, err = d.Create("b", 10)
	must(t, err)
	w.Write([]byte("y"))
	_, err = w.Commit()
	must(t, err)
	if _, err := w.Commit(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Commit: %v", err)
	}
	if _, err := w.Write([]byte("z")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Commit: %v", err)
	}
	w.Abort() // no-op: must not remove the published file
	if got, err := d.ReadFile("b", 10); err != nil || string(got) != "y" {
		t.Fatalf("ReadFile after Abort of a committed writer = %q, %v", got, err)
	}
}

func TestPublishSourceErrorLeavesNothing(t *testing.T) {
	_, d := newSandbox(t)
	src := io.MultiReader(strings.NewReader("partial"), iotest.ErrReader(errors.New("source broke")))
	if _, err := d.Publish("p", src, 100); err == nil || !strings.Contains(err.Error(), "source broke") {
		t.Fatalf("Publish with a failing source: %v", err)
	}
	if e := entries(t, d.Path()); len(e) != 0 {
		t.Fatalf("sandbox holds %q", e)
	}
}

func TestPublishNoReplace(t *testing.T) {
	_, d := newSandbox(t)
	_, err := d.Publish("x", strings.NewReader("first"), 100)
	must(t, err)
	if _, err := d.Publish("x", strings.NewReader("second"), 100); !errors.Is(err, ErrExists) {
		t.Fatalf("second Publish: %v, want ErrExists", err)
	}
	if got, _ := d.ReadFile("x", 100); string(got) != "first" {
		t.Fatalf("content after refused overwrite: %q", got)
	}
	if _, err := d.Publish("x", strings.NewReader("second"), 100, Replace()); err != nil {
		t.Fatalf("Publish with Replace: %v", err)
	}
	if got, _ := d.ReadFile("x", 100); string(got) != "second" {
		t.Fatalf("content after Replace: %q", got)
	}

	// The name taken while a writer was busy: Commit decides atomically.
	w, err := d.Create("race", 100)
	must(t, err)
	w.Write([]byte("loser"))
	_, err = d.Publish("race", strings.NewReader("winner"), 100)
	must(t, err)
	if _, err := w.Commit(); !errors.Is(err, ErrExists) {
		t.Fatalf("Commit onto a name taken meanwhile: %v, want ErrExists", err)
	}
	if got, _ := d.ReadFile("race", 100); string(got) != "winner" {
		t.Fatalf("content after lost race: %q", got)
	}
	if e := entries(t, d.Path()); !slices.Equal(e, []string{"race", "x"}) {
		t.Fatalf("sandbox holds %q", e)
	}
}

func TestPublishOntoPlantedSymlink(t *testing.T) {
	_, d := newSandbox(t)
	out := outside(t)
	secret := filepath.Join(out, "secret")
	must(t, os.Symlink(secret, filepath.Join(d.Path(), "cert")))
	if _, err := d.Publish("cert", strings.NewReader("evil"), 100); !errors.Is(err, ErrExists) {
		t.Fatalf("Publish onto a symlink: %v, want ErrExists", err)
	}
	if _, err := d.ReadFile("cert", 100); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("ReadFile of the symlink: %v, want ErrUnsafePath", err)
	}
	if _, err := d.Publish("cert", strings.NewReader("mine"), 100, Replace()); err != nil {
		t.Fatalf("Publish with Replace over a symlink: %v", err)
	}
	if got, err := os.ReadFile(secret); err != nil || string(got) != "SECRET" {
		t.Fatalf("outside file changed: %q, %v", got, err)
	}
	if got, err := d.ReadFile("cert", 100); err != nil || string(got) != "mine" {
		t.Fatalf("ReadFile after replacing the symlink = %q, %v", got, err)
	}
}

func TestPublishSubdirectories(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		_, d := newSandbox(t)
		out := outside(t)
		_, err := d.Publish("logs/run/out.txt", strings.NewReader("hi"), 10)
		must(t, err)
		if got, err := d.ReadFile("logs/run/out.txt", 10); err != nil || string(got) != "hi" {
			t.Fatalf("ReadFile = %q, %v", got, err)
		}
		st, err := os.Stat(filepath.Join(d.Path(), "logs"))
		must(t, err)
		if st.Mode().Perm() != 0o700 {
			t.Fatalf("created parent mode %v", st.Mode())
		}
		must(t, os.Symlink(out, filepath.Join(d.Path(), "esc")))
		if _, err := d.Publish("esc/new", strings.NewReader("x"), 10); !errors.Is(err, ErrUnsafePath) {
			t.Fatalf("Publish through a symlinked parent: %v, want ErrUnsafePath", err)
		}
		if e := entries(t, out); !slices.Equal(e, []string{"secret"}) {
			t.Fatalf("outside dir now holds %q", e)
		}
		mustWrite(t, filepath.Join(d.Path(), "file"), nil)
		if _, err := d.Publish("file/x", strings.NewReader("x"), 10); !errors.Is(err, ErrExists) {
			t.Fatalf("Publish below a regular file: %v, want ErrExists", err)
		}
		for _, bad := range []string{"../x", "/tmp/x", "a/../b", ".hidden", "a/", ""} {
			if _, err := d.Publish(bad, strings.NewReader("x"), 10); !errors.Is(err, ErrUnsafePath) {
				t.Errorf("Publish(%q): %v, want ErrUnsafePath", bad, err)
			}
		}
	})
}

// A reader polling the final name while a large artifact is written and
// committed sees it absent or complete, never partial.
func TestConcurrentReaderNeverSeesPartial(t *testing.T) {
	_, d := newSandbox(t)
	data := sample(8 << 20)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var seenMissing, seenFull atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				done := stop.Load()
				got, err := d.ReadFile("big", int64(len(data)))
				switch {
				case errors.Is(err, ErrNotFound):
					seenMissing.Add(1)
				case err != nil:
					t.Errorf("ReadFile: %v", err)
					return
				case !bytes.Equal(got, data):
					t.Errorf("ReadFile saw %d bytes that are not the artifact", len(got))
					return
				default:
					seenFull.Add(1)
				}
				if done {
					return
				}
			}
		}()
	}
	w, err := d.Create("big", int64(len(data)))
	must(t, err)
	for i := 0; i < len(data); i += 32 << 10 {
		if _, err := w.Write(data[i:min(i+32<<10, len(data))]); err != nil {
			t.Fatal(err)
		}
	}
	_, err = w.Commit()
	must(t, err)
	stop.Store(true)
	wg.Wait()
	if seenFull.Load() == 0 {
		t.Fatal("readers never saw the published artifact")
	}
	t.Logf("polls: %d not found, %d complete", seenMissing.Load(), seenFull.Load())
}

func TestWriterOutlivesClosedDir(t *testing.T) {
	_, d := newSandbox(t)
	w, err := d.Create("late", 10)
	must(t, err)
	path := d.Path()
	must(t, d.Close())
	if _, err := d.Create("x", 10); !errors.Is(err, ErrClosed) {
		t.Fatalf("Create on a closed Dir: %v", err)
	}
	if _, err := d.ReadFile("late", 10); !errors.Is(err, ErrClosed) {
		t.Fatalf("ReadFile on a closed Dir: %v", err)
	}
	w.Write([]byte("ok"))
	_, err = w.Commit()
	must(t, err)
	if got, err := os.ReadFile(filepath.Join(path, "late")); err != nil || string(got) != "ok" {
		t.Fatalf("artifact = %q, %v", got, err)
	}
}

func TestPublishCompressed(t *testing.T) {
	_, d := newSandbox(t)
	data := sample(1 << 20)
	info, err := d.PublishCompressed("cert.zst", data, 1<<20)
	must(t, err)
	if info.Size >= int64(len(data)) {
		t.Fatalf("compressed size %d not below %d", info.Size, len(data))
	}
	got, err := d.ReadCompressed("cert.zst", 1<<20, int64(len(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadCompressed: %v", err)
	}
	if _, err := d.ReadCompressed("cert.zst", 1<<20, int64(len(data)-1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadCompressed below the content size: %v, want ErrTooLarge", err)
	}
	if _, err := d.PublishCompressed("small.zst", randomBytes(4096), 1000); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("PublishCompressed over the limit: %v", err)
	}
	mustWrite(t, filepath.Join(d.Path(), "plain"), []byte("not zstd"))
	if _, err := d.ReadCompressed("plain", 100, 100); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ReadCompressed of plain data: %v, want ErrCorrupt", err)
	}
	if e := entries(t, d.Path()); !slices.Equal(e, []string{"cert.zst", "plain"}) {
		t.Fatalf("sandbox holds %q", e)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func BenchmarkPublish1MiB(b *testing.B) {
	r, err := OpenRoot(filepath.Join(b.TempDir(), "sandboxes"))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	d, err := r.Create("bench", 0)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	data := sample(1 << 20)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := d.Publish("a", bytes.NewReader(data), int64(len(data)), Replace()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadFile1MiB(b *testing.B) {
	r, err := OpenRoot(filepath.Join(b.TempDir(), "sandboxes"))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	d, err := r.Create("bench", 0)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	data := sample(1 << 20)
	if _, err := d.Publish("a", bytes.NewReader(data), int64(len(data))); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := d.ReadFile("a", int64(len(data))); err != nil {
			b.Fatal(err)
		}
	}
}
