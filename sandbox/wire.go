package sandbox

import "time"

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
