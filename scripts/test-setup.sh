#!/usr/bin/env bash
# The host tools the tests use beside Go and gcc, installed from Debian
# when they are missing (as root, where apt-get is): run by
# scripts/test.sh, so that the README's two commands are all a fresh
# machine needs. Nothing here is required to build or run the binaries.
set -euo pipefail
# need TOOL PACKAGE WHAT: install PACKAGE unless TOOL is on the PATH; WHAT
# says what happens without it.
need() {
	command -v "$1" >/dev/null 2>&1 && return 0
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get install -y -q "$2" >/dev/null 2>&1 ||
			{ apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "$2" >/dev/null 2>&1; } && return 0
	fi
	echo "test setup: $2 is not installed ($1 missing): $3" >&2
}
# musl-gcc lets sandbox-gate link musl, whose start-up is 0.3 ms cheaper
# per gate than glibc's (scripts/build-gate.sh); without it the gate links
# glibc and everything works the same.
need musl-gcc musl-tools "sandbox-gate links glibc"
# bubblewrap is the baseline of the one-shot run's benchmark
# (integration/oneshot_bench_test.go); without it that benchmark's smoke
# run skips, saying so.
need bwrap bubblewrap "the one-shot benchmark's smoke run skips"
# The cluster fault test makes network namespaces and veth pairs (ip,
# iproute2) and starts processes in them (nsenter, util-linux).
need ip iproute2 "the cluster fault test fails (REQUIRE_ETCD=1) or skips"
need nsenter util-linux "the cluster fault test fails (REQUIRE_ETCD=1) or skips"
# scripts/bench-prove.sh measures each process's peak RSS with GNU time
# and the raw certificate's size with zstd (TestBenchProveScript runs it
# at the smoke size).
need /usr/bin/time time "TestBenchProveScript skips"
need zstd zstd "bench-prove.sh prints no raw certificate size"
# The dashboard's browser test (integration/dashboard_browser_test.go)
# drives Debian's chromium headless through chromedp; without it that
# test fails under REQUIRE_ISOLATION=1 and skips elsewhere.
need chromium chromium "the dashboard's browser test fails (REQUIRE_ISOLATION=1) or skips"
