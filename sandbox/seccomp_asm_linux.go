package sandbox

import (
	"fmt"
	"math"

	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/sandbox/gate"
)

// bpfLabel names an instruction a conditional jump goes to before that
// instruction exists, so that the policy can be written top to bottom.
// The zero label is the next instruction (fall through).
type bpfLabel int

const fallThrough bpfLabel = 0

// bpfAsm assembles one classic BPF program for seccomp. It only knows
// what the policy needs: 32-bit absolute loads from seccomp_data,
// conditional jumps against a constant, and constant returns. Jumps go
// forward only and at most 255 instructions (jt and jf are 8 bits): the
// policy is laid out so that every target is near (see seccompPolicy);
// a far one is a bug of the layout, reported by assemble, never patched.
type bpfAsm struct {
	prog   gate.BPF
	labels []int // instruction index of label i+1, -1 until placed
	jumps  []bpfJump
}

type bpfJump struct {
	at     int
	jt, jf bpfLabel
}

// bpfMaxInstructions is the kernel's BPF_MAXINSNS.
const bpfMaxInstructions = 4096

func (a *bpfAsm) newLabel() bpfLabel {
	a.labels = append(a.labels, -1)
	return bpfLabel(len(a.labels))
}

// place puts label l on the next instruction emitted.
func (a *bpfAsm) place(l bpfLabel) { a.labels[l-1] = len(a.prog) }

// load sets the accumulator to the 32-bit word at offset off of
// struct seccomp_data.
func (a *bpfAsm) load(off uint32) {
	a.prog = append(a.prog, gate.Instruction{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off})
}

// jump compares the accumulator with k (op is BPF_JEQ, BPF_JGE, BPF_JSET,
// ...) and goes to jt if the test holds, to jf otherwise.
func (a *bpfAsm) jump(op uint16, k uint32, jt, jf bpfLabel) {
	a.jumps = append(a.jumps, bpfJump{at: len(a.prog), jt: jt, jf: jf})
	a.prog = append(a.prog, gate.Instruction{Code: unix.BPF_JMP | op | unix.BPF_K, K: k})
}

// ret ends the program with the seccomp action k.
func (a *bpfAsm) ret(k uint32) {
	a.prog = append(a.prog, gate.Instruction{Code: unix.BPF_RET | unix.BPF_K, K: k})
}

// assemble resolves the labels into jump offsets.
func (a *bpfAsm) assemble() (gate.BPF, error) {
	if len(a.prog) > bpfMaxInstructions {
		return nil, fmt.Errorf("bpf: program of %d instructions, the kernel takes at most %d", len(a.prog), bpfMaxInstructions)
	}
	for _, j := range a.jumps {
		jt, err := a.offset(j.at, j.jt)
		if err != nil {
			return nil, err
		}
		jf, err := a.offset(j.at, j.jf)
		if err != nil {
			return nil, err
		}
		a.prog[j.at].Jt, a.prog[j.at].Jf = jt, jf
	}
	return a.prog, nil
}

// offset is the distance from the jump at index at to label l, counted
// as BPF does from the instruction after the jump.
func (a *bpfAsm) offset(at int, l bpfLabel) (uint8, error) {
	if l == fallThrough {
		return 0, nil
	}
	if int(l) > len(a.labels) || a.labels[l-1] < 0 {
		return 0, fmt.Errorf("bpf: jump at %d to label %d, which is never placed", at, l)
	}
	to := a.labels[l-1]
	if to >= len(a.prog) {
		return 0, fmt.Errorf("bpf: jump at %d past the end of the program", at)
	}
	d := to - at - 1
	if d < 0 || d > math.MaxUint8 {
		return 0, fmt.Errorf("bpf: jump at %d to %d out of the 8-bit range", at, to)
	}
	return uint8(d), nil
}
