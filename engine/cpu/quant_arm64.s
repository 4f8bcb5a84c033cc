//go:build !purego

#include "textflag.h"
#include "quant_arm64.h"

// NEON row products of the GGUF block types (quant_kernels.go has the
// portable ones and the layouts). Each multiplies nrows consecutive weight
// rows with one activation row in its block form and writes one float32 a
// row. Codes are unpacked to bytes (signed, or unsigned with the offset
// taken off through the activation sums), multiplied with the int8
// activations into exact int32 sums per block (32 elements) or sub-block
// (16 or 32 of a K-quant super-block), scaled by the integer sub-block
// scales, converted once per block or super-block and accumulated with FMA
// times d_w·d_x in four float lanes: the portable kernel's terms in
// another order, so they agree to rounding.
//
// Every kernel comes twice, differing only in the DOT macro it passes to
// its body: *SDOT with the dot-product extension (Cortex-A55/A76), *NEON
// with ARMv8.0's widening multiplies (Cortex-A53). In the NEON form each
// int16 lane adds two products: codes are at most 128 (Q8_0's −128) and
// activations at most 127 in magnitude (both forms), 2·128·127 < 2^15.
//
// The 32-element types run four blocks at a time: block j's codes in
// V(2j), V(2j+1), its d (fp16) in lane j of V24 (and Q4_1/Q5_1's m in
// V26), its int32 sum in V(8+j) reduced to lane j of V8; then V31 +=
// float(V8)·(d·d_x). The last nb%4 blocks take the same path one at a
// time in lane 0. The K-quants run one super-block at a time.

// ROW_END: the row's four float lanes summed into out (R14).
#define ROW_END \
	FADDP(31, 31, 31); \
	FADDP(31, 31, 31); \
	FMOVS.P F31, 4(R14)

// ---------------------------------------------------------------------
// The 32-element types. R0 weights (all rows, consecutive), R1
// activations, R2 d_x, R3 activation sums (int16, one a block).

// GROUP32: four blocks (BLK unpacks one: its index, its two code
// registers, three scratch registers) into V31; POST applies the type's
// offset or min to the int sums V8 given its sums loader.
#define GROUP32(BLK, DOT, POST) \
	BLK(0, V0, V1, V12, V13, V14); \
	BLK(1, V2, V3, V15, V16, V17); \
	BLK(2, V4, V5, V18, V19, V20); \
	BLK(3, V6, V7, V21, V22, V23); \
	VLD1.P 64(R1), [V16.B16, V17.B16, V18.B16, V19.B16]; \
	VLD1.P 64(R1), [V20.B16, V21.B16, V22.B16, V23.B16]; \
	DOT(8, 0, 1, 16, 17, 12, 13); \
	DOT(9, 2, 3, 18, 19, 14, 15); \
	DOT(10, 4, 5, 20, 21, 12, 13); \
	DOT(11, 6, 7, 22, 23, 14, 15); \
	VADDP V9.S4, V8.S4, V8.S4; \
	VADDP V11.S4, V10.S4, V10.S4; \
	VADDP V10.S4, V8.S4, V8.S4; \
	VLD1.P 16(R2), [V25.S4]; \
	POST(SUMS4); \
	BLOCK_ACC

// TAIL32: one block in lane 0 (the other lanes of every operand zero).
#define TAIL32(BLK, DOT, POST) \
	MOVI0(24); \
	MOVI0(26); \
	MOVI0(27); \
	BLK(0, V0, V1, V12, V13, V14); \
	VLD1.P 32(R1), [V16.B16, V17.B16]; \
	DOT(8, 0, 1, 16, 17, 12, 13); \
	VADDV V8.S4, V8; \
	FMOVS.P 4(R2), F25; \
	POST(SUMS1); \
	BLOCK_ACC

// BLOCK_ACC: V31 += float(V8)·(fp16 d in V24 · d_x in V25).
#define BLOCK_ACC \
	FCVTL(24, 24); \
	FMUL(24, 24, 25); \
	SCVTF(8, 8); \
	VFMLA V24.S4, V8.S4, V31.S4

