package limits

import (
	"fmt"
	"strings"
)

// Cgroup modes as reported in Capabilities.CgroupMode.
const (
	ModeNone   = "none"
	ModeV1     = "v1"
	ModeV2     = "v2"
	ModeHybrid = "hybrid"
)

// Tree-kill methods as reported in Capabilities.TreeKillMethod.
const (
	KillMethodCgroupKill = "cgroup.kill"
	KillMethodFreezer    = "freezer"
)

// SeeReason begins a reason that points to another by its key, as in
// "no usable cgroups (see reasons.cgroups)"; whoever shows the reasons
// to a person follows or rewrites the pointer (the JSON key means
// nothing there).
const SeeReason = "(see reasons."

// Keys of Capabilities.Reasons.
const (
	ReasonCgroups       = "cgroups"
	ReasonMemory        = "memory"
	ReasonMemorySwap    = "memory_swap"
	ReasonOOM           = "oom_detection"
	ReasonPids          = "pids"
	ReasonCPU           = "cpu"
	ReasonTreeKill      = "tree_kill"
	ReasonCgroupFD      = "cgroup_fd"
	ReasonWallClock     = "wall_clock"
	ReasonNamespaces    = "namespaces"
	ReasonUserNamespace = "user_namespace"
	ReasonLandlock      = "landlock"
	ReasonSeccomp       = "seccomp"
)

// Capabilities is what the probe found really enforced on this host. Every
// boolean is true only if the probe saw the mechanism work (a child was
// OOM-killed and the counter moved, a fork was refused, a tree was killed),
// not merely because a file exists. Reasons explains every false field, and
// weaknesses of true ones (e.g. memory_swap).
type Capabilities struct {
	CgroupMode     string `json:"cgroup_mode"`
	CgroupCreate   bool   `json:"cgroup_create"`
	MemoryLimit    bool   `json:"memory_limit"`
	OOMDetection   bool   `json:"oom_detection"`
	PidsLimit      bool   `json:"pids_limit"`
	CPUQuota       bool   `json:"cpu_quota"`
	TreeKill       bool   `json:"tree_kill"`
	TreeKillMethod string `json:"tree_kill_method,omitempty"`
	CgroupFD       bool   `json:"cgroup_fd"`
	WallClock      bool   `json:"wall_clock"`
	Namespaces     bool   `json:"namespaces"`
	UserNamespace  bool   `json:"user_namespace"`
	Landlock       int    `json:"landlock_abi"`
	Seccomp        bool   `json:"seccomp"`
	// ProbeMicros is how long NewManager spent on setup and probe;
	// ProbeCached says the probe result of an earlier Manager with the same
	// setup in this process was reused.
	ProbeMicros int64 `json:"probe_us,string"`
	ProbeCached bool  `json:"probe_cached"`

	Reasons map[string]string `json:"reasons,omitempty"`
}

func (c *Capabilities) setReason(key, format string, args ...any) {
	if c.Reasons == nil {
		c.Reasons = map[string]string{}
	}
	c.Reasons[key] = fmt.Sprintf(format, args...)
}

func (c Capabilities) clone() Capabilities {
	if c.Reasons != nil {
		r := make(map[string]string, len(c.Reasons))
		for k, v := range c.Reasons {
			r[k] = v
		}
		c.Reasons = r
	}
	return c
}

func (c Capabilities) reason(key string) string {
	if r := c.Reasons[key]; r != "" {
		return r
	}
	return "not probed"
}

// Check returns nil if every limit s asks for is enforced here, and, when
// wall is set, if a wall-clock deadline can be enforced (the whole tree can
// be killed). Otherwise it returns an error wrapping ErrUnsupportedLimit that
// names each missing limit and why; an invalid spec yields ErrInvalidSpec.
func (c Capabilities) Check(s Spec, wall bool) error {
	if err := s.Validate(); err != nil {
		return err
	}
	var missing []string
	if s.MemoryBytes > 0 {
		switch {
		case !c.MemoryLimit:
			missing = append(missing, "memory ("+c.reason(ReasonMemory)+")")
		case !c.OOMDetection:
			// Without the oom_kill counter an OOM kill could not be told
			// from any other SIGKILL, so memory_exhausted could not be
			// reported honestly.
			missing = append(missing, "memory ("+c.reason(ReasonOOM)+")")
		}
	}
	if s.Pids > 0 && !c.PidsLimit {
		missing = append(missing, "pids ("+c.reason(ReasonPids)+")")
	}
	if s.CPUQuotaMicros > 0 && !c.CPUQuota {
		missing = append(missing, "cpu ("+c.reason(ReasonCPU)+")")
	}
	if wall && !c.WallClock {
		missing = append(missing, "wall_clock ("+c.reason(ReasonWallClock)+")")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s", ErrUnsupportedLimit, strings.Join(missing, "; "))
	}
	return nil
}
