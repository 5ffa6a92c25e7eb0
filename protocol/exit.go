package protocol

// Process exit codes shared with the joy and cyber CLIs. Consumers treat any
// unknown non-zero status as a failure; an OS kill keeps the platform's
// status.
const (
	ExitOK          = 0
	ExitFailed      = 1
	ExitUsage       = 2 // usage or input validation
	ExitUnsupported = 3 // a capability this host or backend lacks
	ExitUnavailable = 4 // busy or unavailable
	ExitRejected    = 5 // proof, claim or admission rejected
	// ExitStoreDamaged: the supervisor's store file is damaged and
	// nothing was started (cyber-supervisor only; docs/store.md).
	ExitStoreDamaged = 6
	ExitCancelled    = 130 // handled cancellation
)