// The activation sums of four blocks, or of one (into lane 0), into V27.
#define SUMS4 VLD1.P 8(R3), [V27.H4]
#define SUMS1 VLD1.P 2(R3), V27.H[0]

// POST forms. Q8_0, Q5_0 and IQ4_NL have signed codes: nothing to do.
#define POST_NONE(S)

// Q4_0: codes n are unsigned: Σ(n−8)·q = Σn·q − 8Σq.
#define POST_Q40(S) \
	S; \
	SSHLL4S(12, 27, 3); \
	VSUB V12.S4, V8.S4, V8.S4

// The min of Q4_1 and Q5_1: V31 += Σq·(m·d_x) (m fp16 in V26).
#define MIN_TERM \
	FCVTL(26, 26); \
	FMUL(26, 26, 25); \
	SSHLL4S(27, 27, 0); \
	SCVTF(27, 27); \
	VFMLA V26.S4, V27.S4, V31.S4

#define POST_Q41(S) \
	S; \
	MIN_TERM

// Q5_1: codes are n−16 (Q5_0's unpacking), so Σn·q = Σ(n−16)·q + 16Σq.
#define POST_Q51(S) \
	S; \
	SSHLL4S(12, 27, 4); \
	VADD V12.S4, V8.S4, V8.S4; \
	MIN_TERM

// Sixteen bytes of nibbles at R0: low ones (elements 0…15) into A, high
// ones into B. V28 holds 0x0f bytes.
#define NIBBLES(A, B) \
	VLD1.P 16(R0), [A.B16]; \
	VUSHR $4, A.B16, B.B16; \
	VAND V28.B16, A.B16, A.B16

// block_q4_0: d, qs[16].
#define BLK_Q40(j, A, B, T0, T1, T2) \
	VLD1.P 2(R0), V24.H[j]; \
	NIBBLES(A, B)

// block_q4_1: d, m, qs[16].
#define BLK_Q41(j, A, B, T0, T1, T2) \
	VLD1.P 2(R0), V24.H[j]; \
	VLD1.P 2(R0), V26.H[j]; \
	NIBBLES(A, B)

// block_iq4_nl: d, qs[16]; each nibble looked up in the codebook (V29).
#define BLK_IQ4NL(j, A, B, T0, T1, T2) \
	VLD1.P 2(R0), V24.H[j]; \
	NIBBLES(A, B); \
	VTBL A.B16, [V29.B16], A.B16; \
	VTBL B.B16, [V29.B16], B.B16

// Q5: qh (element i's fifth bit is bit i) and qs[16] at R0, into signed
// codes n−16. The inverted qh bytes spread over the lanes (V29: bytes
// 0, 1 eight times each; V30: 2, 3), tested against the lane's bit (V28:
// 1, 2, …, 128 twice) give 0xff where the bit is clear; SLI puts that
// mask's low nibble (0xf0 = −16 in the top half) over the nibble.
#define Q5_CODES(A, B, T0, T1, T2) \
	MOVWU.P 4(R0), R5; \
	VLD1.P 16(R0), [A.B16]; \
	MVNW R5, R5; \
	VMOV R5, T0.S[0]; \
	VUSHR $4, A.B16, B.B16; \
	VTBL V29.B16, [T0.B16], T1.B16; \
	VTBL V30.B16, [T0.B16], T2.B16; \
	VCMTST V28.B16, T1.B16, T1.B16; \
	VCMTST V28.B16, T2.B16, T2.B16; \
	VSLI $4, T1.B16, A.B16; \
	VSLI $4, T2.B16, B.B16

// block_q5_0: d, qh, qs[16].
#define BLK_Q50(j, A, B, T0, T1, T2) \
	VLD1.P 2(R0), V24.H[j]; \
	Q5_CODES(A, B, T0, T1, T2)

// block_q5_1: d, m, qh, qs[16].
#define BLK_Q51(j, A, B, T0, T1, T2) \
	VLD1.P 2(R0), V24.H[j]; \
	VLD1.P 2(R0), V26.H[j]; \
	Q5_CODES(A, B, T0, T1, T2)

