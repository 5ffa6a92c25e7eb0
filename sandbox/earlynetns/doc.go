// Package earlynetns makes network namespaces for package sandbox, and
// one of them as early as a process starts, for the first isolated launch
// to take.
//
// Making a network namespace is most of what a gated fork costs the kernel
// (~0.65 ms of CPU in copy_net_ns). A one-shot run needs one for its only
// worker, and before its main runs the supervisor spends ~4 ms in the Go
// runtime's start and package initialisation on one core while the other
// is idle. This package depends on nothing but the runtime, x/sys/unix and
// internal/prepared, so it is initialised early in that stretch, and Start
// made from there puts the namespace's cost on the idle core instead of on
// the cores the launcher and the store then share. sandbox.PrepareNetns
// starts the same one later, when nothing did before main.
package earlynetns
