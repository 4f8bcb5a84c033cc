//go:build !purego

#include "textflag.h"
#include "quant_arm64.h"

// Prefill (multi-token) kernels of the GGUF block types on arm64: the
// rows kernels of quant_arm64.s for four activation rows (tokens) at
// once, for Q8_0, Q4_K and Q6_K (the Q8_0 and Q4_K_M files). Each weight
// block is loaded and unpacked once (codes, d, the sub-block scales) and
// multiplied with the four tokens' activations, which lie K bytes apart
// (d: nb floats, sums: 16·nb int16). A token's arithmetic is the
// one-token kernel's, except that the K-quants scale each sub-block's
// sum as it comes (MLA by element) into one int32 vector per token.
//
// Registers: R0 the weights; R1, R2, R3 token 0's activations, d_x and
// sums (post-incremented); the other tokens' pointers are computed per
// step (T4_PTRS) from the strides R19 (K bytes), R20 (4·nb) and R21
// (32·nb); R22 ldo·4; R14 the row's output of token 0. R10–R12 hold the
// bases, R15 nb, R13 the rows left. Every kernel has the signature
// func(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32, ldo int)
// with nb ≥ 1, nrows ≥ 1; out[t·ldo + i] is token t's product with row i.

// T4_PTRS: P + stride, P + 2·stride, P + 3·stride into A, B, C.
#define T4_PTRS(P, stride, A, B, C) \
	ADD stride, P, A; \
	ADD stride<<1, P, B; \
	ADD stride, B, C

// T4_STORE: the four tokens' float lanes (registers f0…f3, named F0…F3)
// summed and stored; R14 moves to the next row. Uses R5.
#define T4_STORE(f0, f1, f2, f3, F0, F1, F2, F3) \
	FADDP(f0, f0, f0); \
	FADDP(f1, f1, f1); \
	FADDP(f2, f2, f2); \
	FADDP(f3, f3, f3); \
	FADDP(f0, f0, f0); \
	FADDP(f1, f1, f1); \
	FADDP(f2, f2, f2); \
	FADDP(f3, f3, f3); \
	FMOVS F0, (R14); \
	FMOVS F1, (R14)(R22); \
	ADD R22<<1, R14, R5; \
	FMOVS F2, (R5); \
	FMOVS F3, (R5)(R22); \
	ADD $4, R14

// ---------------------------------------------------------------------
// Q8_0: four blocks a step as in rowsQ8_0 (codes V0–V7, d in V24), then
// per token its activations (V16–V23), sums (V8–V11 reduced into V8)
// and d_x (V25) into its float lanes (V28–V31); the last nb%4 blocks one
// at a time in lane 0.

// One token (activations at QP, d_x at DP) of a four-block step.
#define Q80T_TOKEN(DOT, QP, DP, FACC) \
	VLD1.P 64(QP), [V16.B16, V17.B16, V18.B16, V19.B16]; \
	VLD1.P 64(QP), [V20.B16, V21.B16, V22.B16, V23.B16]; \
	DOT(8, 0, 1, 16, 17, 12, 13); \
	DOT(9, 2, 3, 18, 19, 14, 15); \
	DOT(10, 4, 5, 20, 21, 12, 13); \
	DOT(11, 6, 7, 22, 23, 14, 15); \
	VADDP V9.S4, V8.S4, V8.S4; \
	VADDP V11.S4, V10.S4, V10.S4; \
	VADDP V10.S4, V8.S4, V8.S4; \
	VLD1.P 16(DP), [V25.S4]; \
	FMUL(25, 25, 24); \
	SCVTF(8, 8); \
	VFMLA V25.S4, V8.S4, FACC.S4

#define Q80T_GROUP(DOT) \
	BLK_Q80(0, V0, V1, V12, V13, V14); \
	BLK_Q80(1, V2, V3, V12, V13, V14); \
	BLK_Q80(2, V4, V5, V12, V13, V14); \
	BLK_Q80(3, V6, V7, V12, V13, V14); \
	FCVTL(24, 24); \
	T4_PTRS(R1, R19, R5, R6, R7); \
	T4_PTRS(R2, R20, R8, R9, R16); \
	Q80T_TOKEN(DOT, R1, R2, V28); \
	Q80T_TOKEN(DOT, R5, R8, V29); \
	Q80T_TOKEN(DOT, R6, R9, V30); \
	Q80T_TOKEN(DOT, R7, R16, V31)

// One token of a single block (lane 0; the other lanes of V8, V24, V25
// are zero).
#define Q80T_TOKEN1(DOT, QP, DP, FACC) \
	VLD1.P 32(QP), [V16.B16, V17.B16]; \
	DOT(8, 0, 1, 16, 17, 12, 13); \
	VADDV V8.S4, V8; \
	FMOVS.P 4(DP), F25; \
	FMUL(25, 25, 24); \
	SCVTF(8, 8); \
	VFMLA V25.S4, V8.S4, FACC.S4

