#!/usr/bin/env bash
# Runs the benchmarks that carry the project's targets and prints their
# figures (ratios are measured side by side in one run). As root for the
# isolation benchmarks. BENCHTIME overrides the per-benchmark count.
set -euo pipefail
cd "$(dirname "$0")/.."
run() { echo "== $*"; go test -run XXX "$@" 2>&1 | grep -E '^(Benchmark|ok|FAIL)'; }
run -bench . -benchtime "${BENCHTIME:-2s}" ./noxrunner/reduce ./noxrunner/field ./noxrunner/hemera ./noxrunner/noun
# Hashing: the portable twins of hemera's vector code, and a hash-heavy
# batch through the real binary against the reference.
run -tags purego -bench 'Permute|FullRound|PartialRounds' -benchtime "${BENCHTIME:-2s}" ./noxrunner/hemera
run -bench BenchmarkEvalBatchHash -benchtime "${BENCHTIME:-10x}" ./cmd/nox-worker
run -bench BenchmarkLoops -benchtime "${BENCHTIME:-30x}" ./noxrunner/cert
run -bench . -benchtime "${BENCHTIME:-20x}" ./worker
run -bench BenchmarkWorkerProcess -benchtime "${BENCHTIME:-300x}" ./cmd/nox-worker
run -bench 'BenchmarkLaunch' -benchtime "${BENCHTIME:-100x}" ./sandbox
run -bench . -benchtime "${BENCHTIME:-10x}" ./limits
run -bench . -skip BenchmarkDashboardReads -benchtime "${BENCHTIME:-3x}" ./supervisor
# The dashboard's reads at 1,000 and 100,000 jobs side by side (target:
# p95 at most 50 ms at 100,000; docs/dashboard-data.md).
run -bench BenchmarkDashboardReads -benchtime "${BENCHTIME:-2s}" -timeout 30m ./supervisor
# Dispatch and fencing: one guarded act round trip (p50-ms, durable), and
# acts/s with 32 invocations at once, batched and unbatched side by side.
run -bench . -benchtime "${BENCHTIME:-300x}" ./supervisor/neuron
run -bench BenchmarkGuardedActRoundTrip -benchtime "${BENCHTIME:-500x}" ./supervisor/fencing
run -bench BenchmarkActsPerSecond -benchtime "${BENCHTIME:-20x}" ./supervisor/fencing
# A prog of 2^21 steps then 1 or 1,024 host acts, and the acts alone,
# side by side: work-ratio (target at most 4) is what the 1,024 acts add
# to the work beyond their own cost (docs/fencing.md, "Steps").
run -bench BenchmarkActsAfterWork -benchtime "${BENCHTIME:-3x}" ./supervisor/fencing
run -bench BenchmarkDaemon -benchtime "${BENCHTIME:-2x}" ./integration
# A one-shot run against bubblewrap on the same worker and job (pairs,
# alternating): both medians and the ratio; then the floor of its launch
# path (BenchmarkOneShotFloor) beside both. bwrap must be installed here.
REQUIRE_BWRAP=1 run -bench BenchmarkOneShot -benchtime "${BENCHTIME:-50x}" ./integration
