//go:build !purego

#include "textflag.h"
#include "hsum_amd64.h"

// AVX2 row products of the GGUF block types (quant_kernels.go has the
// portable ones and the formats). Each multiplies a run of weight rows
// with one activation row in its block form: codes become unsigned bytes
// (Q4_K, Q5_K, Q6_K) or signed ones moved onto the unsigned side with
// VPSIGNB/VPABSB (Q8_0, Q4_0), VPMADDUBSW multiplies them with the int8
// activations into int16 pair sums (at most 2·128·127 or 2·63·127: no
// saturation), and
// VPMADDWD widens them to int32, times the sub-block scales for the
// K-quants. Each block's integer sums are converted once and accumulated
// with FMA times d_w·d_x, eight lanes at a time, so the result is the
// portable one's terms summed in another order.

// Scale broadcasts for VPSHUFB. q4kScaleShuf, mask j (32 bytes): int16
// scale j of eight (both lanes). q6kScaleShuf, mask p (16 bytes): byte
// 2p eight times then byte 2p+1 (two sub-blocks' int8 scales, widened to
// the two lanes of a 32-element group by VPMOVSXBW).
DATA q4kScaleShuf<>+0(SB)/8, $0x0100010001000100
DATA q4kScaleShuf<>+8(SB)/8, $0x0100010001000100
DATA q4kScaleShuf<>+16(SB)/8, $0x0100010001000100
DATA q4kScaleShuf<>+24(SB)/8, $0x0100010001000100
DATA q4kScaleShuf<>+32(SB)/8, $0x0302030203020302
DATA q4kScaleShuf<>+40(SB)/8, $0x0302030203020302
DATA q4kScaleShuf<>+48(SB)/8, $0x0302030203020302
DATA q4kScaleShuf<>+56(SB)/8, $0x0302030203020302
DATA q4kScaleShuf<>+64(SB)/8, $0x0504050405040504
DATA q4kScaleShuf<>+72(SB)/8, $0x0504050405040504
DATA q4kScaleShuf<>+80(SB)/8, $0x0504050405040504
DATA q4kScaleShuf<>+88(SB)/8, $0x0504050405040504
DATA q4kScaleShuf<>+96(SB)/8, $0x0706070607060706
DATA q4kScaleShuf<>+104(SB)/8, $0x0706070607060706
DATA q4kScaleShuf<>+112(SB)/8, $0x0706070607060706
DATA q4kScaleShuf<>+120(SB)/8, $0x0706070607060706
DATA q4kScaleShuf<>+128(SB)/8, $0x0908090809080908
DATA q4kScaleShuf<>+136(SB)/8, $0x0908090809080908
DATA q4kScaleShuf<>+144(SB)/8, $0x0908090809080908
DATA q4kScaleShuf<>+152(SB)/8, $0x0908090809080908
DATA q4kScaleShuf<>+160(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q4kScaleShuf<>+168(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q4kScaleShuf<>+176(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q4kScaleShuf<>+184(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q4kScaleShuf<>+192(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q4kScaleShuf<>+200(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q4kScaleShuf<>+208(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q4kScaleShuf<>+216(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q4kScaleShuf<>+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q4kScaleShuf<>+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q4kScaleShuf<>+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q4kScaleShuf<>+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL q4kScaleShuf<>(SB), RODATA|NOPTR, $256

DATA q6kScaleShuf<>+0(SB)/8, $0x0000000000000000
DATA q6kScaleShuf<>+8(SB)/8, $0x0101010101010101
DATA q6kScaleShuf<>+16(SB)/8, $0x0202020202020202
DATA q6kScaleShuf<>+24(SB)/8, $0x0303030303030303
DATA q6kScaleShuf<>+32(SB)/8, $0x0404040404040404
DATA q6kScaleShuf<>+40(SB)/8, $0x0505050505050505
DATA q6kScaleShuf<>+48(SB)/8, $0x0606060606060606
DATA q6kScaleShuf<>+56(SB)/8, $0x0707070707070707
DATA q6kScaleShuf<>+64(SB)/8, $0x0808080808080808
DATA q6kScaleShuf<>+72(SB)/8, $0x0909090909090909
DATA q6kScaleShuf<>+80(SB)/8, $0x0a0a0a0a0a0a0a0a
DATA q6kScaleShuf<>+88(SB)/8, $0x0b0b0b0b0b0b0b0b
DATA q6kScaleShuf<>+96(SB)/8, $0x0c0c0c0c0c0c0c0c
DATA q6kScaleShuf<>+104(SB)/8, $0x0d0d0d0d0d0d0d0d
DATA q6kScaleShuf<>+112(SB)/8, $0x0e0e0e0e0e0e0e0e
DATA q6kScaleShuf<>+120(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL q6kScaleShuf<>(SB), RODATA|NOPTR, $128

// Y4 = broadcast(fp16 at woff(SI) · float32 at doff(DX)).
#define BLOCK_SCALE(woff, doff) \
	VCVTPH2PS woff(SI), X4; \
	VMULSS doff(DX), X4, X4; \
	VBROADCASTSS X4, Y4

// acc += float(Σ w·x of the signed bytes in Y1 and at xoff(DI)) · Y4.
// Uses Y2, Y3; Y14 holds int16 ones.
#define SIGNED_DOT(xoff, acc) \
	VMOVDQU xoff(DI), Y2; \
	VPSIGNB Y1, Y2, Y2; \
	VPABSB Y1, Y1; \
	VPMADDUBSW Y2, Y1, Y3; \
	VPMADDWD Y14, Y3, Y3; \
	VCVTDQ2PS Y3, Y3; \
	VFMADD231PS Y4, Y3, acc

// One block_q8_0 at woff(SI) against activations at xoff(DI), d_x at doff(DX).
#define Q80_BLOCK(woff, xoff, doff, acc) \
	VMOVDQU (woff+2)(SI), Y1; \
	BLOCK_SCALE(woff, doff); \
	SIGNED_DOT(xoff, acc)

// One block_q4_0: nibbles to bytes (low nibbles are elements 0…15, the
// lower lane; high nibbles 16…31), less 8.
#define Q40_BLOCK(woff, xoff, doff, acc) \
	VMOVDQU (woff+2)(SI), X1; \
	VPSRLW $4, X1, X2; \
	VINSERTI128 $1, X2, Y1, Y1; \
	VPAND Y13, Y1, Y1; \
	VPSUBB Y12, Y1, Y1; \
	BLOCK_SCALE(woff, doff); \
	SIGNED_DOT(xoff, acc)

// func rowsQ8_0AVX2(w *byte, q *int8, d *float32, nb int, nrows int, out *float32)
// nrows consecutive rows of nb blocks each (decode calls it once per lane
// of rows: no Go call per row).
TEXT ·rowsQ8_0AVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ nrows+32(FP), BX
	MOVQ out+40(FP), R9
	MOVL $0x00010001, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14

q80row:
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y6, Y6, Y6
	SHRQ $1, CX
	JEQ q80tail

q80loop:
	Q80_BLOCK(0, 0, 0, Y0)
	Q80_BLOCK(34, 32, 4, Y6)
	ADDQ $68, SI
	ADDQ $64, DI
	ADDQ $8, DX
	DECQ CX
	JNE q80loop

q80tail:
	MOVQ nb+24(FP), CX
	ANDQ $1, CX
	JEQ q80sum
	Q80_BLOCK(0, 0, 0, Y0)
	ADDQ $34, SI

q80sum:
	VADDPS Y6, Y0, Y0
	HSUM_Y0
	VMOVSS X0, (R9)
	ADDQ $4, R9
	DECQ BX
	JNE q80row
	VZEROUPPER
	RET

// func rowsQ4_0AVX2(w *byte, q *int8, d *float32, nb int, nrows int, out *float32)
TEXT ·rowsQ4_0AVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ nrows+32(FP), BX
	MOVQ out+40(FP), R9
	MOVL $0x00010001, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVL $0x08080808, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12

q40row:
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y6, Y6, Y6
	SHRQ $1, CX
	JEQ q40tail

q40loop:
	Q40_BLOCK(0, 0, 0, Y0)
	Q40_BLOCK(18, 32, 4, Y6)
	ADDQ $36, SI
	ADDQ $64, DI
	ADDQ $8, DX
	DECQ CX
	JNE q40loop

q40tail:
	MOVQ nb+24(FP), CX
	ANDQ $1, CX
	JEQ q40sum
	Q40_BLOCK(0, 0, 0, Y0)
	ADDQ $18, SI

q40sum:
	VADDPS Y6, Y0, Y0
	HSUM_Y0
	VMOVSS X0, (R9)
	ADDQ $4, R9
	DECQ BX
	JNE q40row
	VZEROUPPER
	RET

// The pieces block_q4_K and block_q5_K share (d, dmin, scales[12] at
// the start of the block, SI).

// K45_SCALES: the eight 6-bit scales (Y5: int16, both lanes) and mins
// (X6: int16), ggml's get_scale_min_k4 with 32-bit masks: scales 0–3 =
// u0 & 0x3f…, 4–7 = u2 & 0x0f… | (u0>>6 & 3…)<<4; mins 0–3 = u1 & 0x3f…,
// 4–7 = u2>>4 & 0x0f… | (u1>>6 & 3…)<<4. Uses AX, BX, R9–R12.
#define K45_SCALES \
	MOVL 4(SI), AX; \
	MOVL 8(SI), BX; \
	MOVL 12(SI), R9; \
	MOVL R9, R10; \
	SHRL $4, R10; \
	ANDL $0x0f0f0f0f, R10; \
	MOVL BX, R11; \
	SHRL $6, R11; \
	ANDL $0x03030303, R11; \
	SHLL $4, R11; \
	ORL R11, R10; \
	MOVL R9, R11; \
	ANDL $0x0f0f0f0f, R11; \
	MOVL AX, R12; \
	SHRL $6, R12; \
	ANDL $0x03030303, R12; \
	SHLL $4, R12; \
	ORL R12, R11; \
	ANDL $0x3f3f3f3f, AX; \
	ANDL $0x3f3f3f3f, BX; \
	SHLQ $32, R11; \
	ORQ R11, AX; \
	SHLQ $32, R10; \
	ORQ R10, BX; \
	VMOVQ AX, X5; \
	VPMOVZXBW X5, X5; \
	VINSERTI128 $1, X5, Y5, Y5; \
	VMOVQ BX, X6; \
	VPMOVZXBW X6, X6

// K45_MINS: d·d_x into Y4, and dmin·d_x times Σ_j m_j·(Σx over sub-block
// j) (pairs of the sixteen activation sums at R8 make the eight
// sub-blocks') into X10.
#define K45_MINS \
	VCVTPH2PS (SI), X4; \
	VBROADCASTSS (DX), X3; \
	VMULPS X3, X4, X4; \
	VMOVSHDUP X4, X9; \
	VBROADCASTSS X9, X9; \
	VBROADCASTSS X4, Y4; \
	VMOVDQU (R8), Y7; \
	VEXTRACTI128 $1, Y7, X8; \
	VPHADDW X8, X7, X7; \
	VPMADDWD X6, X7, X7; \
	VCVTDQ2PS X7, X7; \
	VFMADD231PS X9, X7, X10

// K45_CODES_DOT(c): chunk c's codes in Y1 (sub-block 2c) and Y2 (2c+1)
// times their activations, times their scales, into the int32 sums Y11.
#define K45_CODES_DOT(c) \
	VPMADDUBSW (64*c)(DI), Y1, Y1; \
	VPMADDUBSW (64*c+32)(DI), Y2, Y2; \
	VPSHUFB q4kScaleShuf<>+(64*c)(SB), Y5, Y3; \
	VPMADDWD Y3, Y1, Y1; \
	VPSHUFB q4kScaleShuf<>+(64*c+32)(SB), Y5, Y3; \
	VPMADDWD Y3, Y2, Y2; \
	VPADDD Y1, Y11, Y11; \
	VPADDD Y2, Y11, Y11

// Chunk c's nibbles from the 32 bytes at qs(SI): low ones are elements
// 64c + l, high ones 64c + 32 + l.
#define K45_NIBBLES(qs) \
	VMOVDQU qs(SI), Y1; \
	VPSRLW $4, Y1, Y2; \
	VPAND Y15, Y1, Y1; \
	VPAND Y15, Y2, Y2

#define Q4K_CHUNK(c) \
	K45_NIBBLES((16+32*c)); \
	K45_CODES_DOT(c)

// Q5_K: the fifth bits are bits 2c (low nibbles) and 2c+1 (high) of the
// qh bytes in Y12; Y13 holds 0x01 bytes.
#define Q5K_CHUNK(c) \
	K45_NIBBLES((48+32*c)); \
	VPSRLW $(2*c), Y12, Y3; \
	VPAND Y13, Y3, Y3; \
	VPSLLW $4, Y3, Y3; \
	VPOR Y3, Y1, Y1; \
	VPSRLW $(2*c+1), Y12, Y3; \
	VPAND Y13, Y3, Y3; \
	VPSLLW $4, Y3, Y3; \
	VPOR Y3, Y2, Y2; \
	K45_CODES_DOT(c)

// K45_ROW_END: row sum less the mins' sum, stored at (R14).
#define K45_ROW_END \
	HSUM_Y0; \
	VMOVAPS X0, X11; \
	VMOVAPS X10, X0; \
	VPERMILPS $0x4E, X0, X1; \
	VADDPS X1, X0, X0; \
	VPERMILPS $0xB1, X0, X1; \
	VADDPS X1, X0, X0; \
	VSUBSS X0, X11, X0; \
	VMOVSS X0, (R14); \
	ADDQ $4, R14

// func rowsQ4KAVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)
// Per super-block: Σ_j sc_j·Σ n·x (Y11) times d·d_x into Y0; the mins'
// Σ_j m_j·(Σx over sub-block j) times dmin·d_x into X10, subtracted at
// the end of the row.
TEXT ·rowsQ4KAVX2(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ nrows+40(FP), R13
	MOVQ out+48(FP), R14
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15

q4krow:
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bsum+24(FP), R8
	MOVQ nb+32(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS X10, X10, X10

q4kloop:
	K45_SCALES
	K45_MINS
	VPXOR Y11, Y11, Y11
	Q4K_CHUNK(0)
	Q4K_CHUNK(1)
	Q4K_CHUNK(2)
	Q4K_CHUNK(3)
	VCVTDQ2PS Y11, Y11
	VFMADD231PS Y4, Y11, Y0
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, R8
	DECQ CX
	JNE q4kloop
	K45_ROW_END
	DECQ R13
	JNE q4krow
	VZEROUPPER
	RET

// func rowsQ5KAVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)
// rowsQ4KAVX2 with five-bit codes (0…31: the int16 pair sums stay below
// 2·31·127).
TEXT ·rowsQ5KAVX2(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ nrows+40(FP), R13
	MOVQ out+48(FP), R14
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x01010101, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13

q5krow:
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bsum+24(FP), R8
	MOVQ nb+32(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS X10, X10, X10

q5kloop:
	K45_SCALES
	K45_MINS
	VMOVDQU 16(SI), Y12
	VPXOR Y11, Y11, Y11
	Q5K_CHUNK(0)
	Q5K_CHUNK(1)
	Q5K_CHUNK(2)
	Q5K_CHUNK(3)
	VCVTDQ2PS Y11, Y11
	VFMADD231PS Y4, Y11, Y0
	ADDQ $176, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, R8
	DECQ CX
	JNE q5kloop
	K45_ROW_END
	DECQ R13
	JNE q5krow
	VZEROUPPER
	RET

// One 32-element group s of half h of a block_q6_K: its codes (low four
// bits from ql, which Y1 (groups 0, 2) or Y2 (1, 3) holds; top two from
// bits 2s of qh in Y3) as unsigned bytes, times the activations, times
// the two sub-blocks' scales (p = 4h + s), into Y11. lo is the register
// with the low bits already in place.
#define Q6K_GROUP(lo, s, xoff, p) \
	VPSRLW $(2*s), Y3, Y9; \
	VPAND Y13, Y9, Y9; \
	VPSLLW $4, Y9, Y9; \
	VPOR Y9, lo, Y8; \
	VPMADDUBSW xoff(DI), Y8, Y8; \
	VPSHUFB q6kScaleShuf<>+(16*p)(SB), X5, X9; \
	VPMOVSXBW X9, Y9; \
	VPMADDWD Y9, Y8, Y8; \
	VPADDD Y8, Y11, Y11

#define Q6K_HALF(h) \
	VMOVDQU (64*h)(SI), Y1; \
	VMOVDQU (64*h+32)(SI), Y2; \
	VMOVDQU (128+32*h)(SI), Y3; \
	VPAND Y15, Y1, Y6; \
	Q6K_GROUP(Y6, 0, (128*h), (4*h)); \
	VPAND Y15, Y2, Y6; \
	Q6K_GROUP(Y6, 1, (128*h+32), (4*h+1)); \
	VPSRLW $4, Y1, Y6; \
	VPAND Y15, Y6, Y6; \
	Q6K_GROUP(Y6, 2, (128*h+64), (4*h+2)); \
	VPSRLW $4, Y2, Y6; \
	VPAND Y15, Y6, Y6; \
	Q6K_GROUP(Y6, 3, (128*h+96), (4*h+3))

// func rowsQ6KAVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)
// Codes are 0…63 here; the −32 offset is 32·Σ_j sc_j·(Σx over sub-block
// j), taken off the integer sum from the activation sums.
TEXT ·rowsQ6KAVX2(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ nrows+40(FP), R13
	MOVQ out+48(FP), R14
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x03030303, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13

q6krow:
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bsum+24(FP), R8
	MOVQ nb+32(FP), CX
	VXORPS Y0, Y0, Y0

q6kloop:
	VMOVDQU 192(SI), X5
	VPMOVSXBW X5, Y7
	VPMADDWD (R8), Y7, Y7
	VPSLLD $5, Y7, Y7
	VPXOR Y11, Y11, Y11
	VPSUBD Y7, Y11, Y11
	Q6K_HALF(0)
	Q6K_HALF(1)
	MOVWLZX 208(SI), AX
	VMOVD AX, X4
	VCVTPH2PS X4, X4
	VMULSS (DX), X4, X4
	VBROADCASTSS X4, Y4
	VCVTDQ2PS Y11, Y11
	VFMADD231PS Y4, Y11, Y0
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, R8
	DECQ CX
	JNE q6kloop

	HSUM_Y0
	VMOVSS X0, (R14)
	ADDQ $4, R14
	DECQ R13
	JNE q6krow
	VZEROUPPER
	RET
