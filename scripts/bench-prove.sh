#!/usr/bin/env bash
# The proving benchmark of issue #30: the corpus of
# noxrunner/cert/testdata/corpus (corpus.txt) through the real nox-worker
# binary as whole processes (run, prove, verify), measuring each
# process's wall and CPU time (bash's, to the millisecond) and its peak
# RSS (GNU time). With --base, a second
# binary runs the same cases alternately with the first (same load), and
# both appear side by side in one table.
#
#   scripts/bench-prove.sh [--sizes 1e6,1e7] [--programs spin,tree] [--base OLD-NOX-WORKER] [--head NOX-WORKER]
#                          [--profile v2|v1] [--base-profile v2|v1|none] [--verify-procs N]
#
# --sizes defaults to 1e6 (1e5 is the smoke size; 1e8 takes minutes and
# GiBs). --head defaults to a build of the work tree. calls.nox is not in
# corpus.txt: the public profile refuses call (TestCorpus).
#
# --profile is the certificate profile head proves in (default v2, the
# streamed one); --base-profile the one base proves in (default: the
# same; "none" for a binary older than --profile, which proves v1 only).
# With --base set to the same binary, --profile v2 --base-profile v1
# puts the two profiles side by side in one run.
#
# --verify-procs N runs each verify with GOMAXPROCS=N: at 1 its CPU time
# is the single-core figure (the verifier spreads its digest checks over
# the cores, which lowers its wall time and adds to its CPU time).
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=1e6 programs="" base="" head="" profile=v2 base_profile=""
verify_env=()
while [ $# -gt 0 ]; do
	case "$1" in
	--sizes) sizes="$2"; shift 2 ;;
	--programs) programs="$2"; shift 2 ;;
	--base) base="$2"; shift 2 ;;
	--head) head="$2"; shift 2 ;;
	--profile) profile="$2"; shift 2 ;;
	--base-profile) base_profile="$2"; shift 2 ;;
	--verify-procs) verify_env=(env "GOMAXPROCS=$2"); shift 2 ;;
	*) echo "usage: $0 [--sizes S,S] [--programs P,P] [--base BIN] [--head BIN] [--profile v2|v1] [--base-profile v2|v1|none] [--verify-procs N]" >&2; exit 2 ;;
	esac
done
base_profile=${base_profile:-$profile}
for p in "$profile" "$base_profile"; do
	case "$p" in v1 | v2 | none) ;; *) echo "bench-prove.sh: a profile is v2, v1 or none" >&2; exit 2 ;; esac
done
[ "$profile" = none ] && { echo "bench-prove.sh: --profile none is for --base-profile only" >&2; exit 2; }
# profile_args BIN-NAME: the --profile flag of that binary's prove.
profile_args() {
	local p="$profile"
	[ "$1" = base ] && p="$base_profile"
	[ "$p" != none ] && echo "--profile $p"
	return 0
}
# limit_args BIN: --artifact-limit 64GiB when BIN takes it (a binary
# older than the flag proves and verifies at most 32 MiB: the hash chain
# and the tree at 1e8 then fail artifact_too_large).
limit_args() {
	if "$1" prove --help 2>/dev/null | grep -q -- --artifact-limit; then
		echo "--artifact-limit 64GiB"
	fi
}
if [ ! -x /usr/bin/time ] || ! /usr/bin/time -f %M true >/dev/null 2>&1; then
	echo "bench-prove.sh: GNU time (/usr/bin/time -f) is needed for the peak RSS" >&2
	exit 2
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if [ -z "$head" ]; then
	head="$tmp/nox-worker"
	CGO_ENABLED=0 go build -trimpath -o "$head" ./cmd/nox-worker
fi
corpus=noxrunner/cert/testdata/corpus
budget=10000000000
bins=(head)
[ -n "$base" ] && bins=(base head)
# Each binary's --artifact-limit arguments (limit_args), asked once.
declare -A limit
limit[head]=$(limit_args "$head")
[ -n "$base" ] && limit[base]=$(limit_args "$base")

