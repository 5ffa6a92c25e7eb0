package sandbox

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
}
