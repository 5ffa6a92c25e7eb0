package worker

import (
	"runtime/debug"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// The memory guard turns a job's memory limit into bounds on what its run
// holds, so that a run that needs more than its limit ends with a clean,
// early memory_exhausted (deterministic: the same job ends the same way)
// before the kernel kills the process, and a run that needs less is never
// stopped, however much it builds and drops:
//
//   - execute: reduce.Config.MaxCells, the cells the run holds at the
//     machine's census (reduce.CellBytes each: a cell, the collector's
//     headroom, the census's entry);
//   - prove: the same, and cert.ProveOptions.MaxMemory, what the run and
//     its certificate's record (node table, memo, witness tape) hold
//     together;
//   - verify: the node table (verifyBounds).
//
// The hard limit is the cgroup's; the guard only makes a run that holds
// too much end before it. In a process of its own (Config.OwnProcess) the
// worker also sets the Go runtime's soft memory limit from the job's, so
// that the collector works harder, rather than the heap growing past the
// cgroup's limit, when what is live nears it.
const (
	// dataReserve is what a process running execute or prove needs
	// besides the run's data and the runtime's slack: the Go runtime,
	// the gRPC server and buffers (a jailed worker's peak for a job
	// that holds nothing, add.nox, was 1.5-2.2 MB, measured through the
	// cgroup), and twice the program bundle's bytes (the request holds
	// it, and the decoded spec).
	dataReserve = 6 << 20
	// reservedBytes is the same for verify, whose job carries the
	// certificate to check (up to MaxCertificateBytes, compressed).
	reservedBytes = 48 << 20
	// runtimeSlack is the most the Go runtime's soft limit leaves below
	// the job's limit (an eighth of it and 2 MiB, up to this) for what
	// the runtime does not count: the binary's pages, the published
	// artifact on the work tmpfs, the kernel's own accounting. A
	// worker's resident set runs up to the soft limit (the collector is
	// lazy below it) and 3.5 MiB over it: 59.4 MiB of a 64 MiB job was
	// the most seen with 8 MiB of slack, 6 MiB below 64 with this.
	runtimeSlack = 10 << 20
	// fallbackMemory stands in for the host's memory where it cannot be
	// read.
	fallbackMemory = 4 << 30
)

// memoryOf is the memory a job's guards work from: its own limit, or this
// worker's default for jobs that set none, so that no run grows without
// a bound.
func (w *Worker) memoryOf(l protocol.Limits) uint64 {
	if l.MemoryBytes != 0 {
		return l.MemoryBytes
	}
	return w.cfg.DefaultMemoryBytes
}

// softLimit is the Go runtime's soft memory limit for a job under
// memory bytes: the limit less its slack (at most half of it).
func softLimit(memory uint64) uint64 {
	return memory - min(memory/8+2<<20, runtimeSlack, memory/2)
}

// dataMemory is what an execute or prove run of a job with a bundle of
// bundleBytes may hold under memory bytes (0: no bound): the runtime's
// soft limit less the reserve. A limit too small for that still gets
// half of itself, so that a small limit stops runs early rather than not
// at all.
func dataMemory(memory, bundleBytes uint64) uint64 {
	if memory == 0 {
		return 0
	}
	soft, reserve := softLimit(memory), dataReserve+2*bundleBytes
	if soft > reserve+memory/2 {
		return soft - reserve
	}
	return max(memory/2, 1)
}

// maxCells is the cell bound of a run that may hold data bytes.
func maxCells(data uint64) uint64 {
	if data == 0 {
		return 0
	}
	return max(data/reduce.CellBytes, 1)
}

// dataOf is what the run of job may hold, and sets the runtime's limit.
func (w *Worker) dataOf(job *protocol.AdmittedJob) uint64 {
	memory := w.memoryOf(job.Spec.Limits)
	w.limitRuntime(memory)
	return dataMemory(memory, uint64(len(job.Spec.Program.Bundle)))
}

// proveOptions bound a prove run that may hold data bytes.
func proveOptions(data uint64) cert.ProveOptions {
	if data == 0 {
		return cert.ProveOptions{}
	}
	return cert.ProveOptions{
		MaxCells:  maxCells(data),
		MaxNodes:  max(data/cert.ProverNodeBytes, 1),
		MaxMemory: data,
	}
}

// limitRuntime sets the Go runtime's soft memory limit from a job's
// memory, when the worker has the process to itself.
func (w *Worker) limitRuntime(memory uint64) {
	if !w.cfg.OwnProcess || memory == 0 {
		return
	}
	debug.SetMemoryLimit(int64(min(softLimit(memory), 1<<62)))
}

// cellGuard is verify's node bound under memory bytes (0: none), with
// the reserve of a process that holds the certificate besides.
func cellGuard(memory, perCell uint64) uint64 {
	if memory == 0 {
		return 0
	}
	avail := memory / 2
	if memory > 2*reservedBytes {
		avail = memory - reservedBytes
	}
	return max(avail/perCell, 1)
}

// DefaultMaxCells is the cell bound of an execution that states no memory
// limit (half the host's memory, as Config.DefaultMemoryBytes), for
// callers that run the VM themselves: nox-worker eval, the raw engine,
// which would otherwise grow until the runtime or the kernel kills it.
func DefaultMaxCells() uint64 { return maxCells(dataMemory(hostMemory()/2, 0)) }