#define Q80T_ONE(DOT) \
	MOVI0(24); \
	BLK_Q80(0, V0, V1, V12, V13, V14); \
	FCVTL(24, 24); \
	T4_PTRS(R1, R19, R5, R6, R7); \
	T4_PTRS(R2, R20, R8, R9, R16); \
	Q80T_TOKEN1(DOT, R1, R2, V28); \
	Q80T_TOKEN1(DOT, R5, R8, V29); \
	Q80T_TOKEN1(DOT, R6, R9, V30); \
	Q80T_TOKEN1(DOT, R7, R16, V31)

#define ROWS4_Q80(DOT) \
row: \
	MOVD R10, R1; \
	MOVD R11, R2; \
	MOVI0(28); \
	MOVI0(29); \
	MOVI0(30); \
	MOVI0(31); \
	LSR $2, R15, R4; \
	CBZ R4, tail; \
group: \
	Q80T_GROUP(DOT); \
	SUBS $1, R4; \
	BNE group; \
tail: \
	ANDS $3, R15, R4; \
	BEQ done; \
one: \
	Q80T_ONE(DOT); \
	SUBS $1, R4; \
	BNE one; \
done: \
	T4_STORE(28, 29, 30, 31, F28, F29, F30, F31); \
	SUBS $1, R13; \
	BNE row

// ---------------------------------------------------------------------
// Q4_K: per super-block the scales (V18: 0–3, V19: 4–7, int32), mins
// (V24, int16) and [d, dmin] (V25) once; per chunk the codes (V0, V1 low
// nibbles: sub-block 2c; V2, V3 high: 2c+1) once, then per token its
// activations (V4–V7), the two sub-block sums (V8, V9; V10–V13 scratch
// of the NEON form) times their scales into its int32 vector (V14–V17);
// at the end per token the mins and d, dmin into its float lanes
// (V20–V23). V28 holds 0x0f bytes.

#define Q4KT_TOKEN(DOT, QP, ia, sv, lo, hi) \
	VLD1.P 64(QP), [V4.B16, V5.B16, V6.B16, V7.B16]; \
	DOT(8, 0, 1, 4, 5, 10, 11); \
	DOT(9, 2, 3, 6, 7, 12, 13); \
	MLAE(ia, 8, sv, lo); \
	MLAE(ia, 9, sv, hi)

#define Q4KT_CHUNK(DOT, sv, lo, hi) \
	VLD1.P 32(R0), [V2.B16, V3.B16]; \
	VAND V28.B16, V2.B16, V0.B16; \
	VAND V28.B16, V3.B16, V1.B16; \
	VUSHR $4, V2.B16, V2.B16; \
	VUSHR $4, V3.B16, V3.B16; \
	Q4KT_TOKEN(DOT, R1, 14, sv, lo, hi); \
	Q4KT_TOKEN(DOT, R5, 15, sv, lo, hi); \
	Q4KT_TOKEN(DOT, R6, 16, sv, lo, hi); \
	Q4KT_TOKEN(DOT, R7, 17, sv, lo, hi)

// A token's end of a super-block: Σ_j m_j·(Σq of sub-block j) from its
// sums at SP (V27), d_x at DP, then FACC += float(IACC)·(d·d_x) −
// float(V27)·(dmin·d_x).
#define K45T_END(DP, SP, IACC, ia, FACC) \
	VLD1.P 32(SP), [V26.H8, V27.H8]; \
	VADDP V27.H8, V26.H8, V26.H8; \
	SMULL4S(27, 26, 24); \
	SMLAL24S(27, 26, 24); \
	VLD1R.P 4(DP), [V29.S4]; \
	FMUL(29, 29, 25); \
	VDUP V29.S[0], V30.S4; \
	VDUP V29.S[1], V31.S4; \
	SCVTF(ia, ia); \
	SCVTF(27, 27); \
	VFMLA V30.S4, IACC.S4, FACC.S4; \
	VFMLS V31.S4, V27.S4, FACC.S4

#define Q4KT_BLOCK(DOT) \
	K45_HEAD; \
	VMOV R6, V18.D[0]; \
	VUXTL V18.B8, V18.H8; \
	VUXTL2 V18.H8, V19.S4; \
	VUXTL V18.H4, V18.S4; \
	VMOV R7, V24.D[0]; \
	VUXTL V24.B8, V24.H8; \
	VMOV R5, V25.S[0]; \
	FCVTL(25, 25); \
	T4_PTRS(R1, R19, R5, R6, R7); \
	MOVI0(14); \
	MOVI0(15); \
	MOVI0(16); \
	MOVI0(17); \
	Q4KT_CHUNK(DOT, 18, 0, 1); \
	Q4KT_CHUNK(DOT, 18, 2, 3); \
	Q4KT_CHUNK(DOT, 19, 0, 1); \
	Q4KT_CHUNK(DOT, 19, 2, 3); \
	T4_PTRS(R2, R20, R5, R6, R7); \
	T4_PTRS(R3, R21, R8, R9, R16); \
	K45T_END(R2, R3, V14, 14, V20); \
	K45T_END(R5, R8, V15, 15, V21); \
	K45T_END(R6, R9, V16, 16, V22); \
	K45T_END(R7, R16, V17, 17, V23)

