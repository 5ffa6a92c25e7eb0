package fsync

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
)

func TestDir(t *testing.T) {
	if err := Dir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	if err := Dir(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing directory: %v", err)
	}
}
