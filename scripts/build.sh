#!/usr/bin/env bash
# Builds the three binaries into bin/, all static. The worker and the
# supervisor without cgo: the worker's jail holds that one file and nothing
# it could load. sandbox-gate with cgo (gcc and a static C library, musl
# when musl-gcc is installed; see build-gate.sh): its C init runs from an
# ELF constructor before any Go runtime starts, which takes about 2 ms off
# every isolated launch. internal/testbin builds the same way for the
# tests.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bin
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o bin/nox-worker ./cmd/nox-worker
# -buildvcs=auto: `cyber-supervisor version` names the revision it was
# built from (a clone stamps it, whatever GOFLAGS says).
CGO_ENABLED=0 go build -trimpath -buildvcs=auto -ldflags="-s -w" -o bin/cyber-supervisor ./cmd/cyber-supervisor
./scripts/build-gate.sh bin/sandbox-gate -s -w
