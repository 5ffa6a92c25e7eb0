package artifacts

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestReadRefusals(t *testing.T) {
	resolvers(t, testReadRefusals)
}

func testReadRefusals(t *testing.T) {
	_, d := newSandbox(t)
	out := outside(t)
	p := d.Path()
	mustWrite(t, filepath.Join(p, "ok"), []byte("content"))
	must(t, os.Mkdir(filepath.Join(p, "sub"), 0o700))
	mustWrite(t, filepath.Join(p, "sub", "inner"), []byte("inner content"))
	must(t, os.Symlink(filepath.Join(out, "secret"), filepath.Join(p, "link-out")))
	must(t, os.Symlink("ok", filepath.Join(p, "link-in")))
	must(t, os.Symlink(out, filepath.Join(p, "dirlink-out")))
	must(t, os.Symlink("sub", filepath.Join(p, "dirlink-in")))
	must(t, os.Symlink("/proc/self/root/etc/hostname", filepath.Join(p, "magic")))
	must(t, unix.Mkfifo(filepath.Join(p, "fifo"), 0o600))
	mustWrite(t, filepath.Join(p, "big"), make([]byte, 101))
	mustWrite(t, filepath.Join(p, "linked"), []byte("two names"))
	must(t, os.Link(filepath.Join(p, "linked"), filepath.Join(p, "sub", "linked2")))
	hasDev := unix.Mknod(filepath.Join(p, "null"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))) == nil
	sock, err := net.Listen("unix", filepath.Join(p, "sock"))
	must(t, err)
	defer sock.Close()

	cases := []struct {
		name string
		want error // nil: read "content"-like data successfully
		data string
	}{
		{"ok", nil, "content"},
		{"sub/inner", nil, "inner content"},
		{"link-out", ErrUnsafePath, ""},
		{"link-in", ErrUnsafePath, ""},
		{"dirlink-out/secret", ErrUnsafePath, ""},
		{"dirlink-in/inner", ErrUnsafePath, ""},
		{"magic", ErrUnsafePath, ""},
		{"../1/ok", ErrUnsafePath, ""},
		{"..", ErrUnsafePath, ""},
		{"sub/../ok", ErrUnsafePath, ""},
		{"./ok", ErrUnsafePath, ""},
		{"/etc/passwd", ErrUnsafePath, ""},
		{filepath.Join(p, "ok"), ErrUnsafePath, ""},
		{"sub//inner", ErrUnsafePath, ""},
		{"ok/", ErrUnsafePath, ""},
		{"", ErrUnsafePath, ""},
		{"fifo", ErrNotRegular, ""},
		{"sub", ErrNotRegular, ""},
		{"sock", ErrNotRegular, ""},
		{"big", ErrTooLarge, ""},
		{"linked", ErrUnsafePath, ""},
		{"missing", ErrNotFound, ""},
		{"nodir/file", ErrNotFound, ""},
		{"ok/file", ErrNotFound, ""},
	}
	if hasDev {
		cases = append(cases, struct {
			name string
			want error
			data string
		}{"null", ErrNotRegular, ""})
	}
	for _, c := range cases {
		done := make(chan struct{})
		var got []byte
		var err error
		go func() {
			defer close(done)
			got, err = d.ReadFile(c.name, 100)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadFile(%q) blocked", c.name)
		}
		if c.want == nil {
			if err != nil || string(got) != c.data {
				t.Errorf("ReadFile(%q) = %q, %v; want %q", c.name, got, err, c.data)
			}
			continue
		}
		if !errors.Is(err, c.want) {
			t.Errorf("ReadFile(%q) error = %v; want %v", c.name, err, c.want)
		}
		if bytes.Contains(got, []byte("SECRET")) {
			t.Errorf("ReadFile(%q) leaked the outside file", c.name)
		}
	}
}

