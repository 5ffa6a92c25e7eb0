//go:build !purego

#include "textflag.h"

// AVX-512 twin of sbox16Go (sbox.go): x[i] ← (x[i] + c[i])^7 for the 16
// lanes, as two vectors of eight. Products are built from 32-bit halves
// with VPMULUDQ and folded like red (arith.go): lo − h1 + h0·ε, with the
// borrow and the carry corrected in turn by masked subtract/add of ε.
// Z30 holds ε = 2^32 − 1 in every lane.

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
	VPANDQ   Z30, T3, T3;       \
	VPORQ    T5, T3, T3;        \
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

// func sbox16AVX512(x *[16]uint64, c *[16]uint64)
TEXT ·sbox16AVX512(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), AX
	MOVQ c+8(FP), BX
	MOVQ $0xFFFFFFFF, CX
	VPBROADCASTQ CX, Z30
	VMOVDQU64 (AX), Z0
	VMOVDQU64 64(AX), Z1
	VMOVDQU64 (BX), Z2
	VMOVDQU64 64(BX), Z3
	ADDC(Z0, Z2, Z4, K1)
	ADDC(Z1, Z3, Z5, K2)
	MULRED(Z4, Z4, Z6, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2)
	MULRED(Z5, Z5, Z7, Z20, Z21, Z22, Z23, Z24, Z25, K3, K4)
	MULRED(Z6, Z4, Z8, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2)
	MULRED(Z7, Z5, Z9, Z20, Z21, Z22, Z23, Z24, Z25, K3, K4)
	MULRED(Z6, Z6, Z10, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2)
	MULRED(Z7, Z7, Z11, Z20, Z21, Z22, Z23, Z24, Z25, K3, K4)
	MULRED(Z8, Z10, Z12, Z14, Z15, Z16, Z17, Z18, Z19, K1, K2)
	MULRED(Z9, Z11, Z13, Z20, Z21, Z22, Z23, Z24, Z25, K3, K4)
	VMOVDQU64 Z12, (AX)
	VMOVDQU64 Z13, 64(AX)
	VZEROUPPER
	RET
