//go:build !purego

#include "textflag.h"

// AVX-512 twins of the full rounds and the external matrix (permute.go),
// the 16 lanes held as two vectors of eight (Z0: lanes 0..7, Z1: 8..15).
// Products are built from 32-bit halves with VPMULUDQ and folded like red
// (arith.go): lo − h1 + h0·ε, the borrow and the carry corrected in turn by
// a masked subtract/add of ε. Z30 holds ε = 2^32 − 1 in every lane, which is
// also the mask of a low half.

// MULRED sets R to a lazy representative of A·B (A, B lazy, any uint64).
// T1..T6 are scratch; R may not alias A or B. KA, KB are scratch masks.
#define MULRED(A, B, R, T1, T2, T3, T4, T5, T6, KA, KB) \
	VPSRLQ   $32, A, T1;        \
	VPSRLQ   $32, B, T2;        \
	VPMULUDQ B, A, T3;          \
	VPMULUDQ T2, A, T4;         \
	VPMULUDQ B, T1, T5;         \
	VPMULUDQ T2, T1, T6;        \
	VPSRLQ   $32, T3, T1;       \
	VPADDQ   T1, T4, T4;        \
	VPANDQ   Z30, T4, T1;       \
	VPADDQ   T1, T5, T5;        \
	VPSRLQ   $32, T4, T4;       \
	VPADDQ   T4, T6, T6;        \
	VPSRLQ   $32, T5, T1;       \
	VPADDQ   T1, T6, T6;        \
	VPSLLQ   $32, T5, T5;       \
	VPTERNLOGQ $0xEC, Z30, T5, T3; \
	VPSRLQ   $32, T6, T1;       \
	VPMULUDQ Z30, T6, T2;       \
	VPCMPUQ  $1, T1, T3, KA;    \
	VPSUBQ   T1, T3, R;         \
	VPSUBQ   Z30, R, KA, R;     \
	VPADDQ   T2, R, R;          \
	VPCMPUQ  $1, T2, R, KB;     \
	VPADDQ   Z30, R, KB, R

// ADDC sets S to a lazy representative of X + C (C canonical).
#define ADDC(X, C, S, KA) \
	VPADDQ  C, X, S;      \
	VPCMPUQ $1, C, S, KA; \
	VPADDQ  Z30, S, KA, S


// EXT applies the external matrix to Z0, Z1 (see external in permute.go):
// M4·(x_c + t) per chunk with t the column sums. The sums are exact on the
// 32-bit halves of the lanes (L, H), so no carries are needed: every
// output half is below 35·2^32 < 2^38. The output V = L + H·2^32 is folded
// as L + (H << 32) + (H >> 32)·ε, each addition corrected for its carry.
// Scratch: Z14..Z29, K1..K4.
#define EXT \
	VPANDQ     Z30, Z0, Z14;        \
	VPSRLQ     $32, Z0, Z15;        \
	VPANDQ     Z30, Z1, Z16;        \
	VPSRLQ     $32, Z1, Z17;        \
	VPADDQ     Z16, Z14, Z18;       \
	VSHUFI64X2 $0x4E, Z18, Z18, Z19; \
	VPADDQ     Z19, Z18, Z18;       \
	VPADDQ     Z17, Z15, Z20;       \
	VSHUFI64X2 $0x4E, Z20, Z20, Z19; \
	VPADDQ     Z19, Z20, Z20;       \
	VPADDQ     Z18, Z14, Z14;       \
	VPADDQ     Z18, Z16, Z16;       \
	VPADDQ     Z20, Z15, Z15;       \
	VPADDQ     Z20, Z17, Z17;       \
	M4(Z14, Z21, Z22, Z23);         \
	M4(Z15, Z24, Z25, Z26);         \
	M4(Z16, Z21, Z22, Z23);         \
	M4(Z17, Z24, Z25, Z26);         \
	FOLD(Z14, Z15, Z0, Z27, Z28, K1, K2); \
	FOLD(Z16, Z17, Z1, Z29, Z19, K3, K4)

// M4 replaces each 4-lane group of U by M4·U: row j is s + u_j + 2·u_(j+1)
// with s the group's sum. VPERMQ permutes within 256-bit halves, which are
// exactly the groups.
#define M4(U, R, S, T) \
	VPERMQ $0x39, U, R;  \
	VPERMQ $0x4E, U, S;  \
	VPADDQ U, S, S;      \
	VPERMQ $0xB1, S, T;  \
	VPADDQ T, S, S;      \
	VPADDQ S, U, U;      \
	VPADDQ R, U, U;      \
	VPADDQ R, U, U

