package worker

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// Version is the worker's version when Config.Version is empty.
const Version = "0.1.0"

// Defaults of Config.
const (
	// DefaultNetwork names the network selection of a worker that was not
	// configured for one: a local node.
	DefaultNetwork = "local"
	// DefaultMaxArgumentBytes is the descriptor's argument bound. The
	// public stateless environment runs no acts, so the value only has to
	// be valid and stable for placement comparisons.
	DefaultMaxArgumentBytes = 1 << 20
	// DefaultMaxCertificateBytes bounds an uncompressed certificate, both
	// the ones this worker proves and the ones it verifies, so that it never
	// produces what it would refuse to check (docs/certificate.md: 64 MiB).
	DefaultMaxCertificateBytes = 64 << 20
)

// ErrInvalidConfig is wrapped by every error of Config.Validate.
var ErrInvalidConfig = errors.New("invalid worker configuration")

// Config configures a Worker. The zero value is usable: missing ids are
// generated, everything else has a default.
type Config struct {
	// WorkRoot, when set, confines the work directories of runs: a
	// RunRequest.WorkDir must be WorkRoot or lie beneath it. In the
	// isolated sandbox it is the jail's work mount ("/work"). It must be a
	// clean absolute path.
	WorkRoot string

	// WorkerID, DeviceID and BootID are the executor's instance ids in
	// the worker descriptor (1-128 printable ASCII each). Empty ones are
	// generated: the device id from /etc/machine-id and the boot id from
	// the kernel's boot_id when readable, random otherwise; the worker id
	// is always random.
	WorkerID string
	DeviceID string
	BootID   string

	// Version is the backend and executor version (default Version).
	Version string
	// Network is the descriptor's network selection (default
	// DefaultNetwork).
	Network string
	// MaxArgumentBytes is the descriptor's argument bound (default
	// DefaultMaxArgumentBytes, at most protocol.MaxArgumentBytesLimit).
	MaxArgumentBytes uint64
	// MaxCertificateBytes bounds an uncompressed certificate (default
	// DefaultMaxCertificateBytes, at most cert.MaxEncodedBytes).
	MaxCertificateBytes int64
	// DefaultMemoryBytes is the memory bound of jobs that set none: the
	// memory guard of execute and prove and the node table of verify work
	// from it, so that no run grows until the runtime or the kernel kills
	// the process (default: half of the host's memory).
	DefaultMemoryBytes uint64
	// Profiles are the certificate profiles the worker offers
	// (Capabilities.ProofKinds); default protocol.PublicTraceProfiles,
	// both v2 and v1. A job that names another is refused with
	// unsupported_profile: no profile stands in for another.
	Profiles []string
	// OwnProcess says that the worker has its process to itself and
	// runs one job at a time (the plugin, a direct command): each run
	// then sets the Go runtime's soft memory limit from its job's
	// memory limit (debug.SetMemoryLimit), so that the collector works
	// harder, rather than the heap growing past the cgroup's limit,
	// when what is live nears it. Tests that run many workers in one
	// process leave it off.
	OwnProcess bool
	// ProvePipeline runs a v2 prove's per-step work on a second
	// goroutine when two CPUs are usable (cert.ProveOptions.Pipeline):
	// less wall time where a CPU is idle, more CPU time where none is.
	ProvePipeline bool
}

// withDefaults fills in what the caller left empty.
func (c Config) withDefaults() Config {
	if c.Version == "" {
		c.Version = Version
	}
	if c.Network == "" {
		c.Network = DefaultNetwork
	}
	if c.MaxArgumentBytes == 0 {
		c.MaxArgumentBytes = DefaultMaxArgumentBytes
	}
	if c.MaxCertificateBytes == 0 {
		c.MaxCertificateBytes = DefaultMaxCertificateBytes
	}
	if c.DefaultMemoryBytes == 0 {
		c.DefaultMemoryBytes = hostMemory() / 2
	}
	if c.Profiles == nil {
		c.Profiles = protocol.PublicTraceProfiles
	}
	c.Profiles = append([]string(nil), c.Profiles...)
	if c.WorkerID == "" {
		c.WorkerID = "nox-worker-" + randomHex(8)
	}
	if c.DeviceID == "" {
		c.DeviceID = idFromFile("/etc/machine-id", "device-")
	}
	if c.BootID == "" {
		c.BootID = idFromFile("/proc/sys/kernel/random/boot_id", "boot-")
	}
	return c
}

// Validate checks a configuration after defaults were applied. The ids and
// texts are checked again, with the descriptor's own rules, when New builds
// the descriptor.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	if c.WorkRoot != "" && !cleanAbs(c.WorkRoot) {
		return bad("WorkRoot must be a clean absolute path")
	}
	for _, f := range []struct{ name, v string }{
		{"WorkerID", c.WorkerID}, {"DeviceID", c.DeviceID}, {"BootID", c.BootID},
		{"Version", c.Version}, {"Network", c.Network},
	} {
		if !protocol.ValidText(f.v) {
			return bad("%s must be 1-%d printable ASCII characters", f.name, protocol.MaxTextBytes)
		}
	}
	if c.MaxArgumentBytes < 1 || c.MaxArgumentBytes > protocol.MaxArgumentBytesLimit {
		return bad("MaxArgumentBytes must be 1..%d", protocol.MaxArgumentBytesLimit)
	}
	if c.MaxCertificateBytes < 1 || c.MaxCertificateBytes > cert.MaxEncodedBytes {
		return bad("MaxCertificateBytes must be 1..%d", cert.MaxEncodedBytes)
	}
	if len(c.Profiles) == 0 {
		return bad("Profiles must name at least one profile")
	}
	for i, p := range c.Profiles {
		if !protocol.IsPublicTrace(p) || slices.Contains(c.Profiles[:i], p) {
			return bad("Profiles must be distinct, each %s or %s", protocol.ProfilePublicTraceV2, protocol.ProfilePublicTrace)
		}
	}
	return nil
}

// within reports whether dir is the work root or beneath it.
func (c Config) within(dir string) bool {
	if c.WorkRoot == "" {
		return true
	}
	if dir == c.WorkRoot {
		return true
	}
	root := c.WorkRoot
	if !strings.HasSuffix(root, "/") {
		root += "/"
	}
	return strings.HasPrefix(dir, root)
}

func cleanAbs(p string) bool {
	return filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.ContainsRune(p, 0)
}

// idFromFile reads a host id (machine-id, boot_id) when the file is there
// and holds a short printable line; inside a jail it usually is not, and a
// random id with the given prefix stands in.
func idFromFile(path, prefix string) string {
	b, err := readSmall(path, 256)
	if err == nil {
		if s := strings.TrimSpace(string(b)); protocol.ValidText(s) {
			return s
		}
	}
	return prefix + randomHex(16)
}

func readSmall(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, limit)
	n, err := f.Read(buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	// crypto/rand.Read never fails on Linux (it panics rather than return
	// short), so there is no error to handle.
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
