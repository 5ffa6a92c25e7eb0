package launch

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/cyberia-to/cyber-supervisor/limits"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// HostCacheFile is the host cache inside the home.
const HostCacheFile = "host-cache.json"

// maxHostCacheBytes bounds the file read back.
const maxHostCacheBytes = 1 << 20

// hostCache is what a launcher found on this host — the limits probe
// (limits.ProbeCache) and the worker's description — kept in the home
// for the current kernel boot, the current user and these exact binaries
// (the supervisor, the worker and the gate, by SHA-256), so that a start
// — a one-shot run above all — neither probes nor describes again: that
// was 30-40 ms of launching probe children and a worker on every start.
// A binary's digest is recomputed only when its inode, size, mtime or
// ctime changes. Anything else (another boot, a rebuilt binary, a file
// that does not parse) is a miss: the launcher probes and describes and
// the cache is written anew. The file is the home's (0600, in a 0700
// directory), like the store.
type hostCache struct {
	path string
	log  *slog.Logger

	mu    sync.Mutex
	file  hostCacheRecord
	dirty bool
}

type hostCacheRecord struct {
	Version  int                            `json:"version"`
	BootID   string                         `json:"boot_id"`
	Euid     int                            `json:"euid"`
	Binaries map[string]binaryID            `json:"binaries"`
	Probes   map[string]limits.Capabilities `json:"probes"`
	Workers  map[string]json.RawMessage     `json:"workers"`
}

const hostCacheVersion = 1

// binaryID identifies one binary: its digest, and the inode facts that
// let a later start trust the digest without reading the file again.
type binaryID struct {
	Path    string `json:"path"`
	Dev     uint64 `json:"dev,string"`
	Ino     uint64 `json:"ino,string"`
	Size    int64  `json:"size,string"`
	MtimeNs int64  `json:"mtime_ns,string"`
	CtimeNs int64  `json:"ctime_ns,string"`
	SHA256  string `json:"sha256"`
}

func (b binaryID) sameInode(o binaryID) bool {
	return b.Path == o.Path && b.Dev == o.Dev && b.Ino == o.Ino && b.Size == o.Size && b.MtimeNs == o.MtimeNs && b.CtimeNs == o.CtimeNs
}

// statBinary is path's inode facts (no digest).
func statBinary(path string) (binaryID, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return binaryID{}, err
	}
	return binaryID{Path: path, Dev: st.Dev, Ino: st.Ino, Size: st.Size,
		MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano()}, nil
}

func digestFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// openHostCache reads the home's host cache for the binaries by role
// ("supervisor", "worker", "gate"; an empty path is left out), keeping it
// only if it was written in this boot, by this user, for these binaries.
func openHostCache(home string, binaries map[string]string, log *slog.Logger) *hostCache {
	c := &hostCache{path: filepath.Join(home, HostCacheFile), log: log}
	boot := readBootID()
	fresh := hostCacheRecord{Version: hostCacheVersion, BootID: boot, Euid: os.Geteuid(),
		Binaries: map[string]binaryID{}, Probes: map[string]limits.Capabilities{}, Workers: map[string]json.RawMessage{}}
	old, err := c.read()
	keep := err == nil && boot != "" && old.Version == hostCacheVersion && old.BootID == boot && old.Euid == fresh.Euid &&
		len(old.Binaries) == len(nonEmpty(binaries))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		log.Warn("host cache unreadable, probing again", "file", c.path, "err", err)
	}
	for role, path := range binaries {
		if path == "" {
			continue
		}
		id, err := statBinary(path)
		if err != nil {
			keep = false
			continue
		}
		// The digest of an unchanged inode is taken as it was recorded,
		// in this boot or an earlier one: hashing the binaries costs more
		// than the probe it saves.
		if prev, ok := old.Binaries[role]; ok && prev.sameInode(id) {
			id.SHA256 = prev.SHA256
		} else {
			c.dirty = true
			if id.SHA256, err = digestFile(path); err != nil || !ok || id.SHA256 != prev.SHA256 {
				keep = false
			}
		}
		fresh.Binaries[role] = id
	}
	if keep {
		fresh.Probes, fresh.Workers = old.Probes, old.Workers
		if fresh.Probes == nil {
			fresh.Probes = map[string]limits.Capabilities{}
		}
		if fresh.Workers == nil {
			fresh.Workers = map[string]json.RawMessage{}
		}
	} else {
		c.dirty = true
	}
	c.file = fresh
	return c
}

func nonEmpty(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

func (c *hostCache) read() (hostCacheRecord, error) {
	var r hostCacheRecord
	f, err := os.OpenFile(c.path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return r, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxHostCacheBytes+1))
	if err != nil {
		return r, err
	}
	if len(b) > maxHostCacheBytes {
		return r, fmt.Errorf("%s is larger than %d bytes", c.path, maxHostCacheBytes)
	}
	err = json.Unmarshal(b, &r)
	return r, err
}

// Load and Store make the cache the limits probe's (limits.ProbeCache).
func (c *hostCache) Load(key string) (limits.Capabilities, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.file.Probes[key]
	return v, ok
}

func (c *hostCache) Store(key string, v limits.Capabilities) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v.ProbeMicros, v.ProbeCached = 0, false
	c.file.Probes[key] = v
	c.dirty = true
}

// worker is the worker's described capabilities for launches of kind
// key, when this boot and these binaries described them before.
func (c *hostCache) worker(key string) (protocol.Capabilities, bool) {
	c.mu.Lock()
	raw, ok := c.file.Workers[key]
	c.mu.Unlock()
	if !ok {
		return protocol.Capabilities{}, false
	}
	caps, err := protocol.ParseCapabilities(raw)
	if err != nil {
		return protocol.Capabilities{}, false
	}
	return *caps, true
}

func (c *hostCache) putWorker(key string, caps protocol.Capabilities) {
	raw, err := caps.MarshalJSON()
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.file.Workers[key] = raw
	c.dirty = true
}

// save writes the cache if it changed: to a temporary file beside it,
// then renamed over it. A failure costs the next start a probe, nothing
// else: it is logged, not returned.
func (c *hostCache) save() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dirty {
		return
	}
	b, err := json.Marshal(c.file)
	if err == nil {
		err = writeFileAtomic(c.path, b)
	}
	if err != nil {
		c.log.Warn("cannot write the host cache", "file", c.path, "err", err)
		return
	}
	c.dirty = false
}

func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	if _, err = tmp.Write(b); err == nil {
		err = tmp.Chmod(0o600)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
	}
	return err
}

// readBootID is the kernel's boot id ("" if it cannot be read).
func readBootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
