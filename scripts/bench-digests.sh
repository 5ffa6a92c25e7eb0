#!/usr/bin/env bash
# The digest attacks of issue #26 (item 6) at the issue's sizes against
# two builds side by side (internal/hostile/digests.go: 2^24 dense axis-0
# steps over 146 nodes, a 23 KB artifact; 32,768 hashes of operands that
# share a list of 524,288 pairs, 819,410 nodes):
#   - in process, at GOMAXPROCS 1, 2 and 16: what one verification
#     allocates and its peak heap per table node, and its CPU
#     (cert BenchmarkVerifyDigestAttacks; OLD's cert test binary is built
#     with this tree's attack builders and benchmark laid over it, since
#     it has neither), the two binaries run alternately ROUNDS times;
#   - as supervisor verify jobs through daemons whose worker lies that it
#     verified them, at GOMAXPROCS 1, 2 and 16: the daemon's peak RSS
#     growth, its CPU and the time from produced to the end, the axis-0
#     attack in a job of 64 MiB as in the issue (integration
#     BenchmarkHostileDigestJobs, OLD's cyber-supervisor as the old-*
#     metrics; root, isolation).
#
#   scripts/bench-digests.sh [OLD]
#
# PARTS=inproc or PARTS=jobs runs one of the two (default: both).
# OLD defaults to 48de0b7, the last commit before the deduplicated checks
# and the shared digests.
set -euo pipefail
cd "$(dirname "$0")/.."
OLD="${1:-48de0b7}"
ROUNDS="${ROUNDS:-3}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export HOSTILE_DIGEST_SIZE=issue

mkdir -p "$tmp/old" "$tmp/new"
git archive "$OLD" | tar -x -C "$tmp/old"
cp internal/hostile/*.go "$tmp/old/internal/hostile/"
cp noxrunner/cert/digestbench_linux_test.go noxrunner/cert/scale_test.go noxrunner/cert/scale_race_test.go "$tmp/old/noxrunner/cert/"
git ls-files -z --cached --others --exclude-standard | xargs -0 tar -c | tar -x -C "$tmp/new"
for b in old new; do
	(cd "$tmp/$b" && go test -c -o "$tmp/$b/cert.test" ./noxrunner/cert)
done
PARTS="${PARTS:-inproc jobs}"
if [[ " $PARTS " == *" inproc "* ]]; then
echo "== in process (old: $OLD), medians of $ROUNDS"
for i in $(seq "$ROUNDS"); do
	for b in old new; do
		(cd "$tmp/$b/noxrunner/cert" && "$tmp/$b/cert.test" -test.run XXX -test.bench BenchmarkVerifyDigestAttacks \
			-test.benchtime 1x) | grep -E '^Benchmark' | sed "s/^/$b /" >>"$tmp/results"
	done
done
awk '
	{
		name = $2
		for (i = 4; i + 1 <= NF; i += 2) { v[$1 " " name " " $(i + 1)] = v[$1 " " name " " $(i + 1)] " " $i; units[$(i + 1)] = 1 }
		names[name] = 1
	}
	function median(list,   a, n, i, j, t) {
		n = split(list, a, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	END {
		printf "%-56s %-18s %12s %12s\n", "benchmark", "metric", "old", "new"
		for (name in names) for (u in units) {
			if (!(("new " name " " u) in v)) continue
			printf "%-56s %-18s %12.1f %12.1f\n", name, u, median(v["old " name " " u]), median(v["new " name " " u])
		}
	}' "$tmp/results" | sort
fi

[[ " $PARTS " == *" jobs "* ]] || exit 0
echo "== supervisor verify jobs (this tree; old-*: $OLD)"
(cd "$tmp/old" && CGO_ENABLED=0 go build -trimpath -o "$tmp/old/cyber-supervisor" ./cmd/cyber-supervisor)
CYBER_SUPERVISOR_BASELINE="$tmp/old/cyber-supervisor" REQUIRE_ISOLATION=1 go test -run XXX \
	-bench BenchmarkHostileDigestJobs -benchtime "${BENCHTIME:-3x}" -timeout 60m ./integration |
	grep -E '^(Benchmark|ok|FAIL|---)' | tr '\t' '\n' | sed 's/^ *//' | grep -v '^$'
