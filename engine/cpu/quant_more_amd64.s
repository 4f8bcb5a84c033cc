//go:build !purego

#include "textflag.h"
#include "hsum_amd64.h"

// AVX2 row products of Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K and Q3_K, built as
// quant_amd64.s's (the formats and portable kernels are in
// quant_kernels.go): codes become bytes, VPMADDUBSW multiplies unsigned
// codes with the int8 activations into int16 pair sums and VPMADDWD
// widens them (times the sub-block scales for the K-quants). Codes that
// are signed (Q5_0's n−16, IQ4_NL's codebook values) move onto the
// unsigned side with VPSIGNB/VPABSB; the others stay unsigned and their
// offset or min meets the activation sums: Q4_1/Q5_1's m·d_x·Σq (a
// scalar FMA a block), Q2_K's dmin·Σ m·Σq, Q3_K's 4·Σ sc·Σq. The largest
// pair sum is 2·127·127 (IQ4_NL, Q5_0): no saturation.

// bitsShuf, bitsMask: byte i of the uint32 broadcast in a register
// becomes 0xFF where its bit i is set (shuffle byte i/8 into byte i, set
// every other bit, compare with all ones): the fifth bits of Q5_0/Q5_1.
DATA bitsShuf<>+0(SB)/8, $0x0000000000000000
DATA bitsShuf<>+8(SB)/8, $0x0101010101010101
DATA bitsShuf<>+16(SB)/8, $0x0202020202020202
DATA bitsShuf<>+24(SB)/8, $0x0303030303030303
GLOBL bitsShuf<>(SB), RODATA|NOPTR, $32

DATA bitsMask<>+0(SB)/8, $0x7fbfdfeff7fbfdfe
DATA bitsMask<>+8(SB)/8, $0x7fbfdfeff7fbfdfe
DATA bitsMask<>+16(SB)/8, $0x7fbfdfeff7fbfdfe
DATA bitsMask<>+24(SB)/8, $0x7fbfdfeff7fbfdfe
GLOBL bitsMask<>(SB), RODATA|NOPTR, $32

// iq4nlTable: gguf.IQ4NLValues as bytes, in both lanes (a VPSHUFB table).
DATA iq4nlTable<>+0(SB)/8, $0xf6eaddcfbfad9881
DATA iq4nlTable<>+8(SB)/8, $0x7159453526190d01
DATA iq4nlTable<>+16(SB)/8, $0xf6eaddcfbfad9881
DATA iq4nlTable<>+24(SB)/8, $0x7159453526190d01
GLOBL iq4nlTable<>(SB), RODATA|NOPTR, $32

