package sandbox

import (
	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/sandbox/gate"
)

// Offsets in struct seccomp_data: nr (u32), arch (u32),
// instruction_pointer (u64), args[6] (u64).
const (
	seccompDataNr   = 0
	seccompDataArch = 4
	seccompDataArgs = 16
)

const (
	seccompAllow  = unix.SECCOMP_RET_ALLOW
	seccompENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// argOp is how an argCheck compares a 64-bit argument with its value.
type argOp int

const (
	argEqual     argOp = iota // arg == value
	argBitsClear              // arg & value == 0
)

// argCheck allows syscall nr only if its argument arg passes op.
type argCheck struct {
	nr    uint32
	arg   uint32
	op    argOp
	value uint64
}

// The two 32-bit halves of args[i]. Every supported architecture is
// little endian: the low half comes first.
func argLo(i uint32) uint32 { return seccompDataArgs + 8*i }
func argHi(i uint32) uint32 { return seccompDataArgs + 8*i + 4 }

// requireArch returns otherwise for a syscall whose audit arch is not
// arch, and goes on for one whose arch is.
func requireArch(a *bpfAsm, arch, otherwise uint32) {
	match := a.newLabel()
	a.load(seccompDataArch)
	a.jump(unix.BPF_JEQ, arch, match, fallThrough)
	a.ret(otherwise)
	a.place(match)
}

// seccompPolicy lays out the policy program, in the order go-seccomp-bpf
// used to: the ABI checks, the allowlist, the argument checks, the
// ENOSYS calls, the rest denied.
//
// The allowlist is cut into blocks of at most 256 compares, each ending
// in its own ALLOW, so that no jump is longer than BPF's 8 bits however
// long the list. An argument check that fails denies at once: the
// accumulator then holds the argument, not the syscall number, so the
// program must not compare it with further numbers. (go-seccomp-bpf did,
// which let socket(AF_INET) through when the high half of its first
// argument was clone's number.)
func seccompPolicy(allowed []uint32, checks []argCheck, enosys []uint32) (gate.BPF, error) {
	var a bpfAsm

	// A foreign audit arch never reaches the guard's ALLOW either; here
	// it is denied before its numbers could be read as native ones.
	requireArch(&a, seccompAuditArch, seccompDenied)
	a.load(seccompDataNr)
	// x32 calls share x86_64's audit arch and are told apart by a bit of
	// the number: refused as unimplemented, so that no native entry of
	// the list can be reached through the other ABI.
	if x32SyscallBit != 0 {
		nativeABI := a.newLabel()
		a.jump(unix.BPF_JGE, x32SyscallBit, fallThrough, nativeABI)
		a.ret(seccompENOSYS)
		a.place(nativeABI)
	}

	const block = 256 // the first compare of a block jumps 255 ahead
	for len(allowed) > 0 {
		n := min(len(allowed), block)
		hit, miss := a.newLabel(), a.newLabel()
		for i, nr := range allowed[:n] {
			if i < n-1 {
				a.jump(unix.BPF_JEQ, nr, hit, fallThrough)
			} else {
				a.jump(unix.BPF_JEQ, nr, hit, miss)
			}
		}
		a.place(hit)
		a.ret(seccompAllow)
		a.place(miss)
		allowed = allowed[n:]
	}

	// The shared returns come last, a few instructions below every check.
	allow, deny, unimplemented := a.newLabel(), a.newLabel(), a.newLabel()
	for _, c := range checks {
		other := a.newLabel()
		a.jump(unix.BPF_JEQ, c.nr, fallThrough, other)
		hi, lo := uint32(c.value>>32), uint32(c.value)
		// Both halves are compared, as go-seccomp-bpf's Equal and
		// BitsNotSet do: the kernel passes 64-bit arguments.
		switch c.op {
		case argEqual:
			a.load(argHi(c.arg))
			a.jump(unix.BPF_JEQ, hi, fallThrough, deny)
			a.load(argLo(c.arg))
			a.jump(unix.BPF_JEQ, lo, allow, deny)
		case argBitsClear:
			if hi != 0 { // no bit to test in a zero high half
				a.load(argHi(c.arg))
				a.jump(unix.BPF_JSET, hi, deny, fallThrough)
			}
			a.load(argLo(c.arg))
			a.jump(unix.BPF_JSET, lo, deny, allow)
		}
		a.place(other)
	}
	for _, nr := range enosys {
		a.jump(unix.BPF_JEQ, nr, unimplemented, fallThrough)
	}
	a.place(deny)
	a.ret(seccompDenied)
	if len(enosys) > 0 {
		a.place(unimplemented)
		a.ret(seccompENOSYS)
	}
	a.place(allow)
	a.ret(seccompAllow)
	return a.assemble()
}
