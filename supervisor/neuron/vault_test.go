package neuron

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestVaultInitLoad(t *testing.T) {
	home := t.TempDir()
	v := OpenVault(VaultDir(home))
	if _, err := v.Load(); !errors.Is(err, ErrNoKey) {
		t.Fatalf("load before init: %v, want ErrNoKey", err)
	}
	k, err := v.Init()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Init(); !errors.Is(err, ErrKeyExists) {
		t.Fatalf("second init: %v, want ErrKeyExists", err)
	}
	k2, err := v.Load()
	if err != nil {
		t.Fatal(err)
	}
	if k2.PublicKey() != k.PublicKey() {
		t.Fatal("loaded another key")
	}
	fi, err := os.Stat(v.Dir())
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("vault mode %v (%v), want 0700", fi.Mode().Perm(), err)
	}
	fi, err = os.Stat(filepath.Join(v.Dir(), KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	ents, _ := os.ReadDir(v.Dir())
	if len(ents) != 1 {
		t.Fatalf("vault holds %d entries, want only the key", len(ents))
	}
}

func TestVaultRefusesUnsafeFiles(t *testing.T) {
	home := t.TempDir()
	v := OpenVault(VaultDir(home))
	if _, err := v.Init(); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(v.Dir(), KeyFile)
	os.Chmod(key, 0o640)
	if _, err := v.Load(); !errors.Is(err, ErrVaultPermissions) {
		t.Fatalf("group-readable key: %v", err)
	}
	os.Chmod(key, 0o600)
	os.Chmod(v.Dir(), 0o755)
	if _, err := v.Load(); !errors.Is(err, ErrVaultPermissions) {
		t.Fatalf("open vault dir: %v", err)
	}
	os.Chmod(v.Dir(), 0o700)
	// A symlink in the key's place is refused, not followed.
	other := filepath.Join(t.TempDir(), "elsewhere")
	os.Rename(key, other)
	os.Symlink(other, key)
	if _, err := v.Load(); !errors.Is(err, ErrVaultPermissions) {
		t.Fatalf("symlinked key: %v", err)
	}
}

func TestVaultRefusesDamagedKeyFile(t *testing.T) {
	for name, content := range map[string]string{
		"empty":      "",
		"no header":  strings.Repeat("ab", 32) + "\n",
		"short":      Profile + "\nabcd\n",
		"not hex":    Profile + "\n" + strings.Repeat("zz", 32) + "\n",
		"zero":       Profile + "\n" + strings.Repeat("00", 32) + "\n",
		"long":       Profile + "\n" + strings.Repeat("ab", 200),
		"other prof": "cyber-ed25519-v1\n" + strings.Repeat("ab", 32) + "\n",
	} {
		dir := filepath.Join(t.TempDir(), "vault")
		os.Mkdir(dir, 0o700)
		os.WriteFile(filepath.Join(dir, KeyFile), []byte(content), 0o600)
		_, err := OpenVault(dir).Load()
		if !errors.Is(err, ErrKey) {
			t.Errorf("%s: %v, want ErrKey", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "abab") {
			t.Errorf("%s: the error quotes the file: %v", name, err)
		}
	}
}

// TestKeyIsRedacted: however a key is printed, logged or marshalled, its
// secret does not come out.
func TestKeyIsRedacted(t *testing.T) {
	home := t.TempDir()
	k, err := OpenVault(VaultDir(home)).Init()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(VaultDir(home), KeyFile))
	secretHex := strings.TrimSpace(strings.SplitN(string(raw), "\n", 2)[1])
	secret, _ := hex.DecodeString(secretHex)
	type holder struct {
		K  *Key
		KV Key
		k  *Key
		kv Key
	}
	h := holder{K: k, KV: *k, k: k, kv: *k}
	var out bytes.Buffer
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%q"} {
		fmt.Fprintf(&out, verb+"\n", k)
		fmt.Fprintf(&out, verb+"\n", *k)
		fmt.Fprintf(&out, verb+"\n", h)
		fmt.Fprintf(&out, verb+"\n", &h)
	}
	for _, hnd := range []slog.Handler{slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}), slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})} {
		l := slog.New(hnd)
		l.Debug("key", "key", k, "value", *k, "holder", h)
	}
	if b, err := json.Marshal(h); err == nil {
		out.Write(b)
	}
	if b, err := json.Marshal(k); err == nil {
		t.Errorf("a key marshalled to JSON: %s", b)
	}
	s := strings.ToLower(out.String())
	if strings.Contains(s, strings.ToLower(secretHex)) || bytes.Contains(out.Bytes(), secret) {
		t.Fatalf("the secret appears in printed output:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "redacted") {
		t.Fatal("no redaction in the output: the test printed nothing")
	}
}

