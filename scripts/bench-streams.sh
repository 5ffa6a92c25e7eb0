#!/usr/bin/env bash
# What a hostile worker's connection and silence cost the supervisor
# (issue #26, items 3 and 5), for two builds side by side, measured from
# outside the processes (integration BenchmarkHostileStreams; root,
# isolation): a daemon's resident set growth over one job whose worker
# sends one 1 GiB StdioData message, or 10^6 ConnInfo messages, through
# the streams go-plugin's client opens (peak and after the job), the
# job's time, and the wall time of `run --time T` whose worker completes
# its handshake and never answers (T: BENCH_SILENT_TIME, default 10s).
# OLD's cyber-supervisor is built from the revision and run alternately
# with the work tree's (old-* metrics); the hostile worker is the work
# tree's.
#
#   scripts/bench-streams.sh [OLD]
#
# OLD defaults to 01c3209, the last commit before the bounds.
set -euo pipefail
cd "$(dirname "$0")/.."
OLD="${1:-01c3209}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
git archive "$OLD" | tar -x -C "$tmp"
(cd "$tmp" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$tmp/bin/cyber-supervisor" ./cmd/cyber-supervisor)
echo "== this tree; old-*: $OLD"
CYBER_SUPERVISOR_BASELINE="$tmp/bin/cyber-supervisor" BENCH_SILENT_TIME="${BENCH_SILENT_TIME:-10s}" REQUIRE_ISOLATION=1 \
	go test -run XXX -bench BenchmarkHostileStreams -benchtime "${BENCHTIME:-2x}" -timeout 30m ./integration |
	grep -E '^(Benchmark|ok|FAIL|---)' || true
