package artifacts

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCreateOpenLayout(t *testing.T) {
	base := t.TempDir()
	r, err := OpenRoot(filepath.Join(base, "home", "sandboxes"))
	must(t, err)
	defer r.Close()
	d, err := r.Create("job.A-1_x", 7)
	must(t, err)
	defer d.Close()
	want := filepath.Join(base, "home", "sandboxes", "job.A-1_x", "7")
	if d.Path() != want {
		t.Fatalf("Path() = %q, want %q", d.Path(), want)
	}
	for _, p := range []string{r.Path(), filepath.Dir(want), want} {
		st, err := os.Lstat(p)
		must(t, err)
		if !st.IsDir() || st.Mode().Perm() != 0o700 {
			t.Fatalf("%s: mode %v, want a 0700 directory", p, st.Mode())
		}
	}
	if _, err := r.Create("job.A-1_x", 7); !errors.Is(err, ErrExists) {
		t.Fatalf("Create of an existing attempt: %v, want ErrExists", err)
	}
	d8, err := r.Create("job.A-1_x", 8)
	must(t, err)
	d8.Close()

	_, err = d.Publish("a", strings.NewReader("x"), 1)
	must(t, err)
	o, err := r.Open("job.A-1_x", 7)
	must(t, err)
	defer o.Close()
	if got, err := o.ReadFile("a", 1); err != nil || string(got) != "x" {
		t.Fatalf("ReadFile through Open = %q, %v", got, err)
	}
	if _, err := r.Open("job.A-1_x", 9); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open of a missing attempt: %v, want ErrNotFound", err)
	}
	if _, err := r.Open("nojob", 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open of a missing job: %v, want ErrNotFound", err)
	}
	for _, bad := range []string{"", ".hidden", "..", "a/b", "../x", "a b", strings.Repeat("j", 129)} {
		if _, err := r.Create(bad, 1); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("Create(%q): %v, want ErrUnsafePath", bad, err)
		}
		if _, err := r.Open(bad, 1); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("Open(%q): %v, want ErrUnsafePath", bad, err)
		}
	}
}

func TestOpenRootRefusesSymlink(t *testing.T) {
	base := t.TempDir()
	must(t, os.Symlink(t.TempDir(), filepath.Join(base, "link")))
	if _, err := OpenRoot(filepath.Join(base, "link")); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("OpenRoot of a symlink: %v, want ErrUnsafePath", err)
	}
}

func TestSymlinkedSandboxRefused(t *testing.T) {
	r, _ := newSandbox(t)
	out := outside(t)
	must(t, os.Mkdir(filepath.Join(out, "1"), 0o700))
	// A symlink in a job's place.
	must(t, os.Symlink(out, filepath.Join(r.Path(), "evil")))
	if _, err := r.Open("evil", 1); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("Open through a symlinked job dir: %v, want ErrUnsafePath", err)
	}
	if _, err := r.Create("evil", 2); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("Create through a symlinked job dir: %v, want ErrUnsafePath", err)
	}
	// A symlink in an attempt's place.
	must(t, os.Symlink(filepath.Join(out, "1"), filepath.Join(r.Path(), "job-1", "2")))
	if _, err := r.Open("job-1", 2); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("Open of a symlinked attempt dir: %v, want ErrUnsafePath", err)
	}
	if _, err := r.Create("job-1", 2); !errors.Is(err, ErrExists) {
		t.Fatalf("Create over a symlinked attempt dir: %v, want ErrExists", err)
	}
	if e := entries(t, filepath.Join(out, "1")); len(e) != 0 {
		t.Fatalf("outside dir now holds %q", e)
	}
}

// Once open, a Dir keeps writing to and reading from its own directory even
// if the path to it is swapped for a symlink to somewhere else.
func TestSwappedPathComponent(t *testing.T) {
	r, d := newSandbox(t)
	out := outside(t)
	jobPath := filepath.Join(r.Path(), "job-1")
	must(t, os.Rename(jobPath, jobPath+"-moved"))
	must(t, os.Mkdir(filepath.Join(out, "1"), 0o700))
	must(t, os.Symlink(out, jobPath))

	_, err := d.Publish("cert", strings.NewReader("real"), 10)
	must(t, err)
	if e := entries(t, filepath.Join(out, "1")); len(e) != 0 {
		t.Fatalf("write was redirected outside: %q", e)
	}
	if got, err := os.ReadFile(filepath.Join(jobPath+"-moved", "1", "cert")); err != nil || string(got) != "real" {
		t.Fatalf("artifact in the real dir = %q, %v", got, err)
	}
	mustWrite(t, filepath.Join(out, "1", "decoy"), []byte("decoy"))
	if _, err := d.ReadFile("decoy", 10); !errors.Is(err, ErrNotFound) {
		t.Fatalf("read was redirected outside: %v", err)
	}
}

