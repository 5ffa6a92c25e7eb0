#!/usr/bin/env bash
# The 1.1 KB artifact of issue #16 (one quote result defining 16 Mi
# nested pairs: 32 MiB decompressed) against two builds side by side,
# measured from outside the processes:
#   - `nox-worker verify`: wall time, CPU and peak RSS of the reaped child
#     (cmd/nox-worker BenchmarkVerifyHostileProcess);
#   - a supervisor verify job through a daemon whose worker lies: the
#     daemon's peak RSS growth (/proc VmHWM), its CPU (schedstat), the
#     time from produced to rejected, its RSS after the jobs
#     (integration BenchmarkHostileVerifyJob; root, isolation).
# OLD's nox-worker and cyber-supervisor are built from the revision and
# run alternately with the work tree's; their figures are the old-*
# metrics. Then the verify job's check in process, streamed against
# decompressed whole, on honest certificates and on the attack
# (worker BenchmarkVerifyArtifact, side by side in one binary).
#
#   scripts/bench-hostile.sh [OLD]
#
# OLD defaults to 9561ce1, the last commit that decompressed a whole
# certificate before verifying it.
set -euo pipefail
cd "$(dirname "$0")/.."
OLD="${1:-9561ce1}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
git archive "$OLD" | tar -x -C "$tmp"
(cd "$tmp" && CGO_ENABLED=0 go build -trimpath -o "$tmp/bin/nox-worker" ./cmd/nox-worker &&
	CGO_ENABLED=0 go build -trimpath -o "$tmp/bin/cyber-supervisor" ./cmd/cyber-supervisor)
show() { grep -E '^(Benchmark|ok|FAIL|---)' || true; }
echo "== nox-worker verify (this tree; old-*: $OLD)"
NOX_WORKER_BASELINE="$tmp/bin/nox-worker" go test -run XXX -bench BenchmarkVerifyHostileProcess \
	-benchtime "${BENCHTIME:-20x}" ./cmd/nox-worker | show
echo "== supervisor verify job (this tree; old-*: $OLD)"
CYBER_SUPERVISOR_BASELINE="$tmp/bin/cyber-supervisor" REQUIRE_ISOLATION=1 go test -run XXX \
	-bench BenchmarkHostileVerifyJob -benchtime "${BENCHTIME:-20x}" ./integration | show
echo "== in process: streamed (ns/op) against decompressed whole (old-ns/op)"
go test -run XXX -bench BenchmarkVerifyArtifact -benchtime "${BENCHTIME_INPROC:-64x}" ./worker | show
