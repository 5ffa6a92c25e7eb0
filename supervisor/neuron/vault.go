package neuron

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cyberia-to/cyber-supervisor/internal/fsync"

	"golang.org/x/sys/unix"
)

// Vault is the directory that holds the neuron's key: <home>/vault, mode
// 0700, with one key file, mode 0600. Nothing else of the supervisor
// reads or writes there.
type Vault struct{ dir string }

// KeyFile is the key's file name inside the vault.
const KeyFile = "neuron.key"

// maxKeyFile bounds what Load reads: the header line and 64 hex digits.
const maxKeyFile = 256

var (
	// ErrNoKey: the vault holds no key (the neuron was never initialised).
	ErrNoKey = errors.New("the vault holds no neuron key")
	// ErrKeyExists: init on a vault that already holds a key.
	ErrKeyExists = errors.New("the vault already holds a neuron key")
	// ErrVaultPermissions: the vault or its key is readable or writable by
	// others, or is not what it should be (a symlink, not a regular file).
	ErrVaultPermissions = errors.New("unsafe vault permissions")
)

// OpenVault names the vault in dir (usually <home>/vault). It touches
// nothing until Init or Load.
func OpenVault(dir string) *Vault { return &Vault{dir: dir} }

// VaultDir is the vault of a home.
func VaultDir(home string) string { return filepath.Join(home, "vault") }

// Dir of the vault.
func (v *Vault) Dir() string { return v.dir }

func (v *Vault) keyPath() string { return filepath.Join(v.dir, KeyFile) }

// HasKey reports whether the vault holds a key file (without reading it).
func (v *Vault) HasKey() bool {
	_, err := os.Lstat(v.keyPath())
	return err == nil
}

// Init makes a new key and writes it, once: an existing key is never
// replaced (ErrKeyExists). The file is complete and synced before Init
// returns; a crash leaves either no key file or a whole one (it is
// written under a temporary name and linked into place).
func (v *Vault) Init() (*Key, error) {
	if err := os.MkdirAll(v.dir, 0o700); err != nil {
		return nil, fmt.Errorf("create vault %s: %w", v.dir, err)
	}
	if err := v.checkDir(); err != nil {
		return nil, err
	}
	if v.HasKey() {
		return nil, fmt.Errorf("init vault %s: %w", v.dir, ErrKeyExists)
	}
	k, err := GenerateKey()
	if err != nil {
		return nil, err
	}
	if err := v.write(k); err != nil {
		return nil, err
	}
	return k, nil
}

func (v *Vault) write(k *Key) error {
	tmp, err := os.CreateTemp(v.dir, ".neuron.key.*")
	if err != nil {
		return fmt.Errorf("write key in %s: %w", v.dir, err)
	}
	defer os.Remove(tmp.Name())
	secret := k.secret()
	buf := make([]byte, 0, 128)
	buf = append(buf, Profile...)
	buf = append(buf, '\n')
	buf = hex.AppendEncode(buf, secret[:])
	buf = append(buf, '\n')
	clear(secret[:])
	_, werr := tmp.Write(buf)
	clear(buf)
	if werr == nil {
		werr = tmp.Chmod(0o600)
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("write key %s: %w", tmp.Name(), werr)
	}
	// link(2) fails if the name exists: two racing inits cannot both win.
	if err := os.Link(tmp.Name(), v.keyPath()); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("init vault %s: %w", v.dir, ErrKeyExists)
		}
		return fmt.Errorf("install key %s: %w", v.keyPath(), err)
	}
	return fsync.Dir(v.dir)
}

// Load reads the key. The file must be a regular file (not a symlink)
// that only its owner can read, in a directory only its owner can enter.
func (v *Vault) Load() (*Key, error) {
	if err := v.checkDir(); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("load key from %s: %w", v.dir, ErrNoKey)
		}
		return nil, err
	}
	fd, err := unix.Open(v.keyPath(), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("load key from %s: %w", v.dir, ErrNoKey)
		}
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("load key %s: %w: it is a symlink", v.keyPath(), ErrVaultPermissions)
		}
		return nil, fmt.Errorf("load key %s: %w", v.keyPath(), err)
	}
	f := os.NewFile(uintptr(fd), v.keyPath())
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("load key %s: %w", v.keyPath(), err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("load key %s: %w: not a regular file", v.keyPath(), ErrVaultPermissions)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("load key %s: %w: mode %04o, want 0600", v.keyPath(), ErrVaultPermissions, fi.Mode().Perm())
	}
	buf := make([]byte, maxKeyFile+1)
	defer clear(buf)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("load key %s: %w", v.keyPath(), err)
	}
	if n > maxKeyFile {
		return nil, fmt.Errorf("load key %s: %w: the file is longer than a key", v.keyPath(), ErrKey)
	}
	return parseKeyFile(buf[:n])
}

// parseKeyFile reads "<profile>\n<64 hex digits>\n". Errors never quote
// the file.
func parseKeyFile(b []byte) (*Key, error) {
	header, rest, ok := bytes.Cut(b, []byte{'\n'})
	if !ok || string(header) != Profile {
		return nil, fmt.Errorf("%w: the key file does not start with %q", ErrKey, Profile)
	}
	digits := bytes.TrimSuffix(rest, []byte{'\n'})
	if len(digits) != 64 {
		return nil, fmt.Errorf("%w: the key file holds no 32-byte secret", ErrKey)
	}
	var secret [32]byte
	defer clear(secret[:])
	if _, err := hex.Decode(secret[:], digits); err != nil {
		return nil, fmt.Errorf("%w: the key file's secret is not hex", ErrKey)
	}
	return keyFromBytes(secret[:])
}

// checkDir refuses a vault directory that others can enter, or a symlink.
func (v *Vault) checkDir() error {
	fi, err := os.Lstat(v.dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("vault %s: %w: not a directory", v.dir, ErrVaultPermissions)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("vault %s: %w: mode %04o, want 0700", v.dir, ErrVaultPermissions, fi.Mode().Perm())
	}
	return nil
}