// pairScaleShuf, mask p (16 bytes): byte 2p eight times then byte 2p+1,
// the scales of the two groups of 16 in a 32-element run of codes,
// widened to the run's two lanes by VPMOVZXBW/VPMOVSXBW.
DATA pairScaleShuf<>+0(SB)/8, $0x0000000000000000
DATA pairScaleShuf<>+8(SB)/8, $0x0101010101010101
DATA pairScaleShuf<>+16(SB)/8, $0x0202020202020202
DATA pairScaleShuf<>+24(SB)/8, $0x0303030303030303
DATA pairScaleShuf<>+32(SB)/8, $0x0404040404040404
DATA pairScaleShuf<>+40(SB)/8, $0x0505050505050505
DATA pairScaleShuf<>+48(SB)/8, $0x0606060606060606
DATA pairScaleShuf<>+56(SB)/8, $0x0707070707070707
DATA pairScaleShuf<>+64(SB)/8, $0x0808080808080808
DATA pairScaleShuf<>+72(SB)/8, $0x0909090909090909
DATA pairScaleShuf<>+80(SB)/8, $0x0a0a0a0a0a0a0a0a
DATA pairScaleShuf<>+88(SB)/8, $0x0b0b0b0b0b0b0b0b
DATA pairScaleShuf<>+96(SB)/8, $0x0c0c0c0c0c0c0c0c
DATA pairScaleShuf<>+104(SB)/8, $0x0d0d0d0d0d0d0d0d
DATA pairScaleShuf<>+112(SB)/8, $0x0e0e0e0e0e0e0e0e
DATA pairScaleShuf<>+120(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL pairScaleShuf<>(SB), RODATA|NOPTR, $128

// BCAST32(c, x, y): the 32-bit constant c in every lane of y (uses AX).
#define BCAST32(c, x, y) \
	MOVL c, AX; \
	VMOVD AX, x; \
	VPBROADCASTD x, y

// NIBBLES(off): the 16 bytes at off(SI) as 32 codes in Y1, low nibbles
// (elements 0…15) in the lower lane, high ones (16…31) in the upper.
// Y13 holds 0x0f bytes; uses Y2.
#define NIBBLES(off) \
	VMOVDQU off(SI), X1; \
	VPSRLW $4, X1, X2; \
	VINSERTI128 $1, X2, Y1, Y1; \
	VPAND Y13, Y1, Y1

// BITS32(off): Y3 = 0xFF in byte i where bit i of the uint32 at off(SI)
// is set, else 0. Y12: bitsShuf, Y11: bitsMask, Y10: all ones.
#define BITS32(off) \
	VPBROADCASTD off(SI), Y3; \
	VPSHUFB Y12, Y3, Y3; \
	VPOR Y11, Y3, Y3; \
	VPCMPEQB Y10, Y3, Y3

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

// MIN_DOT: acc += float(Σ code·x, the unsigned codes in Y1, x at
// xoff(DI))·d·d_x, and macc += float(Σx, the int16 at soff(R8))·m·d_x
// (lane 0), d and m the fp16 pair at woff(SI). Uses Y4, Y5, X7, AX; Y14
// holds int16 ones.
#define MIN_DOT(woff, xoff, doff, soff, acc, macc) \
	VPMADDUBSW xoff(DI), Y1, Y1; \
	VPMADDWD Y14, Y1, Y1; \
	VCVTDQ2PS Y1, Y1; \
	VCVTPH2PS woff(SI), X4; \
	VBROADCASTSS doff(DX), X5; \
	VMULPS X5, X4, X4; \
	VMOVSHDUP X4, X5; \
	VBROADCASTSS X4, Y4; \
	VFMADD231PS Y4, Y1, acc; \
	MOVWQSX soff(R8), AX; \
	VCVTSI2SSQ AX, X5, X7; \
	VFMADD231SS X5, X7, macc

// The 32-element kernels run two blocks an iteration into two
// accumulators (Y0, Y6), as quant_amd64.s's do.

// One block_q5_0 (d, qh, qs[16]): n−16 as a signed byte is the nibble
// where the fifth bit is set, the nibble | 0xF0 where it is clear (Y9:
// 0xF0 bytes).
#define Q50_BLOCK(woff, xoff, doff, acc) \
	NIBBLES(woff+6); \
	BITS32(woff+2); \
	VPANDN Y9, Y3, Y3; \
	VPOR Y3, Y1, Y1; \
	BLOCK_SCALE(woff, doff); \
	SIGNED_DOT(xoff, acc)

// func rowsQ5_0AVX2(w *byte, q *int8, d *float32, nb int, nrows int, out *float32)
TEXT ·rowsQ5_0AVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ nrows+32(FP), BX
	MOVQ out+40(FP), R9
	BCAST32($0x00010001, X14, Y14)
	BCAST32($0x0f0f0f0f, X13, Y13)
	BCAST32($0xf0f0f0f0, X9, Y9)
	VMOVDQU bitsShuf<>(SB), Y12
	VMOVDQU bitsMask<>(SB), Y11
	VPCMPEQB Y10, Y10, Y10

q50row:
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y6, Y6, Y6
	SHRQ $1, CX
	JEQ q50tail

q50loop:
	Q50_BLOCK(0, 0, 0, Y0)
	Q50_BLOCK(22, 32, 4, Y6)
	ADDQ $44, SI
	ADDQ $64, DI
	ADDQ $8, DX
	DECQ CX
	JNE q50loop

q50tail:
	MOVQ nb+24(FP), CX
	ANDQ $1, CX
	JEQ q50sum
	Q50_BLOCK(0, 0, 0, Y0)
	ADDQ $22, SI

q50sum:
	VADDPS Y6, Y0, Y0
	HSUM_Y0
	VMOVSS X0, (R9)
	ADDQ $4, R9
	DECQ BX
	JNE q50row
	VZEROUPPER
	RET

// One block_iq4_nl (d, qs[16]): the nibbles index the codebook (Y12).
#define IQ4NL_BLOCK(woff, xoff, doff, acc) \
	NIBBLES(woff+2); \
	VPSHUFB Y1, Y12, Y1; \
	BLOCK_SCALE(woff, doff); \
	SIGNED_DOT(xoff, acc)

// func rowsIQ4NLAVX2(w *byte, q *int8, d *float32, nb int, nrows int, out *float32)
TEXT ·rowsIQ4NLAVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ nrows+32(FP), BX
	MOVQ out+40(FP), R9
	BCAST32($0x00010001, X14, Y14)
	BCAST32($0x0f0f0f0f, X13, Y13)
	VMOVDQU iq4nlTable<>(SB), Y12

iq4row:
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y6, Y6, Y6
	SHRQ $1, CX
	JEQ iq4tail

iq4loop:
	IQ4NL_BLOCK(0, 0, 0, Y0)
	IQ4NL_BLOCK(18, 32, 4, Y6)
	ADDQ $36, SI
	ADDQ $64, DI
	ADDQ $8, DX
	DECQ CX
	JNE iq4loop

iq4tail:
	MOVQ nb+24(FP), CX
	ANDQ $1, CX
	JEQ iq4sum
	IQ4NL_BLOCK(0, 0, 0, Y0)
	ADDQ $18, SI

iq4sum:
	VADDPS Y6, Y0, Y0
	HSUM_Y0
	VMOVSS X0, (R9)
	ADDQ $4, R9
	DECQ BX
	JNE iq4row
	VZEROUPPER
	RET

// Q4_1 and Q5_1 rows: the code sums into Y0/Y6, the min terms into
// X8/X15 (lane 0), all added at the end of the row.
#define MIN_ROW_END \
	VADDPS Y6, Y0, Y0; \
	HSUM_Y0; \
	VADDSS X15, X8, X8; \
	VADDSS X8, X0, X0; \
	VMOVSS X0, (R9); \
	ADDQ $4, R9

// One block_q4_1 (d, m, qs[16]).
#define Q41_BLOCK(woff, xoff, doff, soff, acc, macc) \
	NIBBLES(woff+4); \
	MIN_DOT(woff, xoff, doff, soff, acc, macc)

// func rowsQ4_1AVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)
TEXT ·rowsQ4_1AVX2(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ nrows+40(FP), BX
	MOVQ out+48(FP), R9
	BCAST32($0x00010001, X14, Y14)
	BCAST32($0x0f0f0f0f, X13, Y13)

q41row:
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bsum+24(FP), R8
	MOVQ nb+32(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y6, Y6, Y6
	VXORPS X8, X8, X8
	VXORPS X15, X15, X15
	SHRQ $1, CX
	JEQ q41tail

q41loop:
	Q41_BLOCK(0, 0, 0, 0, Y0, X8)
	Q41_BLOCK(20, 32, 4, 2, Y6, X15)
	ADDQ $40, SI
	ADDQ $64, DI
	ADDQ $8, DX
	ADDQ $4, R8
	DECQ CX
	JNE q41loop

q41tail:
	MOVQ nb+32(FP), CX
	ANDQ $1, CX
	JEQ q41sum
	Q41_BLOCK(0, 0, 0, 0, Y0, X8)
	ADDQ $20, SI

q41sum:
	MIN_ROW_END
	DECQ BX
	JNE q41row
	VZEROUPPER
	RET

// One block_q5_1 (d, m, qh, qs[16]): the fifth bits OR'd in as 0x10
// (Y9: 0x10 bytes).
#define Q51_BLOCK(woff, xoff, doff, soff, acc, macc) \
	NIBBLES(woff+8); \
	BITS32(woff+4); \
	VPAND Y9, Y3, Y3; \
	VPOR Y3, Y1, Y1; \
	MIN_DOT(woff, xoff, doff, soff, acc, macc)

// func rowsQ5_1AVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)
TEXT ·rowsQ5_1AVX2(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ nrows+40(FP), BX
	MOVQ out+48(FP), R9
	BCAST32($0x00010001, X14, Y14)
	BCAST32($0x0f0f0f0f, X13, Y13)
	BCAST32($0x10101010, X9, Y9)
	VMOVDQU bitsShuf<>(SB), Y12
	VMOVDQU bitsMask<>(SB), Y11
	VPCMPEQB Y10, Y10, Y10

q51row:
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bsum+24(FP), R8
	MOVQ nb+32(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y6, Y6, Y6
	VXORPS X8, X8, X8
	VXORPS X15, X15, X15
	SHRQ $1, CX
	JEQ q51tail

q51loop:
	Q51_BLOCK(0, 0, 0, 0, Y0, X8)
	Q51_BLOCK(24, 32, 4, 2, Y6, X15)
	ADDQ $48, SI
	ADDQ $64, DI
	ADDQ $8, DX
	ADDQ $4, R8
	DECQ CX
	JNE q51loop

q51tail:
	MOVQ nb+32(FP), CX
	ANDQ $1, CX
	JEQ q51sum
	Q51_BLOCK(0, 0, 0, 0, Y0, X8)
	ADDQ $24, SI

q51sum:
	MIN_ROW_END
	DECQ BX
	JNE q51row
	VZEROUPPER
	RET

// The K-quant runs: 32 codes in Y2 (elements 32p…32p+31 of the
// super-block) times their activations at xoff(DI), times the scales of
// their two groups of 16 (bytes 2p, 2p+1 of X5, VPSHUFB'd to eight copies
// each and widened to int16), into the int32 sums Y11. Uses Y3.

// Run s of half h of a block_q2_K (p = 4h+s): bits 2s of the half's qs
// bytes (Y1); its scales are unsigned. Y13 holds 0x03 bytes.
#define Q2K_RUN(h, s) \
	VPSRLW $(2*s), Y1, Y2; \
	VPAND Y13, Y2, Y2; \
	VPMADDUBSW (128*h+32*s)(DI), Y2, Y2; \
	VPSHUFB pairScaleShuf<>+(16*(4*h+s))(SB), X5, X3; \
	VPMOVZXBW X3, Y3; \
	VPMADDWD Y3, Y2, Y2; \
	VPADDD Y2, Y11, Y11

#define Q2K_HALF(h) \
	VMOVDQU (16+32*h)(SI), Y1; \
	Q2K_RUN(h, 0); \
	Q2K_RUN(h, 1); \
	Q2K_RUN(h, 2); \
	Q2K_RUN(h, 3)

// func rowsQ2KAVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)
// block_q2_K: scales[16] (scale | min<<4), qs[64], d, dmin. Per
// super-block: Σ_g sc_g·Σ code·x (Y11) times d·d_x into Y0, less
// Σ_g m_g·(Σx over group g) times dmin·d_x.
TEXT ·rowsQ2KAVX2(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ nrows+40(FP), R13
	MOVQ out+48(FP), R14
	BCAST32($0x0f0f0f0f, X15, Y15)
	BCAST32($0x03030303, X13, Y13)

q2krow:
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bsum+24(FP), R8
	MOVQ nb+32(FP), CX
	VXORPS Y0, Y0, Y0

q2kloop:
	VMOVDQU (SI), X5
	VPSRLW $4, X5, X6
	VPAND X15, X6, X6
	VPAND X15, X5, X5
	VPMOVZXBW X6, Y6
	VPMADDWD (R8), Y6, Y6
	VCVTDQ2PS Y6, Y6
	VMOVD 80(SI), X4
	VCVTPH2PS X4, X4
	VBROADCASTSS (DX), X3
	VMULPS X3, X4, X4
	VMOVSHDUP X4, X7
	VBROADCASTSS X7, Y7
	VBROADCASTSS X4, Y4
	VFNMADD231PS Y7, Y6, Y0
	VPXOR Y11, Y11, Y11
	Q2K_HALF(0)
	Q2K_HALF(1)
	VCVTDQ2PS Y11, Y11
	VFMADD231PS Y4, Y11, Y0
	ADDQ $84, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, R8
	DECQ CX
	JNE q2kloop

	HSUM_Y0
	VMOVSS X0, (R14)
	ADDQ $4, R14
	DECQ R13
	JNE q2krow
	VZEROUPPER
	RET

// Run s of half h of a block_q3_K (p = 4h+s): bits 2s of the half's qs
// bytes (Y1) plus 4 where bit 4h+s of the hmask bytes (Y10) is set,
// moved to bit 2 by hbit; its scales are signed. Y13: 0x03 bytes, Y14:
// 0x04 bytes.
#define Q3K_HBIT_0 \
	VPSLLW $2, Y10, Y3
#define Q3K_HBIT_1 \
	VPSLLW $1, Y10, Y3
#define Q3K_HBIT_2 \
	VMOVDQA Y10, Y3
#define Q3K_HBIT_N(j) \
	VPSRLW $(j-2), Y10, Y3

#define Q3K_RUN(h, s, hbit) \
	VPSRLW $(2*s), Y1, Y2; \
	VPAND Y13, Y2, Y2; \
	hbit; \
	VPAND Y14, Y3, Y3; \
	VPOR Y3, Y2, Y2; \
	VPMADDUBSW (128*h+32*s)(DI), Y2, Y2; \
	VPSHUFB pairScaleShuf<>+(16*(4*h+s))(SB), X5, X3; \
	VPMOVSXBW X3, Y3; \
	VPMADDWD Y3, Y2, Y2; \
	VPADDD Y2, Y11, Y11

// func rowsQ3KAVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)
// block_q3_K: hmask[32], qs[64], scales[12], d. Codes are 0…7 here; the
// −4 offset is 4·Σ_g sc_g·(Σx over group g), taken off the integer sum.
// The sixteen 6-bit scales (less 32: signed bytes in X5) unpack as
// ggml's: scale j's low four bits are the low (j < 8) or high nibble of
// byte j%8, its top two bits 2·(j/4) of byte 8 + j%4.
TEXT ·rowsQ3KAVX2(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ nrows+40(FP), R13
	MOVQ out+48(FP), R14
	BCAST32($0x20202020, X12, Y12)
	BCAST32($0x03030303, X13, Y13)
	BCAST32($0x04040404, X14, Y14)
	MOVQ $0x0f0f0f0f0f0f0f0f, R9

q3krow:
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bsum+24(FP), R8
	MOVQ nb+32(FP), CX
	VXORPS Y0, Y0, Y0

q3kloop:
	MOVQ 96(SI), AX
	MOVL 104(SI), BX
	MOVQ AX, R10
	ANDQ R9, R10
	SHRQ $4, AX
	ANDQ R9, AX
	MOVL BX, R11
	ANDL $0x03030303, R11
	MOVL BX, R12
	SHRL $2, R12
	ANDL $0x03030303, R12
	SHLQ $32, R12
	ORQ R12, R11
	SHLQ $4, R11
	ORQ R11, R10
	MOVL BX, R11
	SHRL $4, R11
	ANDL $0x03030303, R11
	SHRL $6, BX
	ANDL $0x03030303, BX
	SHLQ $32, BX
	ORQ BX, R11
	SHLQ $4, R11
	ORQ R11, AX
	VMOVQ R10, X5
	VPINSRQ $1, AX, X5, X5
	VPSUBB X12, X5, X5
	VPMOVSXBW X5, Y7
	VPMADDWD (R8), Y7, Y7
	VPSLLD $2, Y7, Y7
	VPXOR Y11, Y11, Y11
	VPSUBD Y7, Y11, Y11
	VMOVDQU (SI), Y10
	VMOVDQU 32(SI), Y1
	Q3K_RUN(0, 0, Q3K_HBIT_0)
	Q3K_RUN(0, 1, Q3K_HBIT_1)
	Q3K_RUN(0, 2, Q3K_HBIT_2)
	Q3K_RUN(0, 3, Q3K_HBIT_N(3))
	VMOVDQU 64(SI), Y1
	Q3K_RUN(1, 0, Q3K_HBIT_N(4))
	Q3K_RUN(1, 1, Q3K_HBIT_N(5))
	Q3K_RUN(1, 2, Q3K_HBIT_N(6))
	Q3K_RUN(1, 3, Q3K_HBIT_N(7))
	MOVWLZX 108(SI), AX
	VMOVD AX, X4
	VCVTPH2PS X4, X4
	VMULSS (DX), X4, X4
	VBROADCASTSS X4, Y4
	VCVTDQ2PS Y11, Y11
	VFMADD231PS Y4, Y11, Y0
	ADDQ $110, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, R8
	DECQ CX
	JNE q3kloop

	HSUM_Y0
	VMOVSS X0, (R14)
	ADDQ $4, R14
	DECQ R13
	JNE q3krow
	VZEROUPPER
	RET
