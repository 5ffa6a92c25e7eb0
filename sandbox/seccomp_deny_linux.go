//go:build !seccomptrace

package sandbox

import "golang.org/x/sys/unix"

// seccompDenied is the action for everything outside the allowlist:
// EPERM, so that a worker reports a clean error instead of dying. Only a
// seccomptrace build changes it (seccomp_trace_linux.go).
const seccompDenied = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
