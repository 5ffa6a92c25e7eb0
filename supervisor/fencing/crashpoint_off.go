//go:build !crashpoints

package fencing

// crashpoint marks a step of an act's path where a crash test stops the
// process (CrashpointEnv; crashpoint_on.go, built with -tags
// crashpoints). In every other build it is nothing.
func crashpoint(string) {}
