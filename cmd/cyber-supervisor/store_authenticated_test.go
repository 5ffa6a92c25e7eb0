package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// v6Fixture is a file of the store's testdata: a home's store of the
// schema 6 release and its vault's key (supervisor/store/bolt/migrate_v6_test.go).
func v6Fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "supervisor", "store", "bolt", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// migratedV6 is the schema 6 fixture opened once by this build without
// the neuron's key: at schema 7, its records not authenticated yet (a
// backup taken then, or the file of before put back with its meta
// moved on).
func migratedV6(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, bolt.FileName), v6Fixture(t, "v6-release.db"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := bolt.Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, bolt.FileName)
}

// A home of the schema 6 release: store check counts the records not
// authenticated yet, the first command that opens its neuron
// authenticates them and marks the vault, and the check is clean. A
// store of before put back into it (its root of schema 6, its records
// without tags) is named by store check, refused by store restore, and
// nothing starts on it (exit 6).
func TestStoreOfSchema6PutBackIsRefused(t *testing.T) {
	home := t.TempDir()
	for _, d := range []string{"store", "vault"} {
		if err := os.Mkdir(filepath.Join(home, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	untagged, err := os.ReadFile(migratedV6(t))
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(home, "store", bolt.FileName)
	if err := os.WriteFile(db, untagged, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "vault", neuron.KeyFile), v6Fixture(t, "v6-release.key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := cli(t, "--home", home, "store", "check"); r.code != 0 || !strings.Contains(r.stdout, "have no authentication tag") {
		t.Fatalf("store check before the upgrade: %+v", r)
	}
	if r := cli(t, "--home", home, "grant", "show"); r.code != 0 {
		t.Fatalf("grant show: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(home, "vault", neuron.RecordsMark)); err != nil {
		t.Fatalf("the vault is not marked: %v", err)
	}
	if r := cli(t, "--home", home, "store", "check"); r.code != 0 || strings.Contains(r.stdout, "authentication tag") || !strings.Contains(r.stdout, "no problems") {
		t.Fatalf("store check after the upgrade: %+v", r)
	}

	want := `neuron/"root": the neuron root is older than the store's records (it was put back)`
	if r := cli(t, "--home", home, "store", "restore", migratedV6(t)); r.code != 1 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, neuron.RecordsMark) {
		t.Fatalf("store restore of a backup of before the upgrade: %+v", r)
	}
	if err := os.WriteFile(db, untagged, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := cli(t, "--home", home, "store", "check"); r.code != 1 || !strings.Contains(r.stdout, want) {
		t.Fatalf("store check of the store put back: %+v", r)
	}
	for _, args := range [][]string{{"grant", "show"}, {"serve", "--isolation", "off"}} {
		r := cli(t, append([]string{"--home", home}, args...)...)
		if r.code != protocol.ExitStoreDamaged || !strings.Contains(r.stderr, "it was put back") {
			t.Errorf("%v on the store put back: %+v", args, r)
		}
	}
}
