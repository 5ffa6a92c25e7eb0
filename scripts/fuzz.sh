#!/usr/bin/env bash
# Runs every fuzz target for FUZZTIME each (default 60s). CI runs it as a
# smoke test with a few seconds per target (scripts/test.sh); long runs
# are for people: FUZZTIME=10m scripts/fuzz.sh. New crashers land in the
# package's testdata/fuzz and become regression cases of `go test`.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-60s}"
# How long to minimize an input (a crasher, or one that adds coverage).
# Smoke runs pass 0, which turns minimization off: Go's fuzzer reports
# "context deadline exceeded" as a failure when the fuzz time ends while
# it minimizes a new interesting input, which a target whose every run
# starts a process (FuzzCInitAgreesWithGo) hit once in four CI runs.
FUZZMINIMIZETIME="${FUZZMINIMIZETIME:-60s}"
# package path, then the targets in it
targets=(
	"./noxrunner/field FuzzArith"
	"./noxrunner/hemera FuzzPermuteTwins FuzzPermute2"
	"./noxrunner/noun FuzzParse"
	"./noxrunner/reduce FuzzReduce"
	"./noxrunner/cert FuzzVerify FuzzVerifyResources FuzzVerifyV2"
	"./protocol FuzzJobSpec FuzzBundle FuzzInputFile FuzzDecodeTree"
	"./protocol/pluginserver FuzzDecodeRunInput FuzzConn"
	"./worker FuzzRunSpec FuzzVerifyArtifact"
	"./cmd/nox-worker FuzzDirectArgs FuzzProgramFile"
	"./artifacts FuzzDecompress FuzzDecompressor FuzzStreamDecompressor FuzzDecompressorFrom FuzzSplitName"
	"./sandbox/gate FuzzDecode"
	"./supervisor/api FuzzAPI"
	"./cmd/sandbox-gate FuzzCInitAgreesWithGo"
	"./supervisor/store/bolt FuzzDamagedStore FuzzFencingRecords"
)
# Each package's fuzz test binary is built once (go test -c -fuzz, the
# coverage-instrumented build go test -fuzz makes) and runs each of its
# targets: a go test -fuzz per target linked the binary again each time,
# 23 links for 14 packages. The binary runs in its package's dir, as go
# test runs it (testdata, and new crashers written to testdata/fuzz), with
# go test's corpus cache dir.
bins=$(mktemp -d)
log="$bins/fuzz.log"
trap 'rm -rf "$bins"' EXIT
fuzzcache="$(go env GOCACHE)/fuzz"
# fuzz_once runs one target; it fails only on a finding. Go's fuzzer
# also fails a run with a bare "context deadline exceeded" when the fuzz
# time ends while a worker is still busy with an input (seen on loaded
# machines in short smoke runs, with minimization off); such a run wrote no
# failing input and found nothing, so it is run once more.
fuzz_once() {
	local pkg=$1 name=$2 bin=$3 importpath=$4 try
	for try in 1 2; do
		if (cd "$pkg" && "$bin" -test.run XXX -test.fuzz "^${name}\$" -test.fuzztime "$FUZZTIME" \
			-test.fuzzminimizetime "$FUZZMINIMIZETIME" -test.fuzzcachedir "$fuzzcache/$importpath") >"$log" 2>&1; then
			return 0
		fi
		if [ "$try" = 1 ] && grep -q "context deadline exceeded" "$log" && ! grep -q "Failing input written" "$log"; then
			echo "fuzz $pkg $name: the fuzz time ended inside an input (no finding); running it again"
			continue
		fi
		return 1
	done
}
for i in "${!targets[@]}"; do
	read -r pkg names <<<"${targets[$i]}"
	bin="$bins/$i.test"
	importpath=$(go list -f '{{.ImportPath}}' "$pkg")
	go test -c -fuzz . -o "$bin" "$pkg"
	for name in $names; do
		echo "fuzz $pkg $name ($FUZZTIME)"
		fuzz_once "$pkg" "$name" "$bin" "$importpath" || {
			cat "$log"
			exit 1
		}
	done
done
echo "fuzz: all targets ran $FUZZTIME without a failure"
# The dispatch protocol's property test, long: PROPERTY_CHECKS random
# sequences (CI's smoke run passes 0; go test runs 100, 30 under -race).
PROPERTY_CHECKS="${PROPERTY_CHECKS:-1000}"
if [ "$PROPERTY_CHECKS" != 0 ]; then
	echo "property TestDispatchProperties ($PROPERTY_CHECKS sequences)"
	go test -run '^TestDispatchProperties$' -rapid.checks "$PROPERTY_CHECKS" -timeout 2h ./supervisor/fencing
fi
