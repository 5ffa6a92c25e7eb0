#!/usr/bin/env bash
# Compares honest verification (and the VM) between two builds, side by
# side: the test binaries of noxrunner/cert and noxrunner/reduce are built
# from each revision and their benchmarks run alternately, ROUNDS times,
# so that both builds see the same load. Prints the median and the least
# ns/op of each benchmark per build and new/old of both (on shared,
# loaded cores the least is the run that had a core to itself).
#
#   scripts/bench-verify.sh [OLD [NEW]]
#
# OLD defaults to 447213e, the last commit before the bounded verifier of
# issue #16 (it already has BenchmarkVerify); NEW to the work tree.
set -euo pipefail
cd "$(dirname "$0")/.."
OLD="${1:-447213e}"
NEW="${2:-}"
ROUNDS="${ROUNDS:-5}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

build() { # name rev
	local dir="$tmp/$1"
	mkdir -p "$dir"
	if [ -n "$2" ]; then
		git archive "$2" | tar -x -C "$dir"
	else
		git ls-files -z --cached --others --exclude-standard | xargs -0 tar -c | tar -x -C "$dir"
	fi
	(cd "$dir" && go test -c -o "$dir/cert.test" ./noxrunner/cert && go test -c -o "$dir/reduce.test" ./noxrunner/reduce)
}
build old "$OLD"
build new "$NEW"

run() { # name
	local dir="$tmp/$1"
	(cd "$dir/noxrunner/cert" && "$dir/cert.test" -test.run XXX -test.bench 'BenchmarkVerify$|BenchmarkLoops$/verify' -test.benchtime "${BENCHTIME:-20x}")
	(cd "$dir/noxrunner/reduce" && "$dir/reduce.test" -test.run XXX -test.bench 'BenchmarkLoopsGroup|BenchmarkHashLoop' -test.benchtime "${BENCHTIME:-20x}")
}
for i in $(seq "$ROUNDS"); do
	for b in old new; do
		run "$b" | grep -E '^Benchmark' | sed "s/^/$b /" >>"$tmp/results"
	done
done
awk '
	{ name = $2; sub(/-[0-9]+$/, "", name); ns[$1 " " name] = ns[$1 " " name] " " $4; names[name] = 1 }
	function sorted(list, a,   n, i, j, t) {
		n = split(list, a, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n
	}
	function median(list,   a, n) { n = sorted(list, a); return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
	function least(list,   a) { sorted(list, a); return a[1] }
	END {
		printf "%-36s %14s %14s %8s %14s %14s %8s\n", "benchmark (ns/op)", "old median", "new median", "new/old", "old least", "new least", "new/old"
		for (name in names) {
			# A benchmark one build lacks (BenchmarkVerify/*-streamed before
			# streaming) shows its figures alone.
			o = ("old " name) in ns; n = ("new " name) in ns
			if (!o || !n) {
				printf "%-36s %14s %14s %8s %14s %14s %8s\n", name,
					o ? median(ns["old " name]) : "-", n ? median(ns["new " name]) : "-", "-",
					o ? least(ns["old " name]) : "-", n ? least(ns["new " name]) : "-", "-"
				continue
			}
			om = median(ns["old " name]); nm = median(ns["new " name])
			ol = least(ns["old " name]); nl = least(ns["new " name])
			printf "%-36s %14.0f %14.0f %8.3f %14.0f %14.0f %8.3f\n", name, om, nm, nm / om, ol, nl, nl / ol
		}
	}' "$tmp/results" | sort
