package artifacts

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// newSandbox returns a fresh root and the sandbox of attempt 1 of job-1.
func newSandbox(t *testing.T) (*Root, *Dir) {
	t.Helper()
	r, err := OpenRoot(filepath.Join(t.TempDir(), "sandboxes"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.Create("job-1", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Close()
		r.Close()
	})
	return r, d
}

// outside makes a directory next to (not below) the sandboxes with a file
// "secret" in it, as a target for planted links.
func outside(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func mustWrite(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// entries lists a directory, sorted.
func entries(t *testing.T, path string) []string {
	t.Helper()
	des, err := os.ReadDir(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	slices.Sort(names)
	return names
}

// resolvers runs f once with openat2 and once with the fallback walk, the
// latter by making openat2 report ENOSYS the way an old kernel does, so
// that the detection is exercised too.
func resolvers(t *testing.T, f func(t *testing.T)) {
	t.Run("openat2", func(t *testing.T) {
		openat2Missing.Store(false)
		t.Cleanup(func() { openat2Missing.Store(false) })
		f(t)
		if openat2Missing.Load() {
			t.Log("this kernel has no openat2; the fallback ran instead")
		}
	})
	t.Run("fallback", func(t *testing.T) {
		calls := 0
		openat2 = func(int, string, *unix.OpenHow) (int, error) {
			calls++
			return -1, unix.ENOSYS
		}
		openat2Missing.Store(false)
		t.Cleanup(func() {
			openat2 = unix.Openat2
			openat2Missing.Store(false)
		})
		f(t)
		if calls > 1 {
			t.Errorf("openat2 tried %d times after reporting ENOSYS", calls)
		}
		if calls == 1 && !openat2Missing.Load() {
			t.Error("ENOSYS from openat2 did not switch to the fallback")
		}
	})
}
