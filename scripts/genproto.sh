#!/bin/sh
# Regenerates protocol/workerpb/*.pb.go from protocol/workerpb/worker.proto.
# The generated files are committed; run this after editing the .proto and
# commit the result. Versions are pinned so that regeneration is a no-op
# when nothing changed.
set -eu

PROTOC_GEN_GO_VERSION=v1.36.6
PROTOC_GEN_GO_GRPC_VERSION=v1.3.0

root=$(cd "$(dirname "$0")/.." && pwd)
gobin=$(go env GOBIN)
[ -n "$gobin" ] || gobin="$(go env GOPATH)/bin"
PATH="$gobin:$PATH"
export PATH

missing=0
if ! command -v protoc >/dev/null 2>&1; then
	echo "genproto: protoc not found; install it with: apt-get install protobuf-compiler" >&2
	missing=1
fi
if ! command -v protoc-gen-go >/dev/null 2>&1; then
	echo "genproto: protoc-gen-go not found; install it with: go install google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION" >&2
	missing=1
fi
if ! command -v protoc-gen-go-grpc >/dev/null 2>&1; then
	echo "genproto: protoc-gen-go-grpc not found; install it with: go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION" >&2
	missing=1
fi
[ "$missing" -eq 0 ] || exit 1

# A different plugin version would rewrite every generated line; say so
# rather than silently producing a large diff.
have_go=$(protoc-gen-go --version 2>/dev/null | awk '{print $NF}')
have_grpc=$(protoc-gen-go-grpc --version 2>/dev/null | awk '{print $NF}')
[ "$have_go" = "$PROTOC_GEN_GO_VERSION" ] ||
	echo "genproto: warning: protoc-gen-go is $have_go, the committed code uses $PROTOC_GEN_GO_VERSION" >&2
[ "v${have_grpc#v}" = "$PROTOC_GEN_GO_GRPC_VERSION" ] ||
	echo "genproto: warning: protoc-gen-go-grpc is $have_grpc, the committed code uses $PROTOC_GEN_GO_GRPC_VERSION" >&2

cd "$root/protocol/workerpb"
protoc -I . \
	--go_out=. --go_opt=paths=source_relative \
	--go-grpc_out=. --go-grpc_opt=paths=source_relative \
	worker.proto
echo "genproto: regenerated protocol/workerpb"
