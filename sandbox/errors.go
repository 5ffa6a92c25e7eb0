package sandbox

import "errors"

var (
	// ErrInvalidConfig wraps every problem Config.Validate finds.
	ErrInvalidConfig = errors.New("sandbox: invalid config")
	// ErrUnsupported is returned where the platform cannot launch sandboxes.
	ErrUnsupported = errors.New("sandbox: unsupported on this platform")
	// ErrAlreadyStarted is returned when one Sandbox is asked to launch twice;
	// a Sandbox belongs to exactly one attempt.
	ErrAlreadyStarted = errors.New("sandbox: already started")
	// ErrPlacement wraps a failure of the caller's Placement hook. The gated
	// worker is killed before it runs any code.
	ErrPlacement = errors.New("sandbox: placement failed")
	// ErrSetup wraps a failure inside the init process between the gate and
	// the exec of the worker (mounts, pivot_root, Landlock, seccomp, exec).
	ErrSetup = errors.New("sandbox: worker setup failed")
	// ErrAddress is returned when the worker announces an address that does
	// not map into the sandbox's socket directory.
	ErrAddress = errors.New("sandbox: address outside the sandbox")
	// ErrKilled is returned by Start when Kill won the race against it.
	ErrKilled = errors.New("sandbox: killed")
)
