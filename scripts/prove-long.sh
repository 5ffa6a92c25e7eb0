#!/usr/bin/env bash
# The long proving run of issue #30: one job of the corpus's spin loop
# (noxrunner/cert/testdata/corpus/spin.nox; or its hash chain, whose
# certificate does not compress: --program hashchain) executed, proved (profile v2,
# streamed) and verified end to end through a supervisor daemon of this
# tree's binaries, each under one memory limit, printing for each phase
# the worker's wall time, CPU time and peak memory (its cgroup's, from
# the job's telemetry) and the daemon's (its CPU time and peak RSS over
# the phase: /proc/PID/stat and VmHWM, reset between phases), then the
# certificate's sizes (compressed; uncompressed when the zstd command is
# there) and bytes per reduction. The verify job names the certificate
# by reference (--artifact-by-ref: stored once in the home's
# certificates/, read by the worker through a feed and by the daemon
# from its file, never held whole: docs/protocol.md §2.3), so its size is
# bounded by the artifact limit and the disk, not by the spec's 48 MiB
# (hashchain at 1e8: 157 MB).
#
#   scripts/prove-long.sh [--size 1e10|1e9|1e8|1e7] [--program spin|hashchain] [--memory 128MiB] [--time 24h]
#                         [--isolation auto|required|off] [--bin DIR] [--cgroup-name NAME] [--keep DIR]
#
# --size picks spin's input d (reductions 24·2^d − 14): 1e7 is d=19
# (12,582,898: the smoke size, TestProveLongScript), 1e8 d=22
# (100,663,282), 1e9 d=26 (1,610,612,722), 1e10 d=29 (12,884,901,874:
# hours on a shared 2-core host). --program hashchain takes the hash
# chain's d for the size instead (reductions about 51·2^d: 1e7 is d=17,
# 1e8 d=21, 1e9 d=24, 1e10 d=28); its certificate is about 1.46 bytes a
# reduction compressed, so at 1e8 (157 MB) it is larger than the default
# --memory: the run shows a jailed worker's certificate goes to disk.
# --bin holds cyber-supervisor,
# nox-worker and sandbox-gate (default: scripts/build.sh's bin/, built
# when missing). --keep keeps the home and the certificate there.
# Jailed workers (--isolation required or auto as root) need root and
# cgroups. The daemon's figures include its own start; a phase's are
# the delta over it.
set -euo pipefail
cd "$(dirname "$0")/.."
size=1e10 program=spin memory=128MiB wall=24h isolation=auto bin="" cgname="" keep=""
while [ $# -gt 0 ]; do
	case "$1" in
	--size) size="$2"; shift 2 ;;
	--program) program="$2"; shift 2 ;;
	--memory) memory="$2"; shift 2 ;;
	--time) wall="$2"; shift 2 ;;
	--isolation) isolation="$2"; shift 2 ;;
	--bin) bin="$2"; shift 2 ;;
	--cgroup-name) cgname="$2"; shift 2 ;;
	--keep) keep="$2"; shift 2 ;;
	*) echo "usage: $0 [--size 1e10|1e9|1e8|1e7] [--program spin|hashchain] [--memory M] [--time T] [--isolation I] [--bin DIR] [--cgroup-name N] [--keep DIR]" >&2; exit 2 ;;
	esac
done
case "$program:$size" in
spin:1e7) d=19 ;;
spin:1e8) d=22 ;;
spin:1e9) d=26 ;;
spin:1e10) d=29 ;;
hashchain:1e7) d=17 ;;
hashchain:1e8) d=21 ;;
hashchain:1e9) d=24 ;;
hashchain:1e10) d=28 ;;
spin:* | hashchain:*) echo "prove-long.sh: --size is 1e7, 1e8, 1e9 or 1e10" >&2; exit 2 ;;
*) echo "prove-long.sh: --program is spin or hashchain" >&2; exit 2 ;;
esac
if [ -z "$bin" ]; then
	bin=bin
	[ -x bin/cyber-supervisor ] && [ -x bin/nox-worker ] || scripts/build.sh >&2
fi
sup="$bin/cyber-supervisor" worker="$bin/nox-worker"
for b in "$sup" "$worker"; do
	[ -x "$b" ] || { echo "prove-long.sh: no $b" >&2; exit 2; }