func TestDirRemove(t *testing.T) {
	r, d := newSandbox(t)
	out := outside(t)
	p := d.Path()
	must(t, os.MkdirAll(filepath.Join(p, "a", "b", "c"), 0o700))
	mustWrite(t, filepath.Join(p, "a", "b", "c", "f"), []byte("x"))
	must(t, os.Symlink(out, filepath.Join(p, "a", "dirlink")))
	must(t, os.Symlink(filepath.Join(out, "secret"), filepath.Join(p, "filelink")))
	must(t, unix.Mkfifo(filepath.Join(p, "fifo"), 0o600))
	for i := range 2500 { // more than one batch of names
		mustWrite(t, filepath.Join(p, "many-"+attemptName(uint32(i))), nil)
	}
	other, err := r.Create("job-1", 2)
	must(t, err)

	must(t, d.Remove())
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Fatalf("sandbox still there: %v", err)
	}
	if e := entries(t, out); !slices.Equal(e, []string{"secret"}) {
		t.Fatalf("outside dir changed: %q", e)
	}
	if e := entries(t, filepath.Join(r.Path(), "job-1")); !slices.Equal(e, []string{"2"}) {
		t.Fatalf("job dir holds %q, want the other attempt only", e)
	}
	if err := d.Remove(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Remove: %v, want ErrClosed", err)
	}
	must(t, other.Remove())
	if e := entries(t, r.Path()); len(e) != 0 {
		t.Fatalf("root holds %q after the last attempt went", e)
	}
}

// A crash between writing a temp file and renaming it leaves the temp file:
// it is never visible under a final name, and start-up cleanup removes it.
func TestCrashLeftoverTempFile(t *testing.T) {
	r, d := newSandbox(t)
	w, err := d.Create("cert", 100)
	must(t, err)
	w.Write([]byte("half a cert"))
	// Simulated crash: the process is gone without Commit or Abort; its
	// descriptors are closed by the kernel.
	w.f.Close()
	unix.Close(w.parent)
	tmps := entries(t, d.Path())
	if len(tmps) != 1 || !strings.HasPrefix(tmps[0], tmpPrefix) {
		t.Fatalf("sandbox holds %q, want one temp file", tmps)
	}
	if _, err := d.ReadFile("cert", 100); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ReadFile of the final name: %v, want ErrNotFound", err)
	}
	if _, err := d.ReadFile(tmps[0], 100); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("ReadFile of the temp name: %v, want ErrUnsafePath", err)
	}
	d.Close()

	// Next boot.
	must(t, r.RemoveAll(nil))
	if e := entries(t, r.Path()); len(e) != 0 {
		t.Fatalf("root holds %q after cleanup", e)
	}
}

// A crash in the middle of a publish into a sandbox that is kept (an
// accepted certificate beside it, or a job's evidence) leaves its temp
// file: the start removes it, at any depth, and keeps the rest.
func TestPruneRemovesTempFilesOfKeptSandboxes(t *testing.T) {
	r, d := newSandbox(t) // job-1/1
	_, err := d.Publish("x/cert", strings.NewReader("kept"), 4)
	must(t, err)
	for _, name := range []string{"top", "x/nested"} {
		w, err := d.Create(name, 100)
		must(t, err)
		w.Write([]byte("half"))
		w.f.Close() // the process is gone without Commit or Abort
		unix.Close(w.parent)
	}
	d.Close()
	must(t, r.RemoveAll(func(string, uint32) bool { return true }))
	dir := filepath.Join(r.Path(), "job-1", "1")
	if e := entries(t, dir); !slices.Equal(e, []string{"x"}) {
		t.Fatalf("kept sandbox holds %q", e)
	}
	if e := entries(t, filepath.Join(dir, "x")); !slices.Equal(e, []string{"cert"}) {
		t.Fatalf("kept sandbox's x holds %q", e)
	}
}