# measure OUT CMD...: runs CMD, stdout to OUT.json; prints "seconds KiB
# cpu-seconds" (wall, peak RSS, user + system time of the process: on a
# shared machine the wall time counts the waits for a CPU, the CPU time
# does not, so the ratios to execute are given in both). The times are
# bash's (EPOCHREALTIME, and `times` for the children's CPU, to the
# millisecond), not GNU time's: its steps of 10 ms made a smoke-size
# execute 0.00 s, and its ratios no numbers.
measure() {
	local out="$1"
	shift
	local start=$EPOCHREALTIME
	if ! (
		/usr/bin/time -f "%M" -o "$out.time" "$@" --format json >"$out.json" 2>/dev/null
		rc=$?
		times >"$out.cpu"
		exit $rc
	); then
		local code
		code=$(sed -n 's/.*"code":"\([a-z_]*\)".*/\1/p' "$out.json")
		echo "FAIL:${code:-exit}"
		return
	fi
	local end=$EPOCHREALTIME
	# times' second line is the children's user and system time, as
	# 0m1.234s 0m0.056s.
	awk -v s="$start" -v e="$end" -v k="$(tail -1 "$out.time")" '
		NR == 2 {
			cpu = 0
			for (i = 1; i <= 2; i++) {
				split($i, t, "m")
				cpu += t[1] * 60 + t[2]
			}
			printf "%.3f %s %.3f\n", e - s, k, cpu
		}' "$out.cpu"
}
# ratio A B: A / B to two places, "-" unless both are numbers.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a + 0 == a) printf "%.2f", a / b; else print "-" }'; }
field() { sed -n "s/.*\"$2\":\"\\{0,1\\}\\([0-9]*\\).*/\\1/p" "$1.json"; }

echo "# head proves in $profile${base:+, base in $base_profile}${verify_env[1]:+; verify with ${verify_env[1]}}"
printf "%-4s %-10s %-4s %11s %9s %9s %7s %7s %9s %9s %7s %7s %9s %9s %9s\n" \
	bin program size reductions "exec s" "prove s" "x exec" "cpu x" "prove MiB" "verify s" "x exec" "cpu x" "verif MiB" "zstd B/r" "raw B/r"
grep -v '^#' "$corpus/corpus.txt" | while read -r prog size input _ _; do
	[ -z "$prog" ] && continue
	[[ ",$sizes," == *",$size,"* ]] || continue
	[ -n "$programs" ] && [[ ",$programs," != *",$prog,"* ]] && continue
	for b in "${bins[@]}"; do
		bin="$head"
		[ "$b" = base ] && bin="$base"
		o="$tmp/$b-$prog-$size"
		cert="$o.cnxt.zst"
		read -r es _ ec < <(measure "$o-run" "$bin" run "$corpus/$prog.nox" --input-values "$input" --budget $budget)
		red=$(field "$o-run" reductions)
		# shellcheck disable=SC2046,SC2086
		read -r ps pk pc < <(measure "$o-prove" "$bin" prove "$corpus/$prog.nox" --input-values "$input" --budget $budget --output "$cert" --force $(profile_args "$b") ${limit[$b]})
		vs=- vk=- zb=- rb=- px=- vx=- vcx=-
		if [ -f "$cert" ]; then
			# shellcheck disable=SC2086
			read -r vs vk vc < <(measure "$o-verify" "${verify_env[@]}" "$bin" verify "$cert" --budget $budget ${limit[$b]})
			z=$(stat -c %s "$cert")
			if command -v zstd >/dev/null; then
				r=$(zstd -dc "$cert" | wc -c)
				rb=$(awk -v r="$r" -v n="$red" 'BEGIN { printf "%.3f", r / n }')
			fi
			zb=$(awk -v z="$z" -v n="$red" 'BEGIN { printf "%.4f", z / n }')
			vx=$(ratio "$vs" "$es")
			vcx=$(ratio "$vc" "$ec")
			vk=$(awk -v k="$vk" 'BEGIN { if (k + 0 == k) printf "%.1f", k / 1024; else print k }')
		fi
		px=$(ratio "$ps" "$es")
		pcx=$(ratio "${pc:--}" "$ec")
		pk=$(awk -v k="${pk:--}" 'BEGIN { if (k + 0 == k) printf "%.1f", k / 1024; else print "-" }')
		printf "%-4s %-10s %-4s %11s %9s %9s %7s %7s %9s %9s %7s %7s %9s %9s %9s\n" \
			"$b" "$prog" "$size" "$red" "$es" "$ps" "$px" "$pcx" "$pk" "$vs" "$vx" "$vcx" "$vk" "$zb" "$rb"
		rm -f "$cert"
	done
done
