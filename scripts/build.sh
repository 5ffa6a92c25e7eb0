#!/usr/bin/env bash
# Builds the two binaries into bin/. Static (CGO_ENABLED=0): the worker's
# jail holds the worker binary and nothing it could load.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bin
export CGO_ENABLED=0
go build -trimpath -ldflags="-s -w" -o bin/nox-worker ./cmd/nox-worker
go build -trimpath -ldflags="-s -w" -o bin/cyber-supervisor ./cmd/cyber-supervisor
go build -trimpath -ldflags="-s -w" -o bin/sandbox-gate ./cmd/sandbox-gate
