package sandbox

import (
	"math"
	"slices"
	"strings"
	"testing"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/sys/unix"
)

// TestSeccompArgCheckMatchesReference compares one argument check at a
// time with go-seccomp-bpf's Equal and BitsNotSet, on values the policy
// itself does not use: high halves set, other argument slots. With a
// single check go-seccomp-bpf never compares a stale accumulator, so the
// results must be identical everywhere.
func TestSeccompArgCheckMatchesReference(t *testing.T) {
	nativeTableInfo(t)
	read, _ := syscallNumber("read")
	ioctl, _ := syscallNumber("ioctl")
	for _, tc := range []struct {
		arg   uint32
		op    argOp
		value uint64
	}{
		{0, argEqual, unix.AF_UNIX},
		{0, argEqual, 1<<32 | 2},
		{2, argEqual, 5},
		{5, argEqual, math.MaxUint64},
		{1, argBitsClear, 0},
		{3, argBitsClear, 1<<63 | 0x10},
		{4, argBitsClear, 0xffff << 32},
		{0, argBitsClear, cloneNamespaceFlags},
	} {
		operation := seccomp.Equal
		if tc.op == argBitsClear {
			operation = seccomp.BitsNotSet
		}
		ours, err := seccompPolicy([]uint32{read}, []argCheck{{nr: ioctl, arg: tc.arg, op: tc.op, value: tc.value}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := assembleReference(seccomp.Policy{
			DefaultAction: referenceDenied(),
			Syscalls: []seccomp.SyscallGroup{
				{Names: []string{"read"}, Action: seccomp.ActionAllow},
				{NamesWithCondtions: []seccomp.NameWithConditions{{Name: "ioctl", Conditions: seccomp.ArgumentConditions{
					{Argument: tc.arg, Operation: operation, Value: tc.value},
				}}}, Action: seccomp.ActionAllow},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		vm, refVM := seccompVM(t, ours), seccompVM(t, ref)
		v := tc.value
		values := []uint64{0, v, v & math.MaxUint32, v &^ math.MaxUint32, ^v, v ^ 1, v ^ 1<<32, v | 1<<63, math.MaxUint64, 1 << 4, 1 << 36, 1 << 63}
		n, allowed := 0, 0
		for _, nr := range []uint32{read, ioctl, ioctl + 1, 0} {
			for _, x := range values {
				for _, rest := range []uint64{0, math.MaxUint64} {
					c := seccompCase{nr: nr, arch: seccompAuditArch, args: [6]uint64{rest, rest, rest, rest, rest, rest}}
					c.args[tc.arg] = x
					got, want := runSeccomp(t, vm, c), runSeccomp(t, refVM, c)
					if got != want {
						t.Errorf("%+v on %+v: %#x, go-seccomp-bpf %#x", tc, c, got, want)
					}
					n++
					if nr == ioctl && got == seccompAllow {
						allowed++
					}
				}
			}
		}
		trivial := tc.op == argBitsClear && tc.value == 0 // no bit to find: always passes
		if allowed == 0 || (allowed == 2*len(values)) != trivial {
			t.Errorf("%+v: the check allowed %d of %d ioctl cases: the values do not exercise it", tc, allowed, 2*len(values))
		}
		t.Logf("%+v: %d cases identical", tc, n)
	}
}

// TestSeccompUnknownNamesSkipped: a name unknown on this architecture
// changes nothing, as before.
func TestSeccompUnknownNamesSkipped(t *testing.T) {
	nativeTableInfo(t)
	plain, err := compileSeccomp(nil)
	if err != nil {
		t.Fatal(err)
	}
	withUnknown, err := compileSeccomp([]string{"nosuchcall", "execve"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(plain[1], withUnknown[1]) {
		t.Errorf("an unknown name and a duplicate changed the policy: %d instructions, %d without", len(withUnknown[1]), len(plain[1]))
	}
}

func TestBPFAsmRefusesBadJumps(t *testing.T) {
	var far bpfAsm
	l := far.newLabel()
	far.jump(unix.BPF_JEQ, 1, l, fallThrough)
	for range 256 {
		far.ret(0)
	}
	far.place(l)
	far.ret(0)
	if _, err := far.assemble(); err == nil || !strings.Contains(err.Error(), "8-bit") {
		t.Errorf("jump of 256: %v, want an out-of-range error", err)
	}

	var unplaced bpfAsm
	unplaced.jump(unix.BPF_JEQ, 1, unplaced.newLabel(), fallThrough)
	unplaced.ret(0)
	if _, err := unplaced.assemble(); err == nil || !strings.Contains(err.Error(), "never placed") {
		t.Errorf("unplaced label: %v", err)
	}

	var pastEnd bpfAsm
	end := pastEnd.newLabel()
	pastEnd.jump(unix.BPF_JEQ, 1, end, fallThrough)
	pastEnd.ret(0)
	pastEnd.place(end)
	if _, err := pastEnd.assemble(); err == nil || !strings.Contains(err.Error(), "past the end") {
		t.Errorf("label past the end: %v", err)
	}

	var long bpfAsm
	for range bpfMaxInstructions + 1 {
		long.ret(0)
	}
	if _, err := long.assemble(); err == nil {
		t.Error("a program of 4097 instructions assembled")
	}

	var edge bpfAsm
	l = edge.newLabel()
	edge.jump(unix.BPF_JEQ, 1, l, fallThrough)
	for range 255 {
		edge.ret(0)
	}
	edge.place(l)
	edge.ret(1)
	p, err := edge.assemble()
	if err != nil || p[0].Jt != 255 {
		t.Errorf("jump of 255: %v, jt %d", err, p[0].Jt)
	}
}
