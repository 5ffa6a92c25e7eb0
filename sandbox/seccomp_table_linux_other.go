//go:build linux && !amd64 && !arm64 && !386 && !arm

package sandbox

// No syscall table for this architecture (go-seccomp-bpf had none
// either): knownSyscall refuses every name and compileSeccomp fails with
// errSeccompArch, so a configuration with Seccomp fails its launch
// instead of running unfiltered.
const (
	seccompAuditArch = 0
	x32SyscallBit    = 0
)

var syscallTable = [0]syscallEntry{}
