package worker

import "github.com/cyberia-to/cyber-supervisor/protocol"

// The cell guard turns a memory limit into a bound on the pairs a run may
// build (reduce.Config.MaxCells, cert.ProveOptions.MaxCells). It is a soft,
// early stop: the hard limit is the cgroup's, and the guard only makes the
// common case (a program that builds data without end) end with a clean
// memory_exhausted before the kernel kills the process. It is deliberately
// rough: pairs are most of what a run allocates, and the estimates below
// leave room for the garbage collector's headroom.
const (
	// reservedBytes is what the process needs besides nox data: the Go
	// runtime, the gRPC server, the job spec and the bundle.
	reservedBytes = 48 << 20
	// executeCellBytes is the cost of one pair during execution: an
	// 80-byte cell (two nouns, a cached digest and bound) with the
	// collector's 2x headroom, rounded up.
	executeCellBytes = 192
	// proveCellBytes adds what the prover keeps per pair: its table entry,
	// its index map entry and the witness tape bytes.
	proveCellBytes = 512
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

// cellGuard returns the MaxCells for a run under memory bytes (0: no
// guard). A limit at or below the reserve still gets half of
// itself for data, so that a small limit stops runs early rather than not
// at all.
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

// DefaultMaxCells is the cell guard of an execution that states no memory
// limit (half the host's memory, as Config.DefaultMemoryBytes), for
// callers that run the VM themselves: nox-worker eval, the raw engine,
// which would otherwise grow until the runtime or the kernel kills it.
func DefaultMaxCells() uint64 { return cellGuard(hostMemory()/2, executeCellBytes) }
