package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
)

// TestStoreRestore: store restore refuses while a daemon owns the home
// (exit 4), a file with problems (exit 1, nothing changed), a damaged
// one (exit 6) and the home's own store (exit 2); it puts a backup in
// place keeping the current file aside, and marks the home. Commands on
// the home without a daemon refuse to work on the store until a start
// fenced it (exit 5, naming the restore); the start (a one-shot run
// here) fences it, and store check says so. Before this change there was
// no store restore.
func TestStoreRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long end-to-end run of a daemon")
	}
	home := t.TempDir()
	prog := writeFile(t, t.TempDir(), "add.nox", add)
	if r := cli(t, "--home", home, "run", prog, "--op", "execute", "--input-values", "1,2", "--isolation", "off"); r.code != 0 {
		t.Fatalf("run: %+v", r)
	}
	jsonRun(t, 0, "--home", home, "neuron", "init", "--network", "testnet")
	backup := filepath.Join(t.TempDir(), "b.db")
	if r := cli(t, "--home", home, "store", "backup", backup); r.code != 0 {
		t.Fatalf("store backup: %+v", r)
	}
	if r := cli(t, "store", "check", "--file", backup); r.code != 0 || !strings.Contains(r.stdout, "a backup taken at") {
		t.Fatalf("store check of the backup: %+v", r)
	}
	if r := cli(t, "--home", home, "run", prog, "--op", "execute", "--input-values", "3,4", "--isolation", "off"); r.code != 0 {
		t.Fatalf("run: %+v", r)
	}
	db := supervisor.StorePath(home)
	if r := cli(t, "--home", home, "store", "restore", db); r.code != protocol.ExitUsage {
		t.Fatalf("restore of the store itself: %+v", r)
	}
	damaged := filepath.Join(t.TempDir(), "damaged.db")
	b := mustRead(t, backup)
	b[8] ^= 0xff
	os.WriteFile(damaged, b, 0o600)
	if r := cli(t, "--home", home, "store", "restore", damaged); r.code != 6 {
		t.Fatalf("restore of a damaged file: %+v", r)
	}
	srv := serveBin(t, home)
	if r := cli(t, "--home", home, "store", "restore", backup); r.code != protocol.ExitUnavailable || !strings.Contains(r.stderr, "stop it first") {
		t.Fatalf("restore while a daemon runs: %+v", r)
	}
	srv.Process.Signal(syscall.SIGTERM)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(supervisor.SocketPath(home)); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("serve did not stop")
		}
	}
	before := mustRead(t, db)
	// A file with problems (a job without its spec) is refused.
	broken := filepath.Join(t.TempDir(), "broken.db")
	os.WriteFile(broken, mustRead(t, backup), 0o600)
	db2, err := bbolt.Open(broken, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db2.Update(func(tx *bbolt.Tx) error {
		k, _ := tx.Bucket([]byte("specs")).Cursor().First()
		return tx.Bucket([]byte("specs")).Delete(k)
	}); err != nil {
		t.Fatal(err)
	}
	db2.Close()
	if r := cli(t, "--home", home, "store", "restore", broken); r.code != 1 || !strings.Contains(r.stderr, "has no spec") || !strings.Contains(r.stderr, "nothing was changed") {
		t.Fatalf("restore of a file with problems: %+v", r)
	}
	if now, _ := os.ReadFile(db); string(now) != string(before) {
		t.Fatal("a refused restore changed the store")
	}

	r := cli(t, "--home", home, "store", "restore", backup)
	if r.code != 0 || !strings.Contains(r.stdout, "kept as "+db+".replaced-") || !strings.Contains(r.stdout, "the next start fences it") {
		t.Fatalf("store restore: %+v", r)
	}
	asides, _ := filepath.Glob(db + ".replaced-*")
	if len(asides) != 1 {
		t.Fatalf("kept aside: %v", asides)
	}
	if kept, _ := os.ReadFile(asides[0]); string(kept) != string(before) {
		t.Fatal("the file kept aside is not the previous store")
	}
	if _, err := os.Stat(supervisor.RestoreMarkPath(home)); err != nil {
		t.Fatalf("the restore mark: %v", err)
	}
	// Before a start: no command dispatches on it.
	if r := cli(t, "--home", home, "operation", "list"); r.code != 5 || !strings.Contains(r.stderr, "older than its home") || !strings.Contains(r.stderr, "store restore put") {
		t.Fatalf("operation list before the fence: %+v", r)
	}
	if r := cli(t, "--home", home, "run", prog, "--op", "execute", "--input-values", "5,6", "--isolation", "off"); r.code != 0 {
		t.Fatalf("run after the restore: %+v", r)
	}
	if r := cli(t, "--home", home, "store", "check"); r.code != 0 || !strings.Contains(r.stdout, "restored from a backup and fenced") || !strings.Contains(r.stdout, "no problems") {
		t.Fatalf("store check after the fence: %+v", r)
	}
	if r := cli(t, "--home", home, "operation", "list"); r.code != 0 {
		t.Fatalf("operation list after the fence: %+v", r)
	}
	if _, err := os.Stat(supervisor.RestoreMarkPath(home)); !os.IsNotExist(err) {
		t.Fatalf("the restore mark is left: %v", err)
	}
	if r := cli(t, "--home", home, "store", "restore", backup+".none"); r.code != protocol.ExitUsage {
		t.Fatalf("restore of a missing file: %+v", r)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
