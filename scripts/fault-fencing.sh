#!/usr/bin/env bash
# The host-act crash tests at length (docs/fencing.md, "Crash
# semantics"): RUNS (default 20) rounds of the step test (serve stopped
# at each step of an act's path and killed with SIGKILL, or let go on
# with SIGTERM) and of the random SIGKILL test (50 invocations, at least
# 20 kills each round). As root (cgroups, namespaces). Stops at the
# first failing round.
set -euo pipefail
cd "$(dirname "$0")/.."
export REQUIRE_ISOLATION=1
runs="${RUNS:-20}"
for i in $(seq 1 "$runs"); do
	echo "== round $i of $runs"
	go test -count=1 -timeout 30m -v -run '^(TestFencingCrashSteps|TestFencingCrashNoDuplicateEffects)$' ./integration/ 2>&1 |
		grep -E '^(=== RUN|--- |ok|FAIL|PASS)|fencing_(crash|steps)_test.go'
done