// A mount below the sandbox (something only an operator or a bug could
// make) is refused by both resolvers, like RESOLVE_NO_XDEV. The mount is
// made in a private mount namespace of a locked thread that dies with the
// test, so a killed test leaves no mount behind.
func TestReadRefusesMountCrossing(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		r, d := newSandbox(t)
		mnt := filepath.Join(d.Path(), "mnt")
		must(t, os.Mkdir(mnt, 0o700))
		type result struct {
			skip string
			err  error
		}
		res := make(chan result, 1)
		go func() {
			// Never unlocked: the thread, with its namespace, exits
			// with this goroutine.
			runtime.LockOSThread()
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				res <- result{skip: "unshare(CLONE_NEWNS): " + err.Error()}
				return
			}
			if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
				res <- result{skip: "make mounts private: " + err.Error()}
				return
			}
			if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
				res <- result{skip: "mount tmpfs: " + err.Error()}
				return
			}
			if err := os.WriteFile(filepath.Join(mnt, "f"), []byte("x"), 0o600); err != nil {
				res <- result{err: err}
				return
			}
			// Descriptors opened before unshare see the old namespace's
			// mounts; open the sandbox again from within the new one.
			r2, err := OpenRoot(r.Path())
			if err != nil {
				res <- result{err: err}
				return
			}
			defer r2.Close()
			d2, err := r2.Open("job-1", 1)
			if err != nil {
				res <- result{err: err}
				return
			}
			defer d2.Close()
			_, err = d2.ReadFile("mnt/f", 10)
			res <- result{err: err}
		}()
		got := <-res
		if got.skip != "" {
			t.Skipf("cannot mount here: %s", got.skip)
		}
		if !errors.Is(got.err, ErrUnsafePath) {
			t.Fatalf("ReadFile across a mount: %v, want ErrUnsafePath", got.err)
		}
	})
}

func TestReaderStopsAtLimitWhenFileGrows(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		_, d := newSandbox(t)
		path := filepath.Join(d.Path(), "growing")
		mustWrite(t, path, bytes.Repeat([]byte("a"), 100))
		r, err := d.OpenFile("growing", 150)
		must(t, err)
		defer r.Close()
		if r.Size() != 100 {
			t.Fatalf("Size() = %d, want 100", r.Size())
		}
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		must(t, err)
		f.Write(bytes.Repeat([]byte("b"), 100))
		f.Close()
		got, err := io.ReadAll(r)
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("reading a file grown past the limit: %v, want ErrTooLarge", err)
		}
		if len(got) != 150 {
			t.Fatalf("read %d bytes before the error, want exactly the limit 150", len(got))
		}
		if n, err := r.Read(make([]byte, 10)); n != 0 || !errors.Is(err, ErrTooLarge) {
			t.Fatalf("Read after crossing = %d, %v; want 0, ErrTooLarge", n, err)
		}
	})
}

func TestReaderGrowthWithinLimit(t *testing.T) {
	_, d := newSandbox(t)
	path := filepath.Join(d.Path(), "growing")
	mustWrite(t, path, []byte("abc"))
	r, err := d.OpenFile("growing", 6)
	must(t, err)
	defer r.Close()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	f.Write([]byte("def"))
	f.Close()
	got, err := io.ReadAll(r)
	if err != nil || string(got) != "abcdef" {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}
}

func TestReadFileExactLimitAndEmpty(t *testing.T) {
	_, d := newSandbox(t)
	mustWrite(t, filepath.Join(d.Path(), "exact"), []byte("12345"))
	mustWrite(t, filepath.Join(d.Path(), "empty"), nil)
	if got, err := d.ReadFile("exact", 5); err != nil || string(got) != "12345" {
		t.Fatalf("ReadFile at exact limit = %q, %v", got, err)
	}
	if _, err := d.ReadFile("exact", 4); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadFile below size: %v, want ErrTooLarge", err)
	}
	if got, err := d.ReadFile("empty", 0); err != nil || len(got) != 0 {
		t.Fatalf("ReadFile of an empty file = %q, %v", got, err)
	}
	if _, err := d.ReadFile("exact", -1); err == nil {
		t.Fatal("negative limit accepted")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// The kernel side refuses escapes on its own, without the name checks
// that normally run first.
func TestOpenBeneathWithoutNameChecks(t *testing.T) {
	resolvers(t, func(t *testing.T) {
		_, d := newSandbox(t)
		fd, release, err := d.acquire("test")
		must(t, err)
		defer release()
		for _, comps := range [][]string{{"..", "1"}, {".."}, {"..", "..", "job-1", "1"}, {"/etc/passwd"}, {"", "etc"}} {
			got, err := openBeneath(fd, comps, unix.O_RDONLY, "test")
			if err == nil {
				unix.Close(got)
			}
			if !errors.Is(err, ErrUnsafePath) {
				t.Errorf("openBeneath(%q) error = %v, want ErrUnsafePath", comps, err)
			}
		}
	})
}
