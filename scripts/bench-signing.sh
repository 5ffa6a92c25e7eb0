#!/usr/bin/env bash
# The neuron's signatures, long runs (docs/fencing.md, "Signatures"):
# the cross-check against btcec and the spec's transcription on many
# random keys, the cost of signing and verifying beside btcec's, and the
# timing of signatures whose nonces have 0 to 4 zero bytes, constant-time
# signer and btcec side by side (ns-per-zero-byte, Welch's t: |t| > 4.5
# is a leak). CI runs each once (scripts/test.sh); ROUNDS, SAMPLES and
# CROSSCHECKS make them longer.
set -euo pipefail
cd "$(dirname "$0")/.."
NEURON_CROSSCHECKS="${CROSSCHECKS:-2000}" go test -count=1 -run 'TestSignMatchesBtcec|TestBtcecSignaturesVerify|TestBIP340Vectors' -v ./supervisor/neuron |
	grep -E '^(--- |ok|FAIL)'
go test -c -o /tmp/neuron-bench.test ./supervisor/neuron
trap 'rm -f /tmp/neuron-bench.test' EXIT
cd supervisor/neuron
/tmp/neuron-bench.test -test.run XXX -test.bench 'BenchmarkSign$|BenchmarkSignBtcec|BenchmarkVerify|BenchmarkBaseMult' -test.benchtime 3000x | grep -E '^Benchmark'
for _ in $(seq "${ROUNDS:-3}"); do
	echo "== load $(cut -d' ' -f1-3 /proc/loadavg)"
	/tmp/neuron-bench.test -test.run XXX -test.bench BenchmarkSigningTimeLeak -test.benchtime "${SAMPLES:-20000}x" | grep -E '^Benchmark'
done
