// Package gate is the worker-side half of sandbox/: the gated init that a
// launched worker process runs before any worker code — wait on the gate
// for its configuration, build the jail, apply rlimits, drop capabilities,
// set no_new_privs, Landlock and seccomp, then execve the worker. It is a
// package of its own, free of go-plugin and gRPC, so that a small static
// binary (cmd/sandbox-gate) can play the init: the Go runtime start of
// the init is then that of a small program, not of the whole worker.
package gate

// The gate carries one JSON Config from the supervisor to the init and,
// in the other direction, Status objects until the init's execve closes
// the (close-on-exec) descriptor. EOF after a status without Error therefore
// means the worker binary is running.

// WireVersion is the version of Config.
const WireVersion = 1

// Layout of the jail and the init's command line.
const (
	SocketDir  = "/run/plugin"
	WorkDir    = "/work"
	WorkerPath = "/bin/worker"
	TmpDir     = "/tmp"
	// Arg is argv[1] of a gated init; argv[2] is the gate descriptor.
	Arg          = "__cyber_sandbox_init"
	ExitNoConfig = 111 // the gate closed without a config: nothing ran
	ExitSetup    = 112 // setup failed; the reason went to the parent
)

// LandlockMode says whether Landlock is applied in the jail.
type LandlockMode int

const (
	LandlockOff LandlockMode = iota
	// LandlockBestEffort applies the newest ABI the kernel has and reports
	// which one in the status (0 when the kernel has none).
	LandlockBestEffort
	// LandlockRequired fails the launch when the kernel has no Landlock.
	LandlockRequired
)

// Config is what the init needs to build the worker's world.
type Config struct {
	Version  int          `json:"v"`
	Jail     *Jail        `json:"jail,omitempty"`
	Hostname string       `json:"hostname,omitempty"`
	Rlimits  []Rlimit     `json:"rlimits,omitempty"`
	Landlock LandlockMode `json:"landlock,omitempty"`
	Seccomp  bool         `json:"seccomp,omitempty"`
	// Harden sets no_new_privs and empties every capability set.
	Harden bool     `json:"harden,omitempty"`
	Path   string   `json:"path"`
	Args   []string `json:"args"`
	Env    []string `json:"env"`
}

// Jail is the layout of the worker's root.
type Jail struct {
	Root       string `json:"root"`
	WorkerPath string `json:"worker"`
	WorkDir    string `json:"work"`
	SocketDir  string `json:"sockets"`
	TmpfsBytes int64  `json:"tmpfs"`
}

// Rlimit is one resource limit, soft = hard.
type Rlimit struct {
	Resource int    `json:"r"`
	Value    uint64 `json:"v"`
}

// Status is what the init reports on the gate.
type Status struct {
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
