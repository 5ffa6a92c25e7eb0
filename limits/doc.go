// Package limits owns the cgroups of worker attempts: it creates one group per
// attempt under a parent group per supervisor, sets the memory, pids and cpu
// limits, tracks every process of the attempt, kills the whole tree, reads
// the OOM counter and usage statistics after the worker is reaped, runs the
// deadline/cancel kill escalation, removes what an earlier boot left behind,
// and probes which limits this host really enforces.
//
// It never advertises a limit it cannot enforce: Capabilities comes from a
// probe that runs real child processes against real cgroups, and
// Capabilities.Check refuses a Spec that asks for more.
//
// On hybrid hosts (v1 controllers plus a controller-less cgroup2 mount at
// /sys/fs/cgroup/unified) limits live in the v1 hierarchies and every attempt
// also gets a v2 group for race-free placement (clone3 CLONE_INTO_CGROUP),
// tracking and cgroup.kill. On pure v2 hosts a single v2 group does all of
// it; on pure v1 hosts the freezer provides the tree kill.
//
// See docs/limits.md for the API contract, the OOM rule, the kill escalation
// and the meaning of every probe field.
package limits
