#!/usr/bin/env bash
# The README's first command: build, then run one job end to end with the
# embedded default store — an isolated worker proves examples/add.nox on
# inputs 3 and 5, the supervisor verifies the certificate itself and
# records the acceptance. Extra arguments go to `cyber-supervisor run`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
exec bin/cyber-supervisor run examples/add.nox --op prove --input-values 3,5 "$@"
