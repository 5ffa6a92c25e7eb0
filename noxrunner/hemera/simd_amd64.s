//go:build !purego

#include "textflag.h"
#include "permute_amd64.h"

// AVX-512 twins of the full rounds and the external matrix (permute.go),
// the 16 lanes held as two vectors of eight (Z0: lanes 0..7, Z1: 8..15).
// Products are built from 32-bit halves with VPMULUDQ and folded like red
// (arith.go): lo − h1 + h0·ε, the borrow and the carry corrected in turn by
// a masked subtract/add of ε. Z30 holds ε = 2^32 − 1 in every lane, which is
// also the mask of a low half.

// func externalAVX512(x *[16]uint64)
TEXT ·externalAVX512(SB), NOSPLIT, $0-8
	MOVQ x+0(FP), AX
	EPS
	VMOVDQU64 (AX), Z0
	VMOVDQU64 64(AX), Z1
	EXT
	VMOVDQU64 Z0, (AX)
	VMOVDQU64 Z1, 64(AX)
	VZEROUPPER
	RET

// func fullRoundsAVX512(x *[16]uint64, c *[64]uint64)
// Four full rounds with the constants c[16r : 16r+16].
TEXT ·fullRoundsAVX512(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), AX
	MOVQ c+8(FP), BX
	EPS
	VMOVDQU64 (AX), Z0
	VMOVDQU64 64(AX), Z1
	MOVQ $4, DX
round:
	VMOVDQU64 (BX), Z2
	VMOVDQU64 64(BX), Z3
	SBOX
	EXT
	ADDQ $128, BX
	DECQ DX
	JNZ  round
	VMOVDQU64 Z0, (AX)
	VMOVDQU64 Z1, 64(AX)
	VZEROUPPER
	RET

// func partialRoundsAVX512(x *[16]uint64, c *[16]uint64, d *[16]uint64) uint64
// The projective partial rounds of partial.go, whole: the scalar chain in
// general registers (BX c, CX rounds left, R8 z, R9 p, R10 x0, R11 a,
// R12 z², R13 s), lanes 1..15 in Z0, Z1 (lane 0 of Z0 is scratch), the
// diagonal in Z4, Z5. Returns Z; the lanes are left un-normalised.
TEXT ·partialRoundsAVX512(SB), NOSPLIT, $0-32
	EPS
	MOVQ      x+0(FP), SI
	VMOVDQU64 (SI), Z0
	VMOVDQU64 64(SI), Z1
	MOVQ      (SI), R10
	MOVQ      d+16(FP), DI
	VMOVDQU64 (DI), Z4
	VMOVDQU64 64(DI), Z5
	MOVQ      c+8(FP), BX
	HSUM
	MOVQ      $1, R8
	MOVQ      $16, CX

loop:
	// a = c_r·z + x0
	MOVQ (BX), AX
	MULQ R8
	ADDQ R10, AX
	ADCQ $0, DX
	RED
	MOVQ AX, R11
	TESTQ R11, R11
	JEQ  zero
	MOVQ $0xFFFFFFFF00000001, AX
	CMPQ R11, AX
	JEQ  zero
	// z² = z·z
	MOVQ R8, AX
	MULQ R8
	RED
	MOVQ AX, R12
	// s = a·p + z²
	MOVQ R11, AX
	MULQ R9
	ADDQ R12, AX
	ADCQ $0, DX
	RED
	MOVQ AX, R13
	// x0 = d0·z² + s
	MOVQ d+16(FP), AX
	MOVQ (AX), AX
	MULQ R12
	ADDQ R13, AX
	ADCQ $0, DX
	RED
	MOVQ AX, R10
	// z = z·a
	MOVQ R8, AX
	MULQ R11
	RED
	MOVQ AX, R8
	CANON(R13)
	VPBROADCASTQ R11, Z2
	VPBROADCASTQ SI, Z3
	JMP  lanes

zero:
	// Lane 0 maps to 0 over the same Z: x0 = p, lanes d_i·x_i + p.
	MOVQ R9, R10
	CANON(R9)
	MOVQ $1, AX
	VPBROADCASTQ AX, Z2
	VPBROADCASTQ SI, Z3

lanes:
	MULRED(Z4, Z0, Z6, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2)
	MULRED(Z5, Z1, Z7, Z20, Z21, Z22, Z23, Z24, Z25, K3, K4)
	MULRED(Z2, Z6, Z8, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2)
	MULRED(Z2, Z7, Z9, Z20, Z21, Z22, Z23, Z24, Z25, K3, K4)
	ADDC(Z8, Z3, Z0, K1)
	ADDC(Z9, Z3, Z1, K2)
	HSUM
	ADDQ $8, BX
	DECQ CX
	JNZ  loop

	MOVQ      x+0(FP), SI
	VMOVDQU64 Z0, (SI)
	VMOVDQU64 Z1, 64(SI)
	MOVQ      R10, (SI)
	VZEROUPPER
	MOVQ      R8, ret+24(FP)
	RET

// func scaledFullRoundsAVX512(x *[16]uint64, c *[64]uint64, k uint64)
// fullRoundsAVX512 after multiplying every lane by k (the inverse of the
// partial rounds' denominator): the scaled lanes are stored and the
// routine continues as fullRoundsAVX512, whose arguments x and c sit at
// the same offsets.
TEXT ·scaledFullRoundsAVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), AX
	EPS
	VMOVDQU64 (AX), Z8
	VMOVDQU64 64(AX), Z9
	VPBROADCASTQ k+16(FP), Z2
	MULRED(Z2, Z8, Z0, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2)
	MULRED(Z2, Z9, Z1, Z20, Z21, Z22, Z23, Z24, Z25, K3, K4)
	VMOVDQU64 Z0, (AX)
	VMOVDQU64 Z1, 64(AX)
	JMP ·fullRoundsAVX512(SB)
