#!/usr/bin/env bash
# Verify jobs whose artifact travels inline in the spec (5 and 32 MiB,
# the frame of an honest statement followed by noise), submitted through
# the API of a daemon whose worker lies that it verified them, against
# two builds side by side: the daemon's peak RSS growth per job (/proc
# VmHWM), its CPU (schedstat), the time from the submission to the job's
# end, and its RSS after the jobs (integration BenchmarkInlineArtifactJob;
# root, isolation). OLD's cyber-supervisor is built from the revision and
# run alternately with the work tree's; its figures are the old-*
# metrics.
#
#   scripts/bench-inline.sh [OLD]
#
# OLD defaults to d8927d5, the last commit before a verify job's spec
# was read in place and stored and sent without copies of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
OLD="${1:-d8927d5}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
git archive "$OLD" | tar -x -C "$tmp"
(cd "$tmp" && CGO_ENABLED=0 go build -trimpath -o "$tmp/bin/cyber-supervisor" ./cmd/cyber-supervisor)
CYBER_SUPERVISOR_BASELINE="$tmp/bin/cyber-supervisor" REQUIRE_ISOLATION=1 go test -run XXX \
	-bench BenchmarkInlineArtifactJob -benchtime "${BENCHTIME:-5x}" ./integration |
	grep -E '^(Benchmark|ok|FAIL|---)' || true