func TestRemoveAllKeep(t *testing.T) {
	r, _ := newSandbox(t) // job-1/1
	out := outside(t)
	for _, ja := range []struct {
		job string
		a   uint32
	}{{"job-1", 2}, {"job-2", 1}, {"job-3", 5}} {
		d, err := r.Create(ja.job, ja.a)
		must(t, err)
		_, err = d.Publish("x/y", strings.NewReader("z"), 1)
		must(t, err)
		d.Close()
	}
	// Debris: a non-canonical attempt, a file in a job dir, a symlink in a
	// job's place, a foreign entry that is not ours.
	must(t, os.Mkdir(filepath.Join(r.Path(), "job-3", "007"), 0o700))
	mustWrite(t, filepath.Join(r.Path(), "job-3", "stray"), nil)
	must(t, os.Symlink(out, filepath.Join(r.Path(), "job-9")))
	must(t, os.Mkdir(filepath.Join(r.Path(), ".foreign"), 0o700))
	must(t, os.Symlink(filepath.Join(out, "secret"), filepath.Join(r.Path(), "job-2", "1", "x", "link")))

	// Listed first, nothing removed: the same sandboxes keep will be
	// asked about.
	var listed []string
	inv, err := r.Scan()
	must(t, err)
	inv.Each(func(job string, a uint32) bool {
		listed = append(listed, job+"/"+attemptName(a))
		return true
	})
	slices.Sort(listed)
	if !slices.Equal(listed, []string{"job-1/1", "job-1/2", "job-2/1", "job-3/5"}) {
		t.Fatalf("listed %q", listed)
	}
	if e := entries(t, filepath.Join(r.Path(), "job-3")); !slices.Equal(e, []string{"007", "5", "stray"}) {
		t.Fatalf("listing changed job-3: %q", e)
	}
	var asked []string
	keep := func(job string, a uint32) bool {
		asked = append(asked, job+"/"+attemptName(a))
		return job == "job-1" && a == 2
	}
	must(t, r.RemoveAll(keep))
	slices.Sort(asked)
	if !slices.Equal(asked, []string{"job-1/1", "job-1/2", "job-2/1", "job-3/5"}) {
		t.Fatalf("keep asked about %q", asked)
	}
	if e := entries(t, r.Path()); !slices.Equal(e, []string{".foreign", "job-1"}) {
		t.Fatalf("root holds %q", e)
	}
	if e := entries(t, filepath.Join(r.Path(), "job-1")); !slices.Equal(e, []string{"2"}) {
		t.Fatalf("job-1 holds %q", e)
	}
	if e := entries(t, out); !slices.Equal(e, []string{"secret"}) {
		t.Fatalf("outside dir changed: %q", e)
	}
	if d, err := r.Open("job-1", 2); err != nil {
		t.Fatalf("kept sandbox: %v", err)
	} else {
		if got, err := d.ReadFile("x/y", 1); err != nil || string(got) != "z" {
			t.Fatalf("kept artifact = %q, %v", got, err)
		}
		d.Close()
	}
}

// A worker sees its sandbox at a fixed path (a bind mount in its jail) and
// opens it by path; what it publishes the supervisor reads through its Root.
func TestOpenDirByPath(t *testing.T) {
	r, d := newSandbox(t)
	mountPoint := filepath.Join(t.TempDir(), "work")
	must(t, os.Symlink(d.Path(), mountPoint))
	if _, err := OpenDir(mountPoint); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("OpenDir of a symlink: %v, want ErrUnsafePath", err)
	}
	if _, err := OpenDir(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("OpenDir of a missing dir: %v, want ErrNotFound", err)
	}
	w, err := OpenDir(d.Path())
	must(t, err)
	if w.Path() != d.Path() {
		t.Fatalf("Path() = %q", w.Path())
	}
	_, err = w.PublishCompressed("cert", []byte("certificate"), 100)
	must(t, err)
	if got, err := d.ReadCompressed("cert", 100, 100); err != nil || string(got) != "certificate" {
		t.Fatalf("supervisor read = %q, %v", got, err)
	}
	must(t, w.Remove())
	if e := entries(t, d.Path()); len(e) != 0 {
		t.Fatalf("sandbox holds %q after Remove of the path-opened Dir", e)
	}
	if _, err := os.Stat(filepath.Join(r.Path(), "job-1", "1")); err != nil {
		t.Fatalf("Remove of a path-opened Dir removed the directory itself: %v", err)
	}
	if err := w.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Close after Remove: %v, want ErrClosed", err)
	}
}
