// Package sandbox launches one isolated worker process per job attempt and
// hands it to HashiCorp go-plugin through ClientConfig.RunnerFunc.
//
// It owns how a worker is started, never what it may do: limits and their
// values come from the caller (Placement, KillHook, Rlimits), and the choice
// between the isolated and the unisolated launch is always explicit.
//
// The isolated launch re-executes the worker binary in a hidden init mode
// that blocks on a gate until the supervisor has placed it in its cgroups,
// then builds a pivot_root jail, drops privileges, installs Landlock and
// seccomp and finally execs the worker in its normal (plugin) mode. A worker
// main must therefore call MaybeRunInit before anything else. The full
// sequence is documented in docs/sandbox.md.
package sandbox