// Constants: V28 = 0x0f bytes (Q4_0, Q4_1, IQ4_NL); V29 the IQ4_NL
// codebook (gguf.IQ4NLValues); Q5's V28-V30 (above).
#define CONST_NIBBLES VMOVI $15, V28.B16
#define CONST_IQ4NL \
	VMOVI $15, V28.B16; \
	VMOVQ $0xf6eaddcfbfad9881, $0x7159453526190d01, V29
#define CONST_Q5 \
	VMOVQ $0x8040201008040201, $0x8040201008040201, V28; \
	VMOVQ $0x0000000000000000, $0x0101010101010101, V29; \
	VMOVQ $0x0202020202020202, $0x0303030303030303, V30


// ROWS32: the row loop of a 32-element type: R10, R11, R12 the
// activation row's codes, scales and sums, R15 nb, R13 nrows, R14 out.
#define ROWS32(BLK, DOT, POST) \
row: \
	MOVD R10, R1; \
	MOVD R11, R2; \
	MOVD R12, R3; \
	MOVI0(31); \
	LSR $2, R15, R4; \
	CBZ R4, tail; \
group: \
	GROUP32(BLK, DOT, POST); \
	SUBS $1, R4; \
	BNE group; \
tail: \
	ANDS $3, R15, R4; \
	BEQ done; \
one: \
	TAIL32(BLK, DOT, POST); \
	SUBS $1, R4; \
	BNE one; \
done: \
	ROW_END; \
	SUBS $1, R13; \
	BNE row