// TestVaultRefusesAFIFO: a FIFO at the key's path is refused at once;
// Load used to block in open(2) until a writer came.
func TestVaultRefusesAFIFO(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vault")
	os.Mkdir(dir, 0o700)
	key := filepath.Join(dir, KeyFile)
	if err := unix.Mkfifo(key, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := OpenVault(dir).Load()
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrVaultPermissions) {
			t.Fatalf("FIFO key: %v, want ErrVaultPermissions", err)
		}
	case <-time.After(30 * time.Second):
		// Release the blocked open, then fail: a liveness check, not a
		// timing one (Load returns at once when it does not block).
		if w, err := os.OpenFile(key, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		t.Fatalf("Load blocked in open(2) on a FIFO: %v", <-done)
	}
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another uid")
	}
}

// TestVaultRefusesAnotherOwner: a key file or a vault owned by another
// uid (65534 while this runs as root) is refused, whatever its mode.
func TestVaultRefusesAnotherOwner(t *testing.T) {
	requireRoot(t)
	v := OpenVault(VaultDir(t.TempDir()))
	if _, err := v.Init(); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(v.Dir(), KeyFile)
	for _, path := range []string{key, v.Dir()} {
		if err := os.Lchown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := v.Load(); !errors.Is(err, ErrVaultPermissions) || !strings.Contains(err.Error(), "uid 65534") {
			t.Fatalf("%s owned by 65534: %v, want ErrVaultPermissions", path, err)
		}
		if err := os.Lchown(path, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := v.Load(); err != nil {
		t.Fatalf("owned by root again: %v", err)
	}
}

// TestVaultRefusesAHardLinkedKey: a second name of the key file, which
// may be readable where the vault is not, is refused.
func TestVaultRefusesAHardLinkedKey(t *testing.T) {
	v := OpenVault(VaultDir(t.TempDir()))
	if _, err := v.Init(); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "copy")
	if err := os.Link(filepath.Join(v.Dir(), KeyFile), other); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Load(); !errors.Is(err, ErrVaultPermissions) || !strings.Contains(err.Error(), "2 hard links") {
		t.Fatalf("hard-linked key: %v, want ErrVaultPermissions", err)
	}
	os.Remove(other)
	if _, err := v.Load(); err != nil {
		t.Fatalf("one link again: %v", err)
	}
}

// TestVaultRemovesALeftoverTemporaryName: Init's link(2) fallback, cut
// by a crash after the link, leaves the key under its temporary name as
// well; Load removes that name (only one that is the key) and loads.
func TestVaultRemovesALeftoverTemporaryName(t *testing.T) {
	v := OpenVault(VaultDir(t.TempDir()))
	k, err := v.Init()
	if err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(v.Dir(), tempPrefix+"123")
	if err := os.Link(filepath.Join(v.Dir(), KeyFile), leftover); err != nil {
		t.Fatal(err)
	}
	unrelated := filepath.Join(v.Dir(), tempPrefix+"456")
	if err := os.WriteFile(unrelated, []byte("in progress"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := v.Load()
	if err != nil || got.PublicKey() != k.PublicKey() {
		t.Fatalf("load: %v", err)
	}
	if _, err := os.Lstat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the leftover name is still there: %v", err)
	}
	if _, err := os.Lstat(unrelated); err != nil {
		t.Fatalf("another temporary file was removed: %v", err)
	}
}
