//go:build !purego

#include "textflag.h"
#include "permute_amd64.h"

// Two independent states at once (Permute2). Each routine does what its
// one-state twin in simd_amd64.s does, to state x in Z0, Z1 and to state
// y in Z12, Z13, the two states' instructions placed side by side so that
// the core overlaps the dependency chain of one with that of the other:
// the permutation is bound by the latency of its chains (a full round is
// three dependent products deep, a partial round a scalar product chain
// and a horizontal sum), not by the multiplier's throughput. Scratch
// registers are shared between the two states where their values are
// dead: register renaming removes the false dependencies.

// SBOX2 sets Z0, Z1, Z12, Z13 ← (Z0 + Z2)^7, (Z1 + Z3)^7, (Z12 + Z2)^7,
// (Z13 + Z3)^7: SBOX on both states, step by step. Intermediates of x in
// Z4..Z11, of y in Z20..Z27; scratch Z14..Z19, K1..K4.
#define SBOX2 \
	ADDC(Z0, Z2, Z4, K1);   \
	ADDC(Z1, Z3, Z5, K2);   \
	ADDC(Z12, Z2, Z20, K3); \
	ADDC(Z13, Z3, Z21, K4); \
	MULRED(Z4, Z4, Z6, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2);     \
	MULRED(Z5, Z5, Z7, Z14, Z15, Z16, Z17, Z18, Z19, K3, K4);     \
	MULRED(Z20, Z20, Z22, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2);  \
	MULRED(Z21, Z21, Z23, Z14, Z15, Z16, Z17, Z18, Z19, K3, K4);  \
	MULRED(Z6, Z4, Z8, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2);     \
	MULRED(Z7, Z5, Z9, Z14, Z15, Z16, Z17, Z18, Z19, K3, K4);     \
	MULRED(Z22, Z20, Z24, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2);  \
	MULRED(Z23, Z21, Z25, Z14, Z15, Z16, Z17, Z18, Z19, K3, K4);  \
	MULRED(Z6, Z6, Z10, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2);    \
	MULRED(Z7, Z7, Z11, Z14, Z15, Z16, Z17, Z18, Z19, K3, K4);    \
	MULRED(Z22, Z22, Z26, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2);  \
	MULRED(Z23, Z23, Z27, Z14, Z15, Z16, Z17, Z18, Z19, K3, K4);  \
	MULRED(Z8, Z10, Z0, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2);    \
	MULRED(Z9, Z11, Z1, Z14, Z15, Z16, Z17, Z18, Z19, K3, K4);    \
	MULRED(Z24, Z26, Z12, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2);  \
	MULRED(Z25, Z27, Z13, Z14, Z15, Z16, Z17, Z18, Z19, K3, K4)

// LOAD2 loads x into Z0, Z1 and y into YA, YB (AX: x, DX: y).
#define LOAD2(YA, YB) \
	MOVQ      x+0(FP), AX;  \
	MOVQ      y+8(FP), DX;  \
	VMOVDQU64 (AX), Z0;     \
	VMOVDQU64 64(AX), Z1;   \
	VMOVDQU64 (DX), YA;     \
	VMOVDQU64 64(DX), YB

// STORE2 is LOAD2's inverse.
#define STORE2(YA, YB) \
	MOVQ      x+0(FP), AX;  \
	MOVQ      y+8(FP), DX;  \
	VMOVDQU64 Z0, (AX);     \
	VMOVDQU64 Z1, 64(AX);   \
	VMOVDQU64 YA, (DX);     \
	VMOVDQU64 YB, 64(DX)

// func external2AVX512(x, y *[16]uint64)
TEXT ·external2AVX512(SB), NOSPLIT, $0-16
	EPS
	LOAD2(Z12, Z13)
	EXTON(Z0, Z1)
	EXTON(Z12, Z13)
	STORE2(Z12, Z13)
	VZEROUPPER
	RET

// func fullRounds2AVX512(x, y *[16]uint64, c *[64]uint64)
// Four full rounds of both states with the constants c[16r : 16r+16].
TEXT ·fullRounds2AVX512(SB), NOSPLIT, $0-24
	EPS
	LOAD2(Z12, Z13)
	MOVQ c+16(FP), BX
	MOVQ $4, CX
round2:
	VMOVDQU64 (BX), Z2
	VMOVDQU64 64(BX), Z3
	SBOX2
	EXTON(Z0, Z1)
	EXTON(Z12, Z13)
	ADDQ $128, BX
	DECQ CX
	JNZ  round2
	STORE2(Z12, Z13)
	VZEROUPPER
	RET

// func scaledFullRounds2AVX512(x, y *[16]uint64, c *[64]uint64, kx, ky uint64)
// fullRounds2AVX512 after multiplying x's lanes by kx and y's by ky: the
// scaled lanes are stored and the routine continues as
// fullRounds2AVX512, whose arguments sit at the same offsets.
TEXT ·scaledFullRounds2AVX512(SB), NOSPLIT, $0-40
	EPS
	MOVQ         x+0(FP), AX
	MOVQ         y+8(FP), DX
	VMOVDQU64    (AX), Z8
	VMOVDQU64    64(AX), Z9
	VMOVDQU64    (DX), Z10
	VMOVDQU64    64(DX), Z11
	VPBROADCASTQ kx+24(FP), Z2
	VPBROADCASTQ ky+32(FP), Z3
	MULRED(Z2, Z8, Z0, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2)
	MULRED(Z2, Z9, Z1, Z14, Z15, Z16, Z17, Z18, Z19, K3, K4)
	MULRED(Z3, Z10, Z12, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2)
	MULRED(Z3, Z11, Z13, Z14, Z15, Z16, Z17, Z18, Z19, K3, K4)
	STORE2(Z12, Z13)
	JMP ·fullRounds2AVX512(SB)