// func rowsQ8_0SDOT(w *byte, q *int8, d *float32, sum *int16, nb, nrows int, out *float32)
// (every kernel has this signature; nb ≥ 1 and nrows ≥ 1)
TEXT ·rowsQ8_0SDOT(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	ROWS32(BLK_Q80, DOT32_SDOT, POST_NONE)
	RET

TEXT ·rowsQ8_0NEON(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	ROWS32(BLK_Q80, DOT32_NEON, POST_NONE)
	RET

TEXT ·rowsQ4_0SDOT(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	CONST_NIBBLES
	ROWS32(BLK_Q40, DOT32_SDOT, POST_Q40)
	RET

TEXT ·rowsQ4_0NEON(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	CONST_NIBBLES
	ROWS32(BLK_Q40, DOT32_NEON, POST_Q40)
	RET

TEXT ·rowsQ4_1SDOT(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	CONST_NIBBLES
	ROWS32(BLK_Q41, DOT32_SDOT, POST_Q41)
	RET

TEXT ·rowsQ4_1NEON(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	CONST_NIBBLES
	ROWS32(BLK_Q41, DOT32_NEON, POST_Q41)
	RET

TEXT ·rowsQ5_0SDOT(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	CONST_Q5
	ROWS32(BLK_Q50, DOT32_SDOT, POST_NONE)
	RET

TEXT ·rowsQ5_0NEON(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	CONST_Q5
	ROWS32(BLK_Q50, DOT32_NEON, POST_NONE)
	RET

TEXT ·rowsQ5_1SDOT(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	CONST_Q5
	ROWS32(BLK_Q51, DOT32_SDOT, POST_Q51)
	RET

TEXT ·rowsQ5_1NEON(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	CONST_Q5
	ROWS32(BLK_Q51, DOT32_NEON, POST_Q51)
	RET

TEXT ·rowsIQ4NLSDOT(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	CONST_IQ4NL
	ROWS32(BLK_IQ4NL, DOT32_SDOT, POST_NONE)
	RET

TEXT ·rowsIQ4NLNEON(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	CONST_IQ4NL
	ROWS32(BLK_IQ4NL, DOT32_NEON, POST_NONE)
	RET

// ---------------------------------------------------------------------
// The K-quants, one 256-element super-block at a time: R0 weights, R1
// activations, R2 d_x, R3 the activation sums (int16, one per 16).
// Sub-block sums go to V8…V15 (reduced by REDUCE8), the int32 total of a
// super-block to V8 (Q4_K, Q5_K) or V29. R5–R9, R16, R17 are scratch.

// ROWSK: the row loop of a K-quant (registers as ROWS32's).
#define ROWSK(BLOCK, DOT) \
row: \
	MOVD R10, R1; \
	MOVD R11, R2; \
	MOVD R12, R3; \
	MOVD R15, R4; \
	MOVI0(31); \
block: \
	BLOCK(DOT); \
	SUBS $1, R4; \
	BNE block; \
	ROW_END; \
	SUBS $1, R13; \
	BNE row

// REDUCE8: the eight sub-block sums V8…V15 into V8 = [S0…S3] and
// V12 = [S4…S7].
#define REDUCE8 \
	VADDP V9.S4, V8.S4, V8.S4; \
	VADDP V11.S4, V10.S4, V10.S4; \
	VADDP V13.S4, V12.S4, V12.S4; \
	VADDP V15.S4, V14.S4, V14.S4; \
	VADDP V10.S4, V8.S4, V8.S4; \
	VADDP V14.S4, V12.S4, V12.S4

// SUMS_TIMES_SCALES: V4 = Σ_g s_g·(Σq of sub-block g) (four lanes) over
// the sixteen int16 s_g in V2 (g = 0…7) and V3 (8…15), the sums at R3.
#define SUMS_TIMES_SCALES \
	VLD1.P 32(R3), [V0.H8, V1.H8]; \
	SMULL4S(4, 0, 2); \
	SMLAL24S(4, 0, 2); \
	SMLAL4S(4, 1, 3); \
	SMLAL24S(4, 1, 3)

// D_DMIN_ACC: with d|dmin (fp16) in R5, V31 += float(IS)·(d·d_x) −
// float(MS)·(dmin·d_x) (is, ms: the same registers' numbers). Uses V7,
// V9–V11.
#define D_DMIN_ACC(IS, is, MS, ms) \
	VMOV R5, V7.S[0]; \
	FCVTL(7, 7); \
	VLD1R.P 4(R2), [V9.S4]; \
	FMUL(7, 7, 9); \
	VDUP V7.S[0], V10.S4; \
	VDUP V7.S[1], V11.S4; \
	SCVTF(is, is); \
	SCVTF(ms, ms); \
	VFMLA V10.S4, IS.S4, V31.S4; \
	VFMLS V11.S4, MS.S4, V31.S4

// D_ACC: with d (fp16) in R5, V31 += float(V29)·(d·d_x).
#define D_ACC \
	FMOVS R5, F5; \
	FCVTHS F5, F5; \
	FMOVS.P 4(R2), F6; \
	FMULS F6, F5, F5; \
	VDUP V5.S[0], V5.S4; \
	SCVTF(29, 29); \
	VFMLA V5.S4, V29.S4, V31.S4

// SCALE_HALF(s16): V29 += V8·(lanes 0–3 of the int16 scales in V s16) +
// V12·(lanes 4–7), for one half of a 16-scale K-quant. Uses V25.
#define SCALE_HALF(s16) \
	SSHLL4S(25, s16, 0); \
	MLA4S(29, 8, 25); \
	SSHLL24S(25, s16, 0); \
	MLA4S(29, 12, 25)

// K45_TAIL: Σ_j sc_j·S_j (V8) and Σ_j m_j·(Σq of sub-block j) (V6) into
// V31 with d and dmin.
#define K45_TAIL \
	REDUCE8; \
	VMOV R6, V0.D[0]; \
	VUXTL V0.B8, V0.H8; \
	VUXTL V0.H4, V1.S4; \
	VUXTL2 V0.H8, V2.S4; \
	MUL4S(8, 8, 1); \
	MLA4S(8, 12, 2); \
	VLD1.P 32(R3), [V3.H8, V4.H8]; \
	VADDP V4.H8, V3.H8, V3.H8; \
	VMOV R7, V5.D[0]; \
	VUXTL V5.B8, V5.H8; \
	SMULL4S(6, 3, 5); \
	SMLAL24S(6, 3, 5); \
	D_DMIN_ACC(V8, 8, V6, 6)

// Q4K_CHUNK: chunk c's 32 qs bytes (A, B): low nibbles are sub-block 2c
// (codes into C, D; accumulator acclo), high ones 2c+1 (in place;
// acchi). V28 holds 0x0f bytes.
#define Q4K_CHUNK(DOT, A, B, C, D, XA, XB, XC, XD, a, b, c, d, xa, xb, xc, xd, acclo, acchi) \
	VLD1.P 32(R0), [A.B16, B.B16]; \
	VLD1.P 64(R1), [XA.B16, XB.B16, XC.B16, XD.B16]; \
	VAND V28.B16, A.B16, C.B16; \
	VAND V28.B16, B.B16, D.B16; \
	VUSHR $4, A.B16, A.B16; \
	VUSHR $4, B.B16, B.B16; \
	DOT(acclo, c, d, xa, xb, 24, 25); \
	DOT(acchi, a, b, xc, xd, 26, 27)

// block_q4_K: d, dmin, scales[12], qs[128]. Chunks alternate between two
// register sets.
#define Q4K_BLOCK(DOT) \
	K45_HEAD; \
	Q4K_CHUNK(DOT, V0, V1, V2, V3, V16, V17, V18, V19, 0, 1, 2, 3, 16, 17, 18, 19, 8, 9); \
	Q4K_CHUNK(DOT, V4, V5, V6, V7, V20, V21, V22, V23, 4, 5, 6, 7, 20, 21, 22, 23, 10, 11); \
	Q4K_CHUNK(DOT, V0, V1, V2, V3, V16, V17, V18, V19, 0, 1, 2, 3, 16, 17, 18, 19, 12, 13); \
	Q4K_CHUNK(DOT, V4, V5, V6, V7, V20, V21, V22, V23, 4, 5, 6, 7, 20, 21, 22, 23, 14, 15); \
	K45_TAIL

// Q5K_CHUNK: Q4K_CHUNK with the fifth bits from qh (V29: bytes 0–15,
// V30: 16–31), shifted down two bits a chunk so that bit 0 is the low
// nibbles' and bit 1 the high ones'; V28 holds 0x01 bytes, SLI puts the
// bit above the nibble (and ignores what the nibble has above).
#define Q5K_CHUNK(DOT, A, B, C, D, XA, XB, XC, XD, a, b, c, d, xa, xb, xc, xd, acclo, acchi) \
	VLD1.P 32(R0), [A.B16, B.B16]; \
	VLD1.P 64(R1), [XA.B16, XB.B16, XC.B16, XD.B16]; \
	VUSHR $4, A.B16, C.B16; \
	VUSHR $4, B.B16, D.B16; \
	VUSHR $1, V29.B16, V24.B16; \
	VUSHR $1, V30.B16, V25.B16; \
	VAND V28.B16, V24.B16, V24.B16; \
	VAND V28.B16, V25.B16, V25.B16; \
	VSLI $4, V24.B16, C.B16; \
	VSLI $4, V25.B16, D.B16; \
	VAND V28.B16, V29.B16, V26.B16; \
	VAND V28.B16, V30.B16, V27.B16; \
	VSLI $4, V26.B16, A.B16; \
	VSLI $4, V27.B16, B.B16; \
	VUSHR $2, V29.B16, V29.B16; \
	VUSHR $2, V30.B16, V30.B16; \
	DOT(acclo, a, b, xa, xb, 24, 25); \
	DOT(acchi, c, d, xc, xd, 26, 27)

// block_q5_K: d, dmin, scales[12], qh[32], qs[128].
#define Q5K_BLOCK(DOT) \
	K45_HEAD; \
	VLD1.P 32(R0), [V29.B16, V30.B16]; \
	Q5K_CHUNK(DOT, V0, V1, V2, V3, V16, V17, V18, V19, 0, 1, 2, 3, 16, 17, 18, 19, 8, 9); \
	Q5K_CHUNK(DOT, V4, V5, V6, V7, V20, V21, V22, V23, 4, 5, 6, 7, 20, 21, 22, 23, 10, 11); \
	Q5K_CHUNK(DOT, V0, V1, V2, V3, V16, V17, V18, V19, 0, 1, 2, 3, 16, 17, 18, 19, 12, 13); \
	Q5K_CHUNK(DOT, V4, V5, V6, V7, V20, V21, V22, V23, 4, 5, 6, 7, 20, 21, 22, 23, 14, 15); \
	K45_TAIL

// The 16-element sub-block types (Q2_K, Q3_K, Q6_K) work a half (128
// elements: two 16-lane columns of four 32-element groups) at a time:
// group s, column col is sub-block 2s+col of the half, accumulator
// V(8+2s+col), activations V(16+2s+col).

// Q6K_COLUMN: one column (A: ql[64h+l], B: ql[64h+32+l], Q: qh[32h+l])
// into its four groups' codes 0…63 (groups 0, 1 in place in A, B; 2, 3
// in V6, V7). V28 holds 0x03 bytes; SLI puts the qh bits above the
// nibble.
#define Q6K_COLUMN(DOT, A, B, Q, a, b, col) \
	VUSHR $4, A.B16, V6.B16; \
	VUSHR $4, Q.B16, V27.B16; \
	VAND V28.B16, V27.B16, V27.B16; \
	VSLI $4, V27.B16, V6.B16; \
	VUSHR $4, B.B16, V7.B16; \
	VUSHR $6, Q.B16, V30.B16; \
	VSLI $4, V30.B16, V7.B16; \
	VAND V28.B16, Q.B16, V27.B16; \
	VSLI $4, V27.B16, A.B16; \
	VUSHR $2, Q.B16, V30.B16; \
	VAND V28.B16, V30.B16, V30.B16; \
	VSLI $4, V30.B16, B.B16; \
	DOT(8+col, a, 16+col, 24); \
	DOT(10+col, b, 18+col, 25); \
	DOT(12+col, 6, 20+col, 24); \
	DOT(14+col, 7, 22+col, 25)

// Q6K_HALF: ql[64h…] at R0, qh[32h…] at R6, the half's activations at
// R1; the sub-block sums times the half's scales (sxtl: which eight of
// V26's int8 scales) into V29.
#define Q6K_HALF(DOT, sxtl) \
	VLD1.P 64(R0), [V0.B16, V1.B16, V2.B16, V3.B16]; \
	VLD1.P 32(R6), [V4.B16, V5.B16]; \
	VLD1.P 64(R1), [V16.B16, V17.B16, V18.B16, V19.B16]; \
	VLD1.P 64(R1), [V20.B16, V21.B16, V22.B16, V23.B16]; \
	Q6K_COLUMN(DOT, V0, V2, V4, 0, 2, 0); \
	Q6K_COLUMN(DOT, V1, V3, V5, 1, 3, 1); \
	REDUCE8; \
	sxtl(24, 26); \
	SCALE_HALF(24)

// block_q6_K: ql[128], qh[64], scales[16] int8, d. Codes are 0…63 here:
// the −32 offset is 32·Σ_g sc_g·(Σq of sub-block g), off the int total.
#define Q6K_BLOCK(DOT) \
	ADD $128, R0, R6; \
	ADD $192, R0, R7; \
	VLD1 (R7), [V26.B16]; \
	MOVHU 16(R7), R5; \
	MOVI0(29); \
	Q6K_HALF(DOT, SXTL8H); \
	Q6K_HALF(DOT, SXTL28H); \
	SXTL8H(2, 26); \
	SXTL28H(3, 26); \
	SUMS_TIMES_SCALES; \
	VSHL $5, V4.S4, V4.S4; \
	VSUB V4.S4, V29.S4, V29.S4; \
	D_ACC; \
	ADD $82, R0

// Q2K_COLUMN: a column of qs (Q) into its four groups' codes 0…3 (V4-V7).
// V28 holds 0x03 bytes.
#define Q2K_COLUMN(DOT, Q, col) \
	VAND V28.B16, Q.B16, V4.B16; \
	VUSHR $2, Q.B16, V5.B16; \
	VAND V28.B16, V5.B16, V5.B16; \
	VUSHR $4, Q.B16, V6.B16; \
	VAND V28.B16, V6.B16, V6.B16; \
	VUSHR $6, Q.B16, V7.B16; \
	DOT(8+col, 4, 16+col, 24); \
	DOT(10+col, 5, 18+col, 25); \
	DOT(12+col, 6, 20+col, 24); \
	DOT(14+col, 7, 22+col, 25)

// Q2K_HALF: one half (qs columns QA, QB) into V29, its eight 4-bit
// scales widened into V24 by UXTLB from V30.
#define Q2K_HALF(DOT, QA, QB, UXTLB) \
	VLD1.P 64(R1), [V16.B16, V17.B16, V18.B16, V19.B16]; \
	VLD1.P 64(R1), [V20.B16, V21.B16, V22.B16, V23.B16]; \
	Q2K_COLUMN(DOT, QA, 0); \
	Q2K_COLUMN(DOT, QB, 1); \
	REDUCE8; \
	UXTLB; \
	SCALE_HALF(24)

#define Q2K_SCALES_LO VUXTL V30.B8, V24.H8
#define Q2K_SCALES_HI VUXTL2 V30.B16, V24.H8

// block_q2_K: scales[16] (scale | min<<4), qs[64], d, dmin.
#define Q2K_BLOCK(DOT) \
	VLD1.P 16(R0), [V26.B16]; \
	VLD1.P 64(R0), [V0.B16, V1.B16, V2.B16, V3.B16]; \
	MOVWU.P 4(R0), R5; \
	VMOVI $15, V30.B16; \
	VAND V30.B16, V26.B16, V30.B16; \
	VUSHR $4, V26.B16, V26.B16; \
	MOVI0(29); \
	Q2K_HALF(DOT, V0, V1, Q2K_SCALES_LO); \
	Q2K_HALF(DOT, V2, V3, Q2K_SCALES_HI); \
	VUXTL V26.B8, V2.H8; \
	VUXTL2 V26.B16, V3.H8; \
	SUMS_TIMES_SCALES; \
	D_DMIN_ACC(V29, 29, V4, 4)

// Q3K_GROUP: group s (1…3) of a half: codes qs >> 2s (in C, D) with bits
// 2–7 replaced by those of −4 where the element's hmask bit (bit, a byte
// mask; V4, V5 hold the inverted hmask) is clear: code − 4 either way.
#define Q3K_GROUP(DOT, QA, QB, s, bit) \
	VMOVI $bit, V30.B16; \
	VUSHR $(2*s), QA.B16, V6.B16; \
	VUSHR $(2*s), QB.B16, V7.B16; \
	VCMTST V30.B16, V4.B16, V27.B16; \
	VCMTST V30.B16, V5.B16, V28.B16; \
	VSLI $2, V27.B16, V6.B16; \
	VSLI $2, V28.B16, V7.B16; \
	DOT(8+2*s, 6, 16+2*s, 24); \
	DOT(9+2*s, 7, 17+2*s, 25)

// Q3K_HALF: one half (qs columns QA, QB; hmask bits b0…b3) into V29;
// group 0 in place.
#define Q3K_HALF(DOT, QA, QB, qa, qb, b0, b1, b2, b3, sxtl) \
	VLD1.P 64(R1), [V16.B16, V17.B16, V18.B16, V19.B16]; \
	VLD1.P 64(R1), [V20.B16, V21.B16, V22.B16, V23.B16]; \
	Q3K_GROUP(DOT, QA, QB, 1, b1); \
	Q3K_GROUP(DOT, QA, QB, 2, b2); \
	Q3K_GROUP(DOT, QA, QB, 3, b3); \
	VMOVI $b0, V30.B16; \
	VCMTST V30.B16, V4.B16, V27.B16; \
	VCMTST V30.B16, V5.B16, V28.B16; \
	VSLI $2, V27.B16, QA.B16; \
	VSLI $2, V28.B16, QB.B16; \
	DOT(8, qa, 16, 24); \
	DOT(9, qb, 17, 25); \
	REDUCE8; \
	sxtl(24, 26); \
	SCALE_HALF(24)

// Q3K_SCALES: block_q3_K's sixteen 6-bit scales less 32 into V26 (int8)
// from its 12 scale bytes (L = bytes 0–7 in R6, u = 8–11 in R7): scale j
// has L's nibble j%8 (low for j < 8) and bits 2(j/4) of byte j%4 of u as
// its top two.
#define Q3K_SCALES \
	LSR $2, R7, R8; \
	ORR R8<<32, R7, R8; \
	AND $0x0303030303030303, R8, R8; \
	LSR $4, R7, R9; \
	LSR $6, R7, R16; \
	ORR R16<<32, R9, R9; \
	AND $0x0303030303030303, R9, R9; \
	AND $0x0f0f0f0f0f0f0f0f, R6, R16; \
	ORR R8<<4, R16, R16; \
	LSR $4, R6, R17; \
	AND $0x0f0f0f0f0f0f0f0f, R17, R17; \
	ORR R9<<4, R17, R17; \
	VMOV R16, V26.D[0]; \
	VMOV R17, V26.D[1]; \
	VMOVI $32, V27.B16; \
	VSUB V27.B16, V26.B16, V26.B16

// block_q3_K: hmask[32], qs[64], scales[12], d.
#define Q3K_BLOCK(DOT) \
	VLD1.P 32(R0), [V4.B16, V5.B16]; \
	VLD1.P 64(R0), [V0.B16, V1.B16, V2.B16, V3.B16]; \
	MOVD.P 8(R0), R6; \
	MOVWU.P 4(R0), R7; \
	MOVHU.P 2(R0), R5; \
	Q3K_SCALES; \
	VMOVI $255, V6.B16; \
	VEOR V6.B16, V4.B16, V4.B16; \
	VEOR V6.B16, V5.B16, V5.B16; \
	MOVI0(29); \
	Q3K_HALF(DOT, V0, V1, 0, 1, 1, 2, 4, 8, SXTL8H); \
	Q3K_HALF(DOT, V2, V3, 2, 3, 16, 32, 64, 128, SXTL28H); \
	D_ACC

TEXT ·rowsQ4KSDOT(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	VMOVI $15, V28.B16
	ROWSK(Q4K_BLOCK, DOT32_SDOT)
	RET

TEXT ·rowsQ4KNEON(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	VMOVI $15, V28.B16
	ROWSK(Q4K_BLOCK, DOT32_NEON)
	RET

TEXT ·rowsQ5KSDOT(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	VMOVI $1, V28.B16
	ROWSK(Q5K_BLOCK, DOT32_SDOT)
	RET

TEXT ·rowsQ5KNEON(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	VMOVI $1, V28.B16
	ROWSK(Q5K_BLOCK, DOT32_NEON)
	RET

TEXT ·rowsQ6KSDOT(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	VMOVI $3, V28.B16
	ROWSK(Q6K_BLOCK, DOT16_SDOT)
	RET

TEXT ·rowsQ6KNEON(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	VMOVI $3, V28.B16
	ROWSK(Q6K_BLOCK, DOT16_NEON)
	RET

TEXT ·rowsQ2KSDOT(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	VMOVI $3, V28.B16
	ROWSK(Q2K_BLOCK, DOT16_SDOT)
	RET

TEXT ·rowsQ2KNEON(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	VMOVI $3, V28.B16
	ROWSK(Q2K_BLOCK, DOT16_NEON)
	RET

TEXT ·rowsQ3KSDOT(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	ROWSK(Q3K_BLOCK, DOT16_SDOT)
	RET

TEXT ·rowsQ3KNEON(SB), NOSPLIT, $0-56
	MOVD w+0(FP), R0
	MOVD q+8(FP), R10
	MOVD d+16(FP), R11
	MOVD sum+24(FP), R12
	MOVD nb+32(FP), R15
	MOVD nrows+40(FP), R13
	MOVD out+48(FP), R14
	ROWSK(Q3K_BLOCK, DOT16_NEON)
	RET
