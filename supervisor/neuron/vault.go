package neuron

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cyberia-to/cyber-supervisor/internal/fsync"

	"golang.org/x/sys/unix"
)

// Vault is the directory that holds the neuron's key: <home>/vault, mode
// 0700, with one key file, mode 0600, and the mark that the neuron's
// store authenticates its records (vault_mark.go). Nothing else of the
// supervisor reads or writes there.
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
	// others, owned by another user, or is not what it should be (a
	// symlink, a FIFO or another non-regular file, a key with a second
	// hard link).
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
	tmp, err := os.CreateTemp(v.dir, tempPrefix+"*")
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
	// Neither renameat2(RENAME_NOREPLACE) nor link(2) replaces an
	// existing name: two racing inits cannot both win. The rename leaves
	// the key with one link; link(2), where the file system has no
	// RENAME_NOREPLACE, leaves a second one until the temporary name is
	// removed (Load removes such a leftover of a crash).
	err = unix.Renameat2(unix.AT_FDCWD, tmp.Name(), unix.AT_FDCWD, v.keyPath(), unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		err = os.Link(tmp.Name(), v.keyPath())
	}
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("init vault %s: %w", v.dir, ErrKeyExists)
		}
		return fmt.Errorf("install key %s: %w", v.keyPath(), err)
	}
	os.Remove(tmp.Name())
	return fsync.Dir(v.dir)
}

// tempPrefix starts the names of Init's temporary key files.
const tempPrefix = ".neuron.key."

// Load reads the key. The file must be a regular file (not a symlink, a
// FIFO or a device: its type is checked before it is opened, so nothing
// blocks or acts on open) with one link, owned by this process's user
// and readable by it alone, in a directory of the same owner that only
// it can enter: what the vault holds then is what Init wrote.
func (v *Vault) Load() (*Key, error) {
	if err := v.checkDir(); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("load key from %s: %w", v.dir, ErrNoKey)
		}
		return nil, err
	}
	before, err := os.Lstat(v.keyPath())
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("load key from %s: %w", v.dir, ErrNoKey)
		}
		return nil, fmt.Errorf("load key %s: %w", v.keyPath(), err)
	}
	if !before.Mode().IsRegular() {
		return nil, fmt.Errorf("load key %s: %w: not a regular file (%s)", v.keyPath(), ErrVaultPermissions, fileType(before))
	}
	// O_NONBLOCK: should a FIFO take the file's place after the Lstat,
	// the open returns at once and the fstat below refuses it.
	fd, err := unix.Open(v.keyPath(), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
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
	if !os.SameFile(before, fi) {
		return nil, fmt.Errorf("load key %s: %w: the file was replaced while it was opened", v.keyPath(), ErrVaultPermissions)
	}
	if links(fi) > 1 && v.removeLeftoverLinks(fi) {
		if fi, err = f.Stat(); err != nil {
			return nil, fmt.Errorf("load key %s: %w", v.keyPath(), err)
		}
	}
	if err := checkKeyFile(v.keyPath(), fi); err != nil {
		return nil, err
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

// checkKeyFile refuses a key file that is not a regular file with one
// link, owned by this process's user, mode 0600 or narrower.
func checkKeyFile(path string, fi os.FileInfo) error {
	switch {
	case !fi.Mode().IsRegular():
		return fmt.Errorf("load key %s: %w: not a regular file (%s)", path, ErrVaultPermissions, fileType(fi))
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("load key %s: %w: mode %04o, want 0600", path, ErrVaultPermissions, fi.Mode().Perm())
	case owner(fi) != os.Geteuid():
		return fmt.Errorf("load key %s: %w: owned by uid %d, not %d", path, ErrVaultPermissions, owner(fi), os.Geteuid())
	case links(fi) != 1:
		return fmt.Errorf("load key %s: %w: %d hard links, want 1 (another name may expose it)", path, ErrVaultPermissions, links(fi))
	}
	return nil
}

// fileType names what a file that is not a regular file is.
func fileType(fi os.FileInfo) string {
	switch t := fi.Mode().Type(); {
	case t&os.ModeSymlink != 0:
		return "a symlink"
	case t&os.ModeNamedPipe != 0:
		return "a FIFO"
	case t&os.ModeSocket != 0:
		return "a socket"
	case t&os.ModeDevice != 0:
		return "a device"
	case t&os.ModeDir != 0:
		return "a directory"
	default:
		return "type " + t.String()
	}
}

func owner(fi os.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

func links(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 0
}

// removeLeftoverLinks removes the temporary names of Init's link(2)
// fallback that are the key itself (a crash between the link and the
// removal leaves one), and reports whether it removed any. A temporary
// name of another file (an Init in progress) is left alone.
func (v *Vault) removeLeftoverLinks(key os.FileInfo) bool {
	ents, err := os.ReadDir(v.dir)
	if err != nil {
		return false
	}
	removed := false
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		p := filepath.Join(v.dir, e.Name())
		if fi, err := os.Lstat(p); err == nil && os.SameFile(fi, key) && os.Remove(p) == nil {
			removed = true
		}
	}
	if removed {
		fsync.Dir(v.dir)
	}
	return removed
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

// checkDir refuses a vault directory that others can enter, that another
// user owns, or a symlink.
func (v *Vault) checkDir() error {
	fi, err := os.Lstat(v.dir)
	if err != nil {
		return err
	}
	switch {
	case !fi.IsDir():
		return fmt.Errorf("vault %s: %w: not a directory", v.dir, ErrVaultPermissions)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("vault %s: %w: mode %04o, want 0700", v.dir, ErrVaultPermissions, fi.Mode().Perm())
	case owner(fi) != os.Geteuid():
		return fmt.Errorf("vault %s: %w: owned by uid %d, not %d", v.dir, ErrVaultPermissions, owner(fi), os.Geteuid())
	}
	return nil
}
