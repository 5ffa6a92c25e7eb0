// Package sandbox launches one isolated worker process per job attempt and
// hands it to HashiCorp go-plugin through ClientConfig.RunnerFunc.
//
// It owns how a worker is started, never what it may do: limits and their
// values come from the caller (Placement, KillHook, Rlimits), and the choice
// between the isolated and the unisolated launch is always explicit.
//
// The isolated launch starts the gate (cmd/sandbox-gate, whose C init runs
// before any Go runtime), which blocks until the supervisor has placed it in
// its cgroups, then builds a pivot_root jail, drops privileges, installs
// Landlock and seccomp and finally execs the worker. The full sequence is
// documented in docs/sandbox.md.
package sandbox
