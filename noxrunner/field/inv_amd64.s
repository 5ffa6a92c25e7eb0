//go:build !purego

#include "textflag.h"

// func gcdStepsBMI(a uint64) (c, k uint64)
// The loop of gcdSteps (inv.go) with TZCNT, SHRX/SHLX and CMOV, which Go
// does not emit for it: a step is subtract → count zeros → shift on the
// critical path, about five cycles. a is canonical and not zero.
// AX x, BX y, SI cx, DI cy, CX k, R8 the sign mask.
TEXT ·gcdStepsBMI(SB), NOSPLIT, $0-24
	MOVQ   a+0(FP), BX
	TZCNTQ BX, CX
	SHRXQ  CX, BX, BX
	MOVQ   $0xFFFFFFFF00000001, AX
	XORL   SI, SI
	MOVL   $1, DI
	XORL   R8, R8

loop:
	MOVQ    BX, R11
	SUBQ    AX, R11    // y − x
	MOVQ    AX, DX
	SUBQ    BX, DX     // d = x − y; CF: x < y
	JEQ     done
	SBBQ    R9, R9     // m = −CF (keeps CF)
	MOVQ    DX, R13
	CMOVQCS R11, DX    // |x − y|
	CMOVQCS AX, BX     // min(x, y)
	MOVQ    DI, R12
	CMOVQCS SI, R12    // the smaller one's coefficient
	TZCNTQ  R13, R10   // t (the same for d and −d)
	ADDQ    DI, SI     // cx += cy
	SHLXQ   R10, R12, DI
	SHRXQ   R10, DX, AX
	XORQ    R9, R8
	ADDQ    R10, CX
	JMP     loop

done:
	// c = neg ? cx : cy, that is cy ^ ((cx ^ cy) & neg)
	MOVQ SI, R12
	XORQ DI, R12
	ANDQ R8, R12
	XORQ DI, R12
	MOVQ R12, c+8(FP)
	MOVQ CX, k+16(FP)
	RET
