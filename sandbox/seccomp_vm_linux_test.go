package sandbox

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/sandbox/gate"
)

// seccompVM runs a program in golang.org/x/net/bpf's VM, as the kernel
// would run it on a struct seccomp_data.
func seccompVM(t *testing.T, p gate.BPF) *bpf.VM {
	t.Helper()
	insts := make([]bpf.Instruction, len(p))
	for i, in := range p {
		insts[i] = bpf.RawInstruction{Op: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}.Disassemble()
	}
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatalf("program rejected by the VM: %v", err)
	}
	return vm
}

// seccompCase is one struct seccomp_data.
type seccompCase struct {
	nr, arch uint32
	ip       uint64
	args     [6]uint64
}

// bytes lays the case out as the kernel does on a little-endian machine:
// nr, arch, instruction_pointer, args[6], every u64 low half first. The
// VM reads each 32-bit word big endian (network order) where the kernel
// reads it in native order, so each word is stored big endian here: a
// load then gives the value the kernel's load would.
func (c seccompCase) bytes() []byte {
	b := make([]byte, 64)
	put := func(off int, v uint64) {
		binary.BigEndian.PutUint32(b[off:], uint32(v))
		binary.BigEndian.PutUint32(b[off+4:], uint32(v>>32))
	}
	binary.BigEndian.PutUint32(b[0:], c.nr)
	binary.BigEndian.PutUint32(b[4:], c.arch)
	put(8, c.ip)
	for i, a := range c.args {
		put(16+8*i, a)
	}
	return b
}

func runSeccomp(t *testing.T, vm *bpf.VM, c seccompCase) uint32 {
	t.Helper()
	return runSeccompData(t, vm, c, c.bytes())
}

func runSeccompData(t *testing.T, vm *bpf.VM, c seccompCase, data []byte) uint32 {
	t.Helper()
	r, err := vm.Run(data)
	if err != nil {
		t.Fatalf("%+v: %v", c, err)
	}
	return uint32(r)
}

// seccompExtraSets are the Config.SeccompAllow values the programs are
// compared under: none, the test plugin's, the argument-checked names
// allowed outright, duplicates and unknown names, and every syscall (a
// program longer than one 8-bit jump).
func seccompExtraSets() map[string][]string {
	var every []string
	for _, e := range syscallTable {
		every = append(every, e.name)
	}
	return map[string][]string{
		"default":                        nil,
		"test plugin":                    testPluginSyscalls,
		"checked names allowed outright": {"socket", "clone", "clone3"},
		"duplicates and unknown":         {"prctl", "read", "read", "nosuchcall", "connect"},
		"every syscall":                  every,
	}
}

