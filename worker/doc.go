// Package worker is the worker side of the cyber/worker/v1 contract: a
// protocol.Service over noxrunner that executes, proves and verifies nox
// programs in the public stateless profile (cyber-nox-public-trace-v1).
//
// The worker trusts nothing it is handed. Every Run admits the job spec's
// bytes again with protocol.Admit against the worker's own capabilities,
// rather than relying on the supervisor's reading of them; it then runs the
// one operation the job names:
//
//   - execute reduces the program on the subject of its inputs with the
//     public provider (a reached call or look is refused before it is
//     charged) under the job's reduction budget;
//   - prove does the same through cert.Prove and publishes the certificate,
//     zstd-compressed, atomically into the attempt's work directory, within
//     the job's artifact byte limit;
//   - verify checks the job's certificate for the job (cert.Verify): its
//     statement against the job's program, inputs, expected output and
//     budget first, then its witness, within bounds that follow from the
//     job (its budget and memory), never from the certificate.
//
// Failures leave as *protocol.Error with the contract's codes; the mapping
// happens once, at the boundary of Run (see errors.go), so that the code
// below it can wrap errors freely.
//
// The worker holds no key and never opens the supervisor's store. It does
// not enforce wall time or memory itself: a process cannot honestly bound
// its own memory or outlive its own hang. Those limits are enforced by the
// supervisor's isolation layer (cgroups, deadline kill), which merges them
// into the capabilities it advertises; the worker's re-admission accepts
// them as enforced by its host. What the worker does enforce is the
// reduction budget, the artifact size, cancellation, and a soft early stop
// on memory (a guard, derived from the memory limit or from
// Config.DefaultMemoryBytes for a job that sets none, on what the run
// holds, never on what it built and dropped) so that a run that would be
// killed by the cgroup or the runtime usually ends with a clean
// memory_exhausted instead.
//
// Behaviour, error mapping and the nox-worker CLI are documented in
// docs/worker.md.
package worker
