package protocol

import "time"

// The go-plugin handshake, shared by the supervisor (pluginclient, with
// go-plugin's client) and the worker (pluginserver). The cookie is not
// security; it keeps a worker binary from being started by hand or by a
// host that speaks another protocol. Change PluginProtocolVersion on any
// incompatible change to the service.
const (
	PluginProtocolVersion = 1
	PluginCookieKey       = "CYBER_WORKER_PLUGIN"
	PluginCookieValue     = "34a3ad5a04c4309a77ef16fe717901b9"
	// PluginName is the single plugin a worker serves.
	PluginName = "worker"
)

// DefaultShutdownGrace is how long a worker's Shutdown waits for calls in
// progress before it stops its server hard.
const DefaultShutdownGrace = 250 * time.Millisecond

// MaxWireBytes bounds one message of the worker service: a maximal job
// spec plus framing.
const MaxWireBytes = MaxJobSpecBytes + 1<<20

// The environment a supervisor gives a worker process (each optional; the
// worker falls back to its defaults).
const (
	// EnvWorkerID names this worker process in its descriptor.
	EnvWorkerID = "CYBER_WORKER_ID"
	// EnvWorkerDeviceID and EnvWorkerBootID are the host's machine id and
	// kernel boot id, which a jailed worker cannot read itself.
	EnvWorkerDeviceID = "CYBER_WORKER_DEVICE_ID"
	EnvWorkerBootID   = "CYBER_WORKER_BOOT_ID"
	EnvWorkerNetwork  = "CYBER_WORKER_NETWORK"
	// EnvWorkerWorkRoot is the directory below which run requests' work
	// dirs must lie.
	EnvWorkerWorkRoot = "CYBER_WORKER_WORK_ROOT"
	// EnvWorkerProvePipeline "off" makes the worker prove with its
	// prover's step on the machine's goroutine; unset or "on", on a
	// second one when two CPUs are usable (cert.ProveOptions.Pipeline),
	// which pays only where a CPU is otherwise idle.
	EnvWorkerProvePipeline = "CYBER_WORKER_PROVE_PIPELINE"
)