// FOLD sets V ≡ L + H·2^32 for L, H < 2^38.
#define FOLD(L, H, V, T1, T2, KA, KB) \
	VPSLLQ   $32, H, T1;       \
	VPADDQ   T1, L, V;         \
	VPCMPUQ  $1, L, V, KA;     \
	VPADDQ   Z30, V, KA, V;    \
	VPSRLQ   $32, H, T2;       \
	VPMULUDQ Z30, T2, T2;      \
	VPADDQ   T2, V, V;         \
	VPCMPUQ  $1, T2, V, KB;    \
	VPADDQ   Z30, V, KB, V

// SBOX sets Z0, Z1 ← (Z0 + Z2)^7, (Z1 + Z3)^7. Scratch: Z4..Z25, K1..K4.
#define SBOX \
	ADDC(Z0, Z2, Z4, K1); \
	ADDC(Z1, Z3, Z5, K2); \
	MULRED(Z4, Z4, Z6, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2); \
	MULRED(Z5, Z5, Z7, Z20, Z21, Z22, Z23, Z24, Z25, K3, K4); \
	MULRED(Z6, Z4, Z8, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2); \
	MULRED(Z7, Z5, Z9, Z20, Z21, Z22, Z23, Z24, Z25, K3, K4); \
	MULRED(Z6, Z6, Z10, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2); \
	MULRED(Z7, Z7, Z11, Z20, Z21, Z22, Z23, Z24, Z25, K3, K4); \
	MULRED(Z8, Z10, Z0, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2); \
	MULRED(Z9, Z11, Z1, Z20, Z21, Z22, Z23, Z24, Z25, K3, K4)

#define EPS \
	MOVQ         $0xFFFFFFFF, CX; \
	VPBROADCASTQ CX, Z30

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

// RED folds DX:AX (any 128-bit value) into a lazy representative in AX,
// as red does (arith.go), the borrow and the carry corrected in turn.
// Scratch: SI, DI.
#define RED \
	MOVQ DX, SI;  \
	SHLQ $32, SI; \
	MOVL DX, DI;  \
	SUBQ DI, SI;  \
	SHRQ $32, DX; \
	SUBQ DX, AX;  \
	SBBQ DI, DI;  \
	MOVL DI, DI;  \
	SUBQ DI, AX;  \
	ADDQ SI, AX;  \
	SBBQ DI, DI;  \
	MOVL DI, DI;  \
	ADDQ DI, AX

// CANON sets SI to the canonical form of R (lazy). Scratch: DI.
#define CANON(R) \
	MOVQ    R, SI;           \
	MOVQ    $0xFFFFFFFF, DI; \
	ADDQ    SI, DI;          \
	CMOVQCS DI, SI

// HSUM sets R9 to a lazy representative of the sum of lanes 1..15 of
// Z0, Z1: exact sums of the 32-bit halves (below 15·2^32), then
// L + H·2^32 folded as in FOLD. Scratch: Z10..Z13, K5, AX, SI, DI.
#define HSUM \
	MOVQ          $0xFE, AX;       \
	KMOVQ         AX, K5;          \
	VPANDQ.Z      Z30, Z0, K5, Z10; \
	VPSRLQ.Z      $32, Z0, K5, Z11; \
	VPANDQ        Z30, Z1, Z12;    \
	VPSRLQ        $32, Z1, Z13;    \
	VPADDQ        Z12, Z10, Z10;   \
	VPADDQ        Z13, Z11, Z11;   \
	VEXTRACTI64X4 $1, Z10, Y12;    \
	VPADDQ        Y12, Y10, Y10;   \
	VEXTRACTI64X4 $1, Z11, Y13;    \
	VPADDQ        Y13, Y11, Y11;   \
	VEXTRACTI128  $1, Y10, X12;    \
	VPADDQ        X12, X10, X10;   \
	VEXTRACTI128  $1, Y11, X13;    \
	VPADDQ        X13, X11, X11;   \
	VPSHUFD       $0x4E, X10, X12; \
	VPADDQ        X12, X10, X10;   \
	VPSHUFD       $0x4E, X11, X13; \
	VPADDQ        X13, X11, X11;   \
	VMOVQ         X10, SI;         \
	VMOVQ         X11, DI;         \
	MOVQ          DI, AX;          \
	SHLQ          $32, AX;         \
	ADDQ          AX, SI;          \
	SBBQ          AX, AX;          \
	MOVL          AX, AX;          \
	ADDQ          AX, SI;          \
	SHRQ          $32, DI;         \
	MOVQ          DI, AX;          \
	SHLQ          $32, AX;         \
	SUBQ          DI, AX;          \
	ADDQ          AX, SI;          \
	SBBQ          AX, AX;          \
	MOVL          AX, AX;          \
	ADDQ          AX, SI;          \
	MOVQ          SI, R9

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