// seccompCases are the inputs: every number 0..600 on the native arch
// with each interesting first argument (for the checked calls also with
// the other arguments all ones, to catch a wrong offset), x32 numbers,
// and foreign audit arches.
func seccompCases() []seccompCase {
	const goCloneFlags = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_SYSVSEM | unix.CLONE_THREAD
	arg0 := []uint64{
		0, unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK, unix.AF_PACKET,
		unix.PR_SET_VMA, unix.PR_SET_NAME, unix.PR_SET_NO_NEW_PRIVS, unix.PR_SET_SECCOMP, unix.PR_SET_DUMPABLE, unix.PR_CAPBSET_DROP, unix.PR_SET_MM,
		uint64(unix.SIGCHLD), goCloneFlags, unix.CLONE_VFORK | unix.CLONE_VM | uint64(unix.SIGCHLD), cloneNamespaceFlags, unix.CLONE_NEWTIME,
		math.MaxUint64, math.MaxUint32, 1 << 32, 1<<32 | unix.AF_UNIX, 0xffffffff<<32 | unix.AF_UNIX, 1<<63 | unix.AF_UNIX,
		1<<32 | unix.PR_SET_VMA, 1<<63 | unix.PR_SET_VMA, uint64(cloneNamespaceFlags) << 32, 1<<32 | goCloneFlags,
	}
	for _, f := range []uint64{unix.CLONE_NEWNS, unix.CLONE_NEWCGROUP, unix.CLONE_NEWUTS, unix.CLONE_NEWIPC, unix.CLONE_NEWUSER, unix.CLONE_NEWPID, unix.CLONE_NEWNET} {
		arg0 = append(arg0, f, goCloneFlags|f, f<<32)
	}
	// Numbers of the checked calls as arguments: where go-seccomp-bpf
	// compared an argument with a syscall number.
	for _, nr := range []uint64{unix.SYS_SOCKET, unix.SYS_CLONE, unix.SYS_PRCTL, unix.SYS_CLONE3} {
		arg0 = append(arg0, nr, nr<<32, nr<<32|unix.AF_INET, nr<<32|unix.AF_UNIX, nr<<32|goCloneFlags|unix.CLONE_NEWNET)
	}
	nrs := make([]uint32, 0, 620)
	for nr := uint32(0); nr <= 600; nr++ {
		nrs = append(nrs, nr)
	}
	nrs = append(nrs, 0x40000000, 0x40000000|unix.SYS_SOCKET, 0x40000000|512, 0x40000000|600, 0x3fffffff, 0x7fffffff, math.MaxUint32)
	var foreign []uint32
	for _, a := range []uint32{unix.AUDIT_ARCH_X86_64, unix.AUDIT_ARCH_AARCH64, unix.AUDIT_ARCH_I386, unix.AUDIT_ARCH_ARM, 0, math.MaxUint32} {
		if a != seccompAuditArch {
			foreign = append(foreign, a)
		}
	}

	var cases []seccompCase
	for _, nr := range nrs {
		for _, a0 := range arg0 {
			cases = append(cases, seccompCase{nr: nr, arch: seccompAuditArch, args: [6]uint64{a0}})
			// Only the checked calls read an argument.
			if slices.Contains([]uint32{unix.SYS_SOCKET, unix.SYS_CLONE, unix.SYS_PRCTL, unix.SYS_CLONE3, unix.SYS_READ}, nr) {
				cases = append(cases, seccompCase{nr: nr, arch: seccompAuditArch, ip: math.MaxUint64,
					args: [6]uint64{a0, math.MaxUint64, math.MaxUint64, math.MaxUint64, math.MaxUint64, math.MaxUint64}})
			}
		}
		for _, a := range foreign {
			cases = append(cases, seccompCase{nr: nr, arch: a}, seccompCase{nr: nr, arch: a, args: [6]uint64{unix.AF_UNIX}})
		}
	}
	return cases
}

// seccompModel is the policy as its doc comment states it, written
// without BPF: the third opinion when ours and go-seccomp-bpf's disagree.
// Numbers come from x/sys/unix and go-seccomp-bpf's table, not ours.
func seccompModel(t *testing.T, extra []string) func(seccompCase) uint32 {
	info := nativeTableInfo(t)
	allowed := map[uint32]bool{}
	for _, n := range slices.Concat(workerSyscalls, extra) {
		if nr, ok := info.SyscallNames[n]; ok {
			allowed[uint32(nr)] = true
		}
	}
	return func(c seccompCase) uint32 {
		switch {
		case c.arch != uint32(info.ID):
			return seccompDenied
		case x32SyscallBit != 0 && c.nr >= x32SyscallBit:
			return seccompENOSYS
		case allowed[c.nr]:
			return seccompAllow
		case c.nr == unix.SYS_SOCKET && c.args[0] == unix.AF_UNIX,
			c.nr == unix.SYS_CLONE && c.args[0]&cloneNamespaceFlags == 0,
			c.nr == unix.SYS_PRCTL && c.args[0] == unix.PR_SET_VMA:
			return seccompAllow
		case c.nr == unix.SYS_CLONE3:
			return seccompENOSYS
		}
		return seccompDenied
	}
}

// staleArgument reports whether go-seccomp-bpf's program, for this case,
// compared an argument with a later check's syscall number: a checked
// call whose first argument has such a number in one of its halves.
func staleArgument(c seccompCase) bool {
	checked := []uint32{unix.SYS_SOCKET, unix.SYS_CLONE, unix.SYS_PRCTL, unix.SYS_CLONE3}
	return c.arch == seccompAuditArch && slices.Contains(checked[:3], c.nr) &&
		(slices.Contains(checked, uint32(c.args[0])) || slices.Contains(checked, uint32(c.args[0]>>32)))
}

