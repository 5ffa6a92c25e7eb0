package protocol

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestReadProgram(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	formula := write("add.nox", "[2 [[0 3] [0 5]]]")
	upper := write("ADD.NOX", "[2 [[0 3] [0 5]]]")
	wrapped, err := WrapNox("add.nox", []byte("[2 [[0 3] [0 5]]]"))
	if err != nil {
		t.Fatal(err)
	}
	bundle := write("add.json", string(wrapped))

	got, err := ReadProgram(formula)
	if err != nil || !bytes.Equal(got, wrapped) {
		t.Fatalf("a .nox file: %s, %v; want the wrapped formula %s", got, err, wrapped)
	}
	if got, err := ReadProgram(bundle); err != nil || !bytes.Equal(got, wrapped) {
		t.Fatalf("a .json file is taken as it is: %s, %v", got, err)
	}
	if _, err := ReadProgram(upper); err != nil {
		t.Fatalf("the extension's case does not matter: %v", err)
	}
	for _, name := range []string{"add.txt", "proof.cnxt.zst", "add", "inputs.jsonl"} {
		p := write(name, "[2 [[0 3] [0 5]]]")
		_, err := ReadProgram(p)
		if e := AsError(err); err == nil || e.Code != CodeInvalidJob || !bytes.Contains([]byte(e.Message), []byte("(.nox)")) {
			t.Errorf("%s: %v, want invalid_job naming the two kinds", name, err)
		}
	}
	// Refused by name, before the file is opened: one that does not exist
	// says what INPUT may be, not that it is missing.
	if _, err := ReadProgram(filepath.Join(dir, "missing.txt")); err == nil || !bytes.Contains([]byte(err.Error()), []byte("must be")) {
		t.Errorf("a missing .txt: %v", err)
	}
	if _, err := ReadProgram(filepath.Join(dir, "missing.nox")); err == nil || !bytes.Contains([]byte(err.Error()), []byte("does not exist")) {
		t.Errorf("a missing .nox: %v", err)
	}
}
