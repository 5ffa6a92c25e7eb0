#!/usr/bin/env bash
# The cluster fault test at full length (docs/cluster.md, "How it is
# tested"): one etcd and three serve daemons, a nemesis for
# FAULT_SECONDS (default 60) while FAULT_JOBS (default 300) jobs are
# submitted, RUNS (default 10) times. Each run's history is kept in
# FAULT_HISTORY (default ./fault-history). As root (network namespaces,
# cgroups). Stops at the first failing run.
set -euo pipefail
cd "$(dirname "$0")/.."
export REQUIRE_ISOLATION=1 REQUIRE_ETCD=1
export FAULT_SECONDS="${FAULT_SECONDS:-60}" FAULT_JOBS="${FAULT_JOBS:-300}"
export FAULT_HISTORY="${FAULT_HISTORY:-$PWD/fault-history}"
runs="${RUNS:-10}"
for i in $(seq 1 "$runs"); do
	echo "== run $i of $runs"
	go test -count=1 -timeout 30m -run '^TestClusterFaults$' -v ./integration/ 2>&1 |
		grep -E '^(=== RUN|--- |ok|FAIL|PASS)|cluster_(check|fault)_test.go'
done