// TestSeccompMatchesReference runs our programs and go-seccomp-bpf's over
// every case, for every extra set: the guards must agree everywhere, the
// policies must agree with each other except where go-seccomp-bpf read a
// stale accumulator, and ours must agree with the model everywhere.
func TestSeccompMatchesReference(t *testing.T) {
	nativeTableInfo(t)
	cases := seccompCases()
	data := make([][]byte, len(cases))
	for i, c := range cases {
		data[i] = c.bytes()
	}
	total, differ := 0, 0
	for name, extra := range seccompExtraSets() {
		t.Run(name, func(t *testing.T) {
			ours, ref := oursAndReference(t, extra)
			if len(ours) != 2 || len(ref) != 2 {
				t.Fatalf("%d and %d programs, want 2 each", len(ours), len(ref))
			}
			if !slices.Equal(ours[0], ref[0]) {
				t.Errorf("guard %v, reference %v", ours[0], ref[0])
			}
			if len(ours[1]) > len(ref[1]) {
				t.Errorf("policy of %d instructions, go-seccomp-bpf's %d", len(ours[1]), len(ref[1]))
			}
			t.Logf("policy: %d instructions, go-seccomp-bpf's %d", len(ours[1]), len(ref[1]))
			guard, policy, refPolicy := seccompVM(t, ours[0]), seccompVM(t, ours[1]), seccompVM(t, ref[1])
			model := seccompModel(t, extra)
			n := 0
			for i, c := range cases {
				wantGuard := uint32(seccompENOSYS)
				if c.arch == seccompAuditArch {
					wantGuard = seccompAllow
				}
				if g := runSeccompData(t, guard, c, data[i]); g != wantGuard {
					t.Fatalf("guard %+v: %#x, want %#x", c, g, wantGuard)
				}
				got, r, want := runSeccompData(t, policy, c, data[i]), runSeccompData(t, refPolicy, c, data[i]), model(c)
				if got != want {
					t.Fatalf("%+v: %#x, model %#x (go-seccomp-bpf %#x)", c, got, want, r)
				}
				if got != r {
					if !staleArgument(c) {
						t.Fatalf("%+v: %#x, go-seccomp-bpf %#x (model %#x)", c, got, r, want)
					}
					n++
				}
			}
			t.Logf("%d cases, %d where go-seccomp-bpf compared an argument with a syscall number", len(cases), n)
			total += len(cases)
			differ += n
		})
	}
	t.Logf("%d cases in all; identical results in %d; %d differ, each a stale accumulator of go-seccomp-bpf", total, total-differ, differ)
}

// TestSeccompDeniesStaleArgument pins the hole go-seccomp-bpf's program
// had: socket(AF_INET) with clone's number in the high half of the family
// (the kernel reads an int and sees AF_INET) went on to clone's check,
// which found no namespace flag and allowed it.
func TestSeccompDeniesStaleArgument(t *testing.T) {
	nativeTableInfo(t)
	ours, ref := oursAndReference(t, nil)
	c := seccompCase{nr: unix.SYS_SOCKET, arch: seccompAuditArch, args: [6]uint64{unix.SYS_CLONE<<32 | unix.AF_INET, unix.SOCK_DGRAM}}
	if got := runSeccomp(t, seccompVM(t, ours[1]), c); got != seccompDenied {
		t.Errorf("socket(AF_INET | SYS_CLONE<<32): %#x, want denied (%#x)", got, uint32(seccompDenied))
	}
	if got := runSeccomp(t, seccompVM(t, ref[1]), c); got != seccompAllow {
		t.Logf("go-seccomp-bpf no longer allows socket(AF_INET | SYS_CLONE<<32) (%#x): TestSeccompMatchesReference may now demand equality everywhere", got)
	}
}

// oursAndReference compiles the programs of extra with our assembler and
// with go-seccomp-bpf.
func oursAndReference(t *testing.T, extra []string) (ours, ref []gate.BPF) {
	t.Helper()
	ours, err := compileSeccomp(extra)
	if err != nil {
		t.Fatal(err)
	}
	if ref, err = referenceSeccomp(extra); err != nil {
		t.Fatal(err)
	}
	return ours, ref
}
