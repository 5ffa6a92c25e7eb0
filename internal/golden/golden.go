// Package golden keeps the golden JSON files of the API's types: a
// value's indented JSON compared with its file in testdata, so that a
// renamed or retyped field shows as a diff a reviewer reads.
package golden

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// JSON compares v's indented JSON (with a final newline) with the file
// at path, or writes the file when update is set. hint tells the reader
// of a failure what a change means and how to accept it.
func JSON(t testing.TB, path string, v any, update bool, hint string) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatalf("marshal for %s: %v", path, err)
	}
	got = append(got, '\n')
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (%s)", err, hint)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: the JSON changed (%s)\ngot:\n%s\nwant:\n%s", path, hint, got, want)
	}
}
