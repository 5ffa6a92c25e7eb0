//go:build seccomptrace

package sandbox

import seccomp "github.com/elastic/go-seccomp-bpf"

// A seccomptrace build logs (and allows) what the allowlist does not
// cover: the kernel writes one audit line per call (type=1326), which
// scripts/seccomp-trace.sh collects. Never a production build.
func init() { seccompDenied = seccomp.ActionLog }