// ---------------------------------------------------------------------
// Q6_K: per half the codes 0…63 once (groups 0–3, columns 0 and 1: V0,
// V1 / V2, V3 / V6, V7 / V8, V9; the qh bytes V4, V5, free afterwards
// for the NEON form's scratch), then per token its activations (V10–V13,
// two groups at a time), each sub-block's sum (V14, V15) times its scale
// (V24–V27: int32, four each) into its int32 vector (V16–V19). At the
// end per token the −32 offset (32·Σ_g sc_g·Σq of sub-block g, from its
// sums) and d·d_x into its float lanes (V20–V23). V28 holds 0x03 bytes.

// One column (A: ql[64h+l], B: ql[64h+32+l], Q: qh[32h+l]) into groups
// 0, 1 in place and 2, 3 in E, F (SLI puts the qh bits over the nibble).
#define Q6KT_COLUMN(A, B, Q, E, F) \
	VUSHR $4, A.B16, E.B16; \
	VUSHR $4, Q.B16, V29.B16; \
	VAND V28.B16, V29.B16, V29.B16; \
	VSLI $4, V29.B16, E.B16; \
	VUSHR $4, B.B16, F.B16; \
	VUSHR $6, Q.B16, V30.B16; \
	VSLI $4, V30.B16, F.B16; \
	VAND V28.B16, Q.B16, V29.B16; \
	VSLI $4, V29.B16, A.B16; \
	VUSHR $2, Q.B16, V30.B16; \
	VAND V28.B16, V30.B16, V30.B16; \
	VSLI $4, V30.B16, B.B16

// One token's half: sub-blocks 8h…8h+3 scale from lanes of s0, 8h+4…
// from s1.
#define Q6KT_TOKEN(DOT, QP, ia, s0, s1) \
	VLD1.P 64(QP), [V10.B16, V11.B16, V12.B16, V13.B16]; \
	DOT(14, 0, 10, 4); \
	DOT(15, 1, 11, 5); \
	MLAE(ia, 14, s0, 0); \
	MLAE(ia, 15, s0, 1); \
	DOT(14, 2, 12, 4); \
	DOT(15, 3, 13, 5); \
	MLAE(ia, 14, s0, 2); \
	MLAE(ia, 15, s0, 3); \
	VLD1.P 64(QP), [V10.B16, V11.B16, V12.B16, V13.B16]; \
	DOT(14, 6, 10, 4); \
	DOT(15, 7, 11, 5); \
	MLAE(ia, 14, s1, 0); \
	MLAE(ia, 15, s1, 1); \
	DOT(14, 8, 12, 4); \
	DOT(15, 9, 13, 5); \
	MLAE(ia, 14, s1, 2); \
	MLAE(ia, 15, s1, 3)

// Half h: ql at R0, qh at R8.
#define Q6KT_HALF(DOT, s0, s1) \
	VLD1.P 64(R0), [V0.B16, V1.B16, V2.B16, V3.B16]; \
	VLD1.P 32(R8), [V4.B16, V5.B16]; \
	Q6KT_COLUMN(V0, V2, V4, V6, V8); \
	Q6KT_COLUMN(V1, V3, V5, V7, V9); \
	Q6KT_TOKEN(DOT, R1, 16, s0, s1); \
	Q6KT_TOKEN(DOT, R5, 17, s0, s1); \
	Q6KT_TOKEN(DOT, R6, 18, s0, s1); \
	Q6KT_TOKEN(DOT, R7, 19, s0, s1)

// A token's end of a super-block: its int32 vector less 32·Σ sc_g·Q_g
// (sums at SP, each times 32 in int32 (V12), MLS by the scales), then
// FACC += float(IACC)·(d·d_x) (d broadcast in V31, d_x at DP).
#define Q6KT_END(DP, SP, IACC, ia, FACC) \
	VLD1.P 32(SP), [V10.H8, V11.H8]; \
	SSHLL4S(12, 10, 5); \
	MLS4S(ia, 12, 24); \
	SSHLL24S(12, 10, 5); \
	MLS4S(ia, 12, 25); \
	SSHLL4S(12, 11, 5); \
	MLS4S(ia, 12, 26); \
	SSHLL24S(12, 11, 5); \
	MLS4S(ia, 12, 27); \
	VLD1R.P 4(DP), [V13.S4]; \
	FMUL(13, 13, 31); \
	SCVTF(ia, ia); \
	VFMLA V13.S4, IACC.S4, FACC.S4

