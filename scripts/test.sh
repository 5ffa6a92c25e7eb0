#!/usr/bin/env bash
# The project's test command (README "Quick start", and what CI runs).
#
# Isolation tests need root and cgroups. REQUIRE_ISOLATION=1 (the default
# here) turns a missing capability into a failure instead of a skip; an
# unprivileged developer runs `REQUIRE_ISOLATION=0 scripts/test.sh` and
# sees every skipped test named with its reason in -v output.
set -euo pipefail
cd "$(dirname "$0")/.."
export REQUIRE_ISOLATION="${REQUIRE_ISOLATION:-1}"
# The etcd tests (the cluster store, several hosts, the fault test) run a
# real etcd built from the module (internal/etcdtest): they never skip,
# and with REQUIRE_ETCD=1 the fault test fails where it cannot make its
# network namespaces instead of skipping.
export REQUIRE_ETCD="${REQUIRE_ETCD:-1}"
# phase NAME CMD...: runs CMD and prints its wall time and CPU time on a
# line of its own, so a slow run says where its time went
# (docs/testing.md, "Figures"). Wall time moves with the machine's load;
# CPU time (user + system of every process of the phase) much less.
phase() {
	local name=$1 start=$SECONDS cpu
	cpu=$(cpu_ticks)
	shift
	"$@"
	echo "phase $name: $((SECONDS - start)) s, $((($(cpu_ticks) - cpu) / $(getconf CLK_TCK))) s CPU"
}
# cpu_ticks is the user + system time of this shell's ended children,
# theirs included, in clock ticks (proc(5): cutime and cstime, fields 16
# and 17 of /proc/PID/stat; $$ is this shell even in a subshell).
cpu_ticks() {
	local stat fields
	read -r stat <"/proc/$$/stat"
	# Fields from the third on: the second, (comm), may hold spaces.
	read -r -a fields <<<"${stat##*) }"
	echo $((fields[13] + fields[14]))
}
# bench_packages lists the packages that declare a benchmark.
bench_packages() {
	grep -rl --include='*_test.go' '^func Benchmark' . | xargs -n1 dirname | sort -u
}
# The host tools some tests use (musl-tools, bubblewrap, iproute2,
# util-linux), installed when missing.
phase setup ./scripts/test-setup.sh
phase vet go vet ./...
# ARCHITECTURE.md names files and functions: each must still exist.
phase check-architecture ./scripts/check-architecture.sh
# The tree is Linux-only (README, "Platforms"); its portable core, the VM
# and the contract types, builds anywhere, and stays so.
phase darwin-build env GOOS=darwin go build ./noxrunner/... ./protocol/...
# The supervisor with its crash points (integration/TestFencingCrashSteps
# builds it): vetted as well.
phase vet-crashpoints go vet -tags crashpoints ./supervisor/fencing
# staticcheck, pinned (staticcheck.conf says which checks and why); the
# module proxy serves it and the Go build cache keeps it between runs.
phase staticcheck go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
# -race everywhere: the supervisor, sandbox and limits code is concurrent,
# and the engine's tests are cheap enough to share the run. -short is
# the developer's tier (README).
phase go-test-race go test -race -timeout 30m "$@" ./...
# Every benchmark once, a smoke run (long runs: scripts/bench.sh), in a
# run of its own over the packages that have benchmarks: with -bench, go
# test runs each package's tests only after every build and one package
# at a time (cmd/go: "Force benchmarks to run in serial"), which made the
# whole race run end to end, 773 s for 734 s of package time.
# So the packages run two at a time, each in a go test of its own taken
# from one queue (split into two fixed halves instead, one half held the
# four slow packages: 153 s for 182 s CPU), each one's output printed in
# order at the end.
bench_smoke() {
	local dir pkg rc=0 running=0 n=0 i
	dir=$(mktemp -d)
	for pkg in $(bench_packages); do
		if ((running == 2)); then
			wait -n || rc=1
			running=$((running - 1))
		fi
		go test -race -run '^$' -bench . -benchtime 1x "$@" "$pkg" >"$dir/$n" 2>&1 &
		running=$((running + 1))
		n=$((n + 1))
	done
	while ((running > 0)); do
		wait -n || rc=1
		running=$((running - 1))
	done
	for ((i = 0; i < n; i++)); do
		cat "$dir/$i"
	done
	rm -rf "$dir"
	return $rc
}
# Every fuzz target for a few seconds, a smoke run (long runs:
# scripts/fuzz.sh), beside the benchmark smoke (a phase of their own
# each took 141 s and 135 s on 2 cores for 210 s and 226 s of CPU: the
# benchmark smoke is mostly linking, the fuzz smoke mostly waiting on
# 3-second runs); its output is printed after the benchmarks'.
fuzz_smoke() {
	env FUZZTIME="${FUZZTIME:-3s}" FUZZMINIMIZETIME="${FUZZMINIMIZETIME:-0}" PROPERTY_CHECKS="${PROPERTY_CHECKS:-0}" ./scripts/fuzz.sh
}
smokes() {
	local log fuzz rc=0
	log=$(mktemp)
	fuzz_smoke >"$log" 2>&1 &
	fuzz=$!
	# In a subshell: its wait -n must not reap the fuzz smoke.
	(bench_smoke "$@") || rc=1
	wait "$fuzz" || rc=1
	cat "$log"
	rm -f "$log"
	return $rc
}
phase bench-and-fuzz-smoke smokes "$@"
# Every alteration of the store file's fencing records, without the race
# detector (under it the test alters one field of each record).
phase tampered-records go test -run '^TestTamperedRecordsAreRefused$' -timeout 10m "$@" ./supervisor/fencing
# The portable twins of field's and hemera's assembly, built as on a CPU
# without it (the default run compares both where the CPU has it).
phase purego go test -tags purego "$@" ./noxrunner/field ./noxrunner/hemera
# The gate links musl when musl-gcc is installed (scripts/build-gate.sh);
# its isolation tests run once more against a gate that links glibc.
if command -v musl-gcc >/dev/null 2>&1; then
	phase gate-glibc env GATE_LIBC=system go test -race -timeout 10m "$@" ./sandbox
fi
echo "phase total: $SECONDS s, $(($(cpu_ticks) / $(getconf CLK_TCK))) s CPU"
