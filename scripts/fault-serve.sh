#!/usr/bin/env bash
# The one-home fault test at full length (integration TestServeFaults):
# one daemon stopped again and again (SIGTERM, SIGINT, SIGKILL at random
# moments, also during its start and recovery) while jobs are submitted,
# cancelled and collected; after each start, every job is checked against
# the seed's promises (exactly once, at most one accepted attempt, retries
# as the policy says, nothing ended changes), and after each clean stop
# nothing of a worker may be left. FAULT_ROUNDS (default 40) rounds per
# run, RUNS (default 5) runs, each with a new seed (printed: FAULT_SEED=N
# replays one). As root (cgroups, namespaces). Stops at the first failing
# run.
set -euo pipefail
cd "$(dirname "$0")/.."
export REQUIRE_ISOLATION=1
export FAULT_ROUNDS="${FAULT_ROUNDS:-40}"
runs="${RUNS:-5}"
for i in $(seq 1 "$runs"); do
	echo "== run $i of $runs"
	go test -count=1 -timeout 60m -run '^TestServeFaults$' -v ./integration/ 2>&1 |
		grep -E '^(--- |ok|FAIL|PASS)|serve_fault_test.go|leak'
done
