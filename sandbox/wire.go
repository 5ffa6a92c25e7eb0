package sandbox

import "time"

// The gate carries one JSON initConfig from the supervisor to the init and,
// in the other direction, initStatus objects until the init's execve closes
// the (close-on-exec) descriptor. EOF after a status without Error therefore
// means the worker binary is running.

const wireVersion = 1

type initConfig struct {
	Version  int          `json:"v"`
	Jail     *jailConfig  `json:"jail,omitempty"`
	Hostname string       `json:"hostname,omitempty"`
	Rlimits  []rlimit     `json:"rlimits,omitempty"`
	Landlock LandlockMode `json:"landlock,omitempty"`
	Seccomp  bool         `json:"seccomp,omitempty"`
	// Harden sets no_new_privs and empties every capability set.
	Harden bool     `json:"harden,omitempty"`
	Path   string   `json:"path"`
	Args   []string `json:"args"`
	Env    []string `json:"env"`
}

type jailConfig struct {
	Root       string `json:"root"`
	WorkerPath string `json:"worker"`
	WorkDir    string `json:"work"`
	SocketDir  string `json:"sockets"`
	TmpfsBytes int64  `json:"tmpfs"`
}

type rlimit struct {
	Resource int    `json:"r"`
	Value    uint64 `json:"v"`
}

type initStatus struct {
	Error string `json:"error,omitempty"`
	// Applied hardening, reported just before execve.
	LandlockABI int  `json:"landlock_abi,omitempty"`
	Seccomp     bool `json:"seccomp,omitempty"`
	NoNewPrivs  bool `json:"nnp,omitempty"`
	CapsDropped bool `json:"caps_dropped,omitempty"`
	Jail        bool `json:"jail,omitempty"`
	// Microseconds spent blocked on the gate, building the jail, and
	// applying the rest, for Report.
	GateUS   int64 `json:"gate_us,omitempty"`
	JailUS   int64 `json:"jail_us,omitempty"`
	HardenUS int64 `json:"harden_us,omitempty"`
}

// Report says what was actually applied to a launched worker.
type Report struct {
	Mode        Mode
	Gated       bool
	Namespaces  Namespaces
	Jail        bool
	NoNewPrivs  bool
	CapsDropped bool
	Seccomp     bool
	// LandlockABI is the Landlock ABI the ruleset was created for; 0 means
	// Landlock was off or unavailable.
	LandlockABI int
	Placed      bool

	// Launch phases, for metrics: the fork of the gated init (or of the
	// worker when not gated), the Placement hook, and config-to-exec (jail
	// and hardening in the init, then execve of the worker).
	Spawn, Place, Setup time.Duration
	// Inside Setup, as measured by the init: building the jail, and the
	// rest of the hardening (rlimits, fds, capabilities, Landlock,
	// seccomp). Setup minus both is mostly the Go runtime start of the init
	// (when the config arrives before it reads the gate) and the execve.
	InitJail, InitHarden time.Duration
}
