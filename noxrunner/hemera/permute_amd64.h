// Macros shared by the one-state (simd_amd64.s) and two-state
// (simd2_amd64.s) AVX-512 routines. Z30 must hold ε in every lane.

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
#define EXT EXTON(Z0, Z1)

// EXTON is EXT on the lanes in A (0..7) and B (8..15).
#define EXTON(A, B) \
	VPANDQ     Z30, A, Z14;         \
	VPSRLQ     $32, A, Z15;         \
	VPANDQ     Z30, B, Z16;         \
	VPSRLQ     $32, B, Z17;         \
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
	FOLD(Z14, Z15, A, Z27, Z28, K1, K2); \
	FOLD(Z16, Z17, B, Z29, Z19, K3, K4)

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
#define HSUM HSUMON(Z0, Z1, R9)

// HSUMON is HSUM of the lanes in A (0..7) and B (8..15) into OUT.
#define HSUMON(A, B, OUT) \
	MOVQ          $0xFE, AX;       \
	KMOVQ         AX, K5;          \
	VPANDQ.Z      Z30, A, K5, Z10; \
	VPSRLQ.Z      $32, A, K5, Z11; \
	VPANDQ        Z30, B, Z12;     \
	VPSRLQ        $32, B, Z13;     \
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
	MOVQ          SI, OUT

