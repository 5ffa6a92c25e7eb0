#!/usr/bin/env bash
# The cluster's operator-fault test at full length (integration
# TestClusterServeFaults, docs/cluster.md "How it is tested"): three serve
# daemons on one etcd, and in each round one of a bad day's faults while
# clients submit (also the same job to two hosts at once), cancel and
# collect through random hosts: SIGKILL or SIGTERM of a daemon at a
# random moment (also during its start, and while the others recover
# it), SIGSTOP of a daemon past its lease, etcd paused or killed and
# restarted, a SIGTERM while etcd is paused. After each round every job
# is checked against the promises (at most one acceptance, attempts
# within the policy, nothing lost, nothing ended changes, a woken host
# records nothing for its expired boot), and a cleanly stopped daemon
# must leave nothing of its workers. FAULT_ROUNDS (default 30) rounds
# per run, RUNS (default 5) runs, each with a new seed (printed:
# FAULT_SEED=N replays its choices). As root (network namespaces,
# cgroups). Stops at the first failing run.
set -euo pipefail
cd "$(dirname "$0")/.."
export REQUIRE_ISOLATION=1 REQUIRE_ETCD=1
export FAULT_ROUNDS="${FAULT_ROUNDS:-30}"
runs="${RUNS:-5}"
for i in $(seq 1 "$runs"); do
	echo "== run $i of $runs"
	go test -count=1 -timeout 60m -run '^TestClusterServeFaults$' -v ./integration/ 2>&1 |
		grep -E '^(--- |ok|FAIL|PASS)|cluster_serve_fault_test.go'
done
