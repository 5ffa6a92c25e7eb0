//go:build seccomptrace

package sandbox

import "golang.org/x/sys/unix"

// A seccomptrace build logs (and allows) what the allowlist does not
// cover: the kernel writes one audit line per call (type=1326), which
// scripts/seccomp-trace.sh collects. Never a production build: the action
// is a constant of the build, not something a configuration can switch.
const seccompDenied = unix.SECCOMP_RET_LOG
