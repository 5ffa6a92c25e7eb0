package limits

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// DefaultName is the parent group of all supervisors on a host.
const DefaultName = "cyber-supervisor"

// Options configures a Manager. The groups of an attempt live at
// <own cgroup>/<Name>/<Instance>/<attempt> in every hierarchy used, where
// <own cgroup> is the supervisor's own cgroup in that hierarchy (or the
// hierarchy root with AtRoot).
type Options struct {
	// Name is the parent group shared by all boots of the supervisor;
	// RemoveLeftovers looks for earlier instances under it.
	Name string
	// Instance identifies this boot of the supervisor (its boot id). If
	// empty a random one is chosen.
	Instance string
	// AtRoot places <Name> at the root of each hierarchy instead of under
	// the supervisor's own cgroup. Use it when the supervisor is restarted
	// into a different cgroup each time (e.g. a per-session process
	// manager): leftovers of an earlier boot are only found under the
	// same parent.
	AtRoot bool
	// MoveSelfV2 allows, on pure cgroup v2 hosts, moving the supervisor
	// process into the leaf <own>/<Name>.self. cgroup v2 forbids enabling
	// controllers below a non-root cgroup that holds processes ("no
	// internal processes"), so without it limits are unavailable unless
	// the supervisor's cgroup is the root or already a delegated, empty
	// parent.
	MoveSelfV2 bool
	// ProbeTimeout bounds the start-up probe (default 5s; it normally
	// takes tens of milliseconds).
	ProbeTimeout time.Duration
	// ProbeCache, when set, keeps probe results across processes: a
	// Manager whose setup matches a stored result uses it instead of
	// probing (ProbeCached). The cache decides for how long a result
	// holds (the supervisor's holds for one kernel boot and one build of
	// its binaries); the key names everything of the setup the result
	// depends on.
	ProbeCache ProbeCache
}

// ProbeCache stores probe results by the setup they were found with.
type ProbeCache interface {
	Load(key string) (Capabilities, bool)
	Store(key string, c Capabilities)
}

func (o Options) withDefaults() (Options, error) {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Instance == "" {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return o, fmt.Errorf("limits: random instance id: %w", err)
		}
		o.Instance = hex.EncodeToString(b[:])
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = 5 * time.Second
	}
	if err := ValidName(o.Name); err != nil {
		return o, fmt.Errorf("limits: parent name: %w", err)
	}
	if err := ValidName(o.Instance); err != nil {
		return o, fmt.Errorf("limits: instance: %w", err)
	}
	return o, nil
}

// ValidName accepts one plain path element. Names beginning with '.' are
// reserved for the package's own probe groups, so that a job name can never
// collide with them. (Exported for the CLI, which checks --cgroup-name
// before anything starts.)
func ValidName(s string) error {
	if s == "" || len(s) > 200 {
		return fmt.Errorf("%w: %q must be 1..200 bytes", ErrInvalidName, s)
	}
	if s[0] == '.' {
		return fmt.Errorf("%w: %q must not start with '.'", ErrInvalidName, s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("%w: %q has byte %q (allowed: A-Z a-z 0-9 . _ -)", ErrInvalidName, s, c)
		}
	}
	return nil
}