// func partialRounds2AVX512(x, y *[16]uint64, c *[16]uint64, d *[16]uint64) (zx, zy uint64)
// partialRoundsAVX512 on both states, round by round. The scalar chain
// of x is in R8 z, R9 p, R10 x0, of y in R14 z, R15 p, BX x0 (R14 and
// R15 are free in ABI0 code: the ABI wrapper restores R14, and nothing
// here touches a global); CX counts the rounds up, R11 a, R12 z², R13 s

TEXT ·partialRounds2AVX512(SB), NOSPLIT, $0-48
	EPS
	LOAD2(Z26, Z27)
	MOVQ      (AX), R10
	MOVQ      (DX), BX
	MOVQ      d+24(FP), DI
	VMOVDQU64 (DI), Z4
	VMOVDQU64 64(DI), Z5
	HSUMON(Z0, Z1, R9)
	HSUMON(Z26, Z27, R15)
	MOVQ      $1, R8
	MOVQ      $1, R14
	XORQ      CX, CX

loop2:
	// State x: a = c_r·z + x0.
	MOVQ c+16(FP), AX
	MOVQ (AX)(CX*8), AX
	MULQ R8
	ADDQ R10, AX
	ADCQ $0, DX
	RED
	MOVQ AX, R11
	TESTQ R11, R11
	JEQ  zerox
	MOVQ $0xFFFFFFFF00000001, AX
	CMPQ R11, AX
	JEQ  zerox
	MOVQ R8, AX
	MULQ R8
	RED
	MOVQ AX, R12
	MOVQ R11, AX
	MULQ R9
	ADDQ R12, AX
	ADCQ $0, DX
	RED
	MOVQ AX, R13
	MOVQ d+24(FP), AX
	MOVQ (AX), AX
	MULQ R12
	ADDQ R13, AX
	ADCQ $0, DX
	RED
	MOVQ AX, R10
	MOVQ R8, AX
	MULQ R11
	RED
	MOVQ AX, R8
	CANON(R13)
	VPBROADCASTQ R11, Z2
	VPBROADCASTQ SI, Z3
	JMP  lanesx

zerox:
	MOVQ R9, R10
	CANON(R9)
	MOVQ $1, AX
	VPBROADCASTQ AX, Z2
	VPBROADCASTQ SI, Z3

lanesx:
	MULRED(Z4, Z0, Z6, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2)
	MULRED(Z5, Z1, Z7, Z14, Z15, Z16, Z17, Z18, Z19, K3, K4)
	MULRED(Z2, Z6, Z8, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2)
	MULRED(Z2, Z7, Z9, Z14, Z15, Z16, Z17, Z18, Z19, K3, K4)
	ADDC(Z8, Z3, Z0, K1)
	ADDC(Z9, Z3, Z1, K2)
	HSUMON(Z0, Z1, R9)

	// State y, the same with its own registers.
	MOVQ c+16(FP), AX
	MOVQ (AX)(CX*8), AX
	MULQ R14
	ADDQ BX, AX
	ADCQ $0, DX
	RED
	MOVQ AX, R11
	TESTQ R11, R11
	JEQ  zeroy
	MOVQ $0xFFFFFFFF00000001, AX
	CMPQ R11, AX
	JEQ  zeroy
	MOVQ R14, AX
	MULQ R14
	RED
	MOVQ AX, R12
	MOVQ R11, AX
	MULQ R15
	ADDQ R12, AX
	ADCQ $0, DX
	RED
	MOVQ AX, R13
	MOVQ d+24(FP), AX
	MOVQ (AX), AX
	MULQ R12
	ADDQ R13, AX
	ADCQ $0, DX
	RED
	MOVQ AX, BX
	MOVQ R14, AX
	MULQ R11
	RED
	MOVQ AX, R14
	CANON(R13)
	VPBROADCASTQ R11, Z28
	VPBROADCASTQ SI, Z29
	JMP  lanesy

zeroy:
	MOVQ R15, BX
	CANON(R15)
	MOVQ $1, AX
	VPBROADCASTQ AX, Z28
	VPBROADCASTQ SI, Z29

lanesy:
	MULRED(Z4, Z26, Z6, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2)
	MULRED(Z5, Z27, Z7, Z14, Z15, Z16, Z17, Z18, Z19, K3, K4)
	MULRED(Z28, Z6, Z8, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2)
	MULRED(Z28, Z7, Z9, Z14, Z15, Z16, Z17, Z18, Z19, K3, K4)
	ADDC(Z8, Z29, Z26, K1)
	ADDC(Z9, Z29, Z27, K2)
	HSUMON(Z26, Z27, R15)

	INCQ CX
	CMPQ CX, $16
	JNE  loop2

	STORE2(Z26, Z27)
	MOVQ      R10, (AX)
	MOVQ      BX, (DX)
	VZEROUPPER
	MOVQ      R8, zx+32(FP)
	MOVQ      R14, zy+40(FP)
	RET
