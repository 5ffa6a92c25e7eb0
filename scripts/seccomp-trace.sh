#!/usr/bin/env bash
# Derives the worker's seccomp allowlist: runs the suites that launch the
# real nox-worker (supervisor, integration) with a seccomptrace build, whose
# policy logs and allows every syscall outside the allowlist instead of
# failing it, and lists what the kernel logged for the jailed processes
# (comm "worker": the jail execs /bin/worker; "sandbox-gate": the init
# between its seccomp load and the execve).
#
# Root only. For the length of the run it lifts printk's rate limit (the
# audit lines go through it when no auditd runs) and restores it after.
# Usage: scripts/seccomp-trace.sh [go test packages...]
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./supervisor/ ./integration/)
out=$(mktemp -d)
old_rl=$(cat /proc/sys/kernel/printk_ratelimit)
restore() {
	echo "$old_rl" > /proc/sys/kernel/printk_ratelimit
	[ -n "${kmsg_pid:-}" ] && kill "$kmsg_pid" 2>/dev/null || true
}
trap restore EXIT
echo 0 > /proc/sys/kernel/printk_ratelimit
# Only a seccomptrace build makes lines of this kind, so older ones in the
# buffer can only come from an earlier trace run.
cat /dev/kmsg > "$out/kmsg" &
kmsg_pid=$!
sleep 0.2
# GOFLAGS reaches the binaries the tests build (internal/testbin), so the
# daemon of the integration tests logs as well. The hostile worker's tests
# are skipped: it is not nox-worker, and with everything allowed its
# attacks (a raw clone among them) would run.
GOFLAGS=-tags=seccomptrace REQUIRE_ISOLATION=1 go test -count=1 -timeout 30m -skip 'TestHostile' "${pkgs[@]}" | tee "$out/test.log" | tail -5 || echo "(tests failed: see $out/test.log)"
sleep 1
kill "$kmsg_pid" 2>/dev/null || true
kmsg_pid=
hdr=$(echo '#include <asm/unistd.h>' | cpp -dM 2>/dev/null | awk '/#define __NR_/ {sub("__NR_","",$2); print $3, $2}')
lines=$(grep 'type=1326' "$out/kmsg" | grep -E 'comm="(worker|sandbox-gate|nox-worker)"' || true)
if [ -z "$lines" ]; then
	echo "no call outside the allowlist"
else
	sed -E 's/.*comm="([^"]*)".*syscall=([0-9]+).*/\2 \1/' <<<"$lines" | sort | uniq -c |
		while read -r n nr comm; do
			name=$(awk -v nr="$nr" '$1 == nr {print $2; exit}' <<<"$hdr")
			echo "$comm ${name:-syscall-$nr} ($nr): $n calls outside the allowlist"
		done
fi
echo "kernel log and test output: $out"
