package sandbox

import (
	"fmt"
	"slices"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/sandbox/gate"
)

// referenceSeccomp is how the supervisor compiled its programs before it
// had an assembler of its own: the same policy through go-seccomp-bpf.
// The tests run both in a BPF VM and compare what they return.
func referenceSeccomp(extra []string) ([]gate.BPF, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	var names []string
	for _, n := range slices.Concat(workerSyscalls, extra) {
		if _, ok := info.SyscallNames[n]; ok && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	policy := seccomp.Policy{
		DefaultAction: referenceDenied(),
		Syscalls: []seccomp.SyscallGroup{
			{Names: names, Action: seccomp.ActionAllow},
			{
				NamesWithCondtions: []seccomp.NameWithConditions{
					{Name: "socket", Conditions: seccomp.ArgumentConditions{
						{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_UNIX},
					}},
					{Name: "clone", Conditions: seccomp.ArgumentConditions{
						{Argument: 0, Operation: seccomp.BitsNotSet, Value: cloneNamespaceFlags},
					}},
					{Name: "prctl", Conditions: seccomp.ArgumentConditions{
						{Argument: 0, Operation: seccomp.Equal, Value: unix.PR_SET_VMA},
					}},
				},
				Action: seccomp.ActionAllow,
			},
			{Names: []string{"clone3"}, Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)},
		},
	}
	prog, err := assembleReference(policy)
	if err != nil {
		return nil, err
	}
	return []gate.BPF{referenceArchGuard(uint32(info.ID)), prog}, nil
}

// referenceArchGuard is the guard as it was written before our assembler
// made it (archGuard), instruction by instruction.
func referenceArchGuard(native uint32) gate.BPF {
	return gate.BPF{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: seccompDataArch},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 1, Jf: 0, K: native},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
}

// referenceDenied is seccompDenied as go-seccomp-bpf takes it: a bare
// ActionErrno, to which it adds EPERM itself.
func referenceDenied() seccomp.Action {
	if seccompDenied == unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM) {
		return seccomp.ActionErrno
	}
	return seccomp.Action(seccompDenied)
}

// assembleReference compiles a go-seccomp-bpf policy into the wire form.
func assembleReference(policy seccomp.Policy) (gate.BPF, error) {
	insts, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp: assemble policy: %w", err)
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("seccomp: assemble BPF: %w", err)
	}
	prog := make(gate.BPF, len(raw))
	for i, r := range raw {
		prog[i] = gate.Instruction{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return prog, nil
}
