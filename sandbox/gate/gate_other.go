//go:build !linux

package gate

// MaybeRun is Linux-only; elsewhere there is never a gated init.
func MaybeRun() {}