done
work="${keep:-$(mktemp -d)}"
mkdir -p "$work"
home="$work/home"
mkdir -p "$home"
daemon=""
cleanup() {
	if [ -n "$daemon" ]; then
		kill "$daemon" 2>/dev/null || true
		wait "$daemon" 2>/dev/null || true
	fi
	[ -z "$keep" ] && rm -rf "$work"
	return 0
}
trap cleanup EXIT
serve=("$sup" --home "$home" --log-level warn serve --worker "$worker" --isolation "$isolation" --slots 1)
[ -n "$cgname" ] && serve+=(--cgroup-name "$cgname")
"${serve[@]}" 2>"$work/daemon.log" &
daemon=$!
# daemon_alive: the daemon still runs; otherwise its log, and the run
# fails (a run without it would be a one-shot's, measured as if the
# daemon's).
daemon_alive() {
	kill -0 "$daemon" 2>/dev/null && return 0
	echo "prove-long.sh: the daemon exited:" >&2
	cat "$work/daemon.log" >&2
	exit 1
}
for _ in $(seq 200); do
	daemon_alive
	[ -S "$home/supervisor.sock" ] && "$sup" --home "$home" list >/dev/null 2>&1 && break
	sleep 0.1
done

ticks=$(getconf CLK_TCK)
# daemon_cpu: the daemon's user+system CPU so far, in ms.
daemon_cpu() { awk -v t="$ticks" '{ sub(/^.*\) /, ""); printf "%d", ($12 + $13) * 1000 / t }' "/proc/$daemon/stat"; }
daemon_peak() { awk '/^VmHWM:/ { print $2 }' "/proc/$daemon/status"; }
reset_peak() { echo 5 >"/proc/$daemon/clear_refs" 2>/dev/null || true; }
# num FIELD FILE: a decimal-string field of a JSON result.
num() { sed -n "s/.*\"$1\":\"\\([0-9]*\\)\".*/\\1/p" "$2" | head -1; }
mib() { awk -v b="$1" 'BEGIN { if (b + 0 == b && b != "") printf "%.1f", b / 1048576; else print "-" }'; }
secs() { awk -v m="$1" 'BEGIN { if (m + 0 == m && m != "") printf "%.2f", m / 1000; else print "-" }'; }

budget=100000000000
prog=noxrunner/cert/testdata/corpus/$program.nox
cert=""
echo "# $program($d), size $size, --memory $memory, isolation $isolation"
printf "%-8s %-6s %14s %10s %10s %12s %10s %12s\n" phase result reductions "wall s" "worker cpu" "worker MiB" "daemon cpu" "daemon MiB"
for phase in execute prove verify; do
	args=(--home "$home" run "$prog" --input-values "$d" --budget $budget --memory "$memory" --time "$wall"
		--artifact-limit 64GiB --format json --job-id "long-$phase")
	case "$phase" in
	execute) args+=(--op execute) ;;
	prove) args+=(--op prove --profile v2) ;;
	verify) args+=(--op verify --artifact "$cert" --artifact-by-ref) ;;
	esac
	daemon_alive
	reset_peak
	c0=$(daemon_cpu)
	out="$work/$phase.json"
	status=ok
	"$sup" "${args[@]}" >"$out" 2>"$work/$phase.err" || status=$(sed -n 's/.*"code":"\([a-z_]*\)".*/\1/p' "$out" | head -1)
	c1=$(daemon_cpu)
	printf "%-8s %-6s %14s %10s %10s %12s %10s %12s\n" "$phase" "${status:-fail}" "$(num reductions "$out")" \
		"$(secs "$(num wall_time_ms "$out")")" "$(secs "$(num cpu_time_ms "$out")")" "$(mib "$(num peak_memory_bytes "$out")")" \
		"$(secs $((c1 - c0)))" "$(mib $(($(daemon_peak) * 1024)))"
	if [ "$status" != ok ]; then
		cat "$work/$phase.err" >&2
		exit 1
	fi
	if [ "$phase" = prove ]; then
		cert=$(sed -n 's/.*"certificate_path":"\([^"]*\)".*/\1/p' "$out")
		[ -f "$cert" ] || { echo "prove-long.sh: no certificate at '$cert'" >&2; exit 1; }
	fi
done
reductions=$(num reductions "$work/prove.json")
z=$(stat -c %s "$cert")
r=-
command -v zstd >/dev/null && r=$(zstd -dc "$cert" | wc -c)
echo "# certificate: $z bytes compressed, $r uncompressed; per reduction: $(awk -v z="$z" -v n="$reductions" 'BEGIN { printf "%.6f", z / n }') compressed, $(awk -v r="$r" -v n="$reductions" 'BEGIN { if (r + 0 == r) printf "%.3f", r / n; else print "-" }') uncompressed"
