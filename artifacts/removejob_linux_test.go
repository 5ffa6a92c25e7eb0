package artifacts

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// RemoveJob removes one job's attempts and directory, follows no link
// planted in it, and leaves every other job alone.
func TestRemoveJob(t *testing.T) {
	r, d1 := newSandbox(t) // job-1/1
	d1.Close()
	out := outside(t)
	for _, ja := range []struct {
		job string
		a   uint32
	}{{"job-1", 2}, {"job-2", 1}} {
		d, err := r.Create(ja.job, ja.a)
		must(t, err)
		_, err = d.Publish("x/y", strings.NewReader("z"), 1)
		must(t, err)
		d.Close()
	}
	must(t, os.Symlink(filepath.Join(out, "secret"), filepath.Join(r.Path(), "job-1", "2", "x", "link")))
	must(t, r.RemoveJob("job-1"))
	if e := entries(t, r.Path()); !slices.Equal(e, []string{"job-2"}) {
		t.Fatalf("root holds %q", e)
	}
	if e := entries(t, out); !slices.Equal(e, []string{"secret"}) {
		t.Fatalf("outside dir changed: %q", e)
	}
	must(t, r.RemoveJob("job-1")) // nothing left: nothing to do
	if err := r.RemoveJob("../x"); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("remove ../x: %v", err)
	}
	// A symlink in a job's place goes, never what it points at.
	must(t, os.Symlink(out, filepath.Join(r.Path(), "job-9")))
	must(t, r.RemoveJob("job-9"))
	if e := entries(t, out); !slices.Equal(e, []string{"secret"}) {
		t.Fatalf("outside dir changed: %q", e)
	}
	if e := entries(t, r.Path()); !slices.Equal(e, []string{"job-2"}) {
		t.Fatalf("root holds %q", e)
	}
}
