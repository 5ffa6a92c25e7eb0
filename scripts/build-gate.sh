#!/usr/bin/env bash
# Builds sandbox-gate, the workers' gated init, into $1 (cgo, static;
# further arguments are added to -ldflags). Its C init runs from an ELF
# constructor and execs the worker before any Go runtime starts, so the
# C library's own start-up is most of what the gate costs: glibc's static
# start probes the CPU's caches with cpuid, 5 µs each on a VM, 0.40 ms per
# gate on this project's hosts against 0.07 ms with musl. So with
# musl-gcc on the PATH (Debian: musl-tools) the gate links musl, and the
# system's C library otherwise, or if the musl build fails.
# GATE_LIBC=system skips musl. internal/testbin builds through this too.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1
shift
ldflags="$* -linkmode external -extldflags -static"
if [ "${GATE_LIBC:-auto}" != system ] && command -v musl-gcc >/dev/null 2>&1; then
	# musl-gcc sees musl's headers only; the init needs the kernel's
	# (linux/filter.h, linux/seccomp.h, ...), which come after musl's.
	# The links live in the user's Go build cache (private to the user, and
	# a stable path, so the cgo build stays cached), never in a shared
	# temporary dir where another user could plant headers.
	kh="$(go env GOCACHE)/cyber-supervisor-kernel-headers"
	asm="/usr/include/$(gcc -print-multiarch 2>/dev/null)/asm"
	[ -d "$asm" ] || asm=/usr/include/asm
	mkdir -p "$kh"
	ln -sfn /usr/include/linux "$kh/linux"
	ln -sfn /usr/include/asm-generic "$kh/asm-generic"
	ln -sfn "$asm" "$kh/asm"
	if CGO_ENABLED=1 CC=musl-gcc CGO_CFLAGS="-O2 -idirafter $kh" \
		go build -trimpath -ldflags="$ldflags" -o "$out" ./cmd/sandbox-gate; then
		exit 0
	fi
	echo "build-gate: the musl build failed; linking the system's C library" >&2
fi
CGO_ENABLED=1 go build -trimpath -ldflags="$ldflags" -o "$out" ./cmd/sandbox-gate