// block_q6_K: ql[128], qh[64], scales[16] int8, d.
#define Q6KT_BLOCK(DOT) \
	ADD $128, R0, R8; \
	ADD $192, R0, R9; \
	VLD1 (R9), [V27.B16]; \
	MOVHU 16(R9), R17; \
	SXTL8H(29, 27); \
	SXTL28H(30, 27); \
	SSHLL4S(24, 29, 0); \
	SSHLL24S(25, 29, 0); \
	SSHLL4S(26, 30, 0); \
	SSHLL24S(27, 30, 0); \
	T4_PTRS(R1, R19, R5, R6, R7); \
	MOVI0(16); \
	MOVI0(17); \
	MOVI0(18); \
	MOVI0(19); \
	Q6KT_HALF(DOT, 24, 25); \
	Q6KT_HALF(DOT, 26, 27); \
	ADD $82, R0; \
	FMOVS R17, F31; \
	FCVTHS F31, F31; \
	VDUP V31.S[0], V31.S4; \
	T4_PTRS(R2, R20, R5, R6, R7); \
	T4_PTRS(R3, R21, R8, R9, R16); \
	Q6KT_END(R2, R3, V16, 16, V20); \
	Q6KT_END(R5, R8, V17, 17, V21); \
	Q6KT_END(R6, R9, V18, 18, V22); \
	Q6KT_END(R7, R16, V19, 19, V23)

// ROWS4_K: the row loop of a K-quant.
#define ROWS4_K(BLOCK, DOT) \
row: \
	MOVD R10, R1; \
	MOVD R11, R2; \
	MOVD R12, R3; \
	MOVD R15, R4; \
	MOVI0(20); \
	MOVI0(21); \
	MOVI0(22); \
	MOVI0(23); \
block: \
	BLOCK(DOT); \
	SUBS $1, R4; \
	BNE block; \
	T4_STORE(20, 21, 22, 23, F20, F21, F22, F23); \
	SUBS $1, R13; \
	BNE row

// func rows4Q8_0SDOT(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32, ldo int)
TEXT ·rows4Q8_0SDOT(SB), NOSPLIT, $0-64
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	MOVD ldo+56(FP), R22
	LSL $2, R22, R22
	LSL $5, R15, R19
	LSL $2, R15, R20
	LSL $5, R15, R21
	ROWS4_Q80(DOT32_SDOT)
	RET

// func rows4Q8_0NEON(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32, ldo int)
TEXT ·rows4Q8_0NEON(SB), NOSPLIT, $0-64
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	MOVD ldo+56(FP), R22
	LSL $2, R22, R22
	LSL $5, R15, R19
	LSL $2, R15, R20
	LSL $5, R15, R21
	ROWS4_Q80(DOT32_NEON)
	RET

// func rows4Q4KSDOT(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32, ldo int)
TEXT ·rows4Q4KSDOT(SB), NOSPLIT, $0-64
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	MOVD ldo+56(FP), R22
	LSL $2, R22, R22
	LSL $8, R15, R19
	LSL $2, R15, R20
	LSL $5, R15, R21
	VMOVI $15, V28.B16
	ROWS4_K(Q4KT_BLOCK, DOT32_SDOT)
	RET

// func rows4Q4KNEON(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32, ldo int)
TEXT ·rows4Q4KNEON(SB), NOSPLIT, $0-64
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	MOVD ldo+56(FP), R22
	LSL $2, R22, R22
	LSL $8, R15, R19
	LSL $2, R15, R20
	LSL $5, R15, R21
	VMOVI $15, V28.B16
	ROWS4_K(Q4KT_BLOCK, DOT32_NEON)
	RET

// func rows4Q6KSDOT(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32, ldo int)
TEXT ·rows4Q6KSDOT(SB), NOSPLIT, $0-64
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	MOVD ldo+56(FP), R22
	LSL $2, R22, R22
	LSL $8, R15, R19
	LSL $2, R15, R20
	LSL $5, R15, R21
	VMOVI $3, V28.B16
	ROWS4_K(Q6KT_BLOCK, DOT16_SDOT)
	RET

// func rows4Q6KNEON(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32, ldo int)
TEXT ·rows4Q6KNEON(SB), NOSPLIT, $0-64
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	MOVD ldo+56(FP), R22
	LSL $2, R22, R22
	LSL $8, R15, R19
	LSL $2, R15, R20
	LSL $5, R15, R21
	VMOVI $3, V28.B16
	ROWS4_K(Q6KT_BLOCK, DOT16_NEON)
	RET
