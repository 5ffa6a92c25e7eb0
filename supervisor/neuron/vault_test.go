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
