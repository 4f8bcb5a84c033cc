//go:build !purego

#include "textflag.h"
#include "hsum_amd64.h"

// The AVX2 GPTQ/AWQ int4 row product (gptq_kernels.go has the contract,
// gptq_linear.go the layout). Each 16-byte block holds 32 unsigned 4-bit
// codes (slot j low nibble, j+16 high): VPSRLW/VINSERTI128/VPAND spread
// them to 32 bytes in slot order, VPMADDUBSW multiplies them (unsigned)
// with the int8 activations into int16 pair sums (at most 2·15·128: no
// saturation), VPMADDWD widens them to int32. A block's eight partial
// sums are converted once and accumulated with FMA times its d_x, two
// blocks in flight (two accumulators); each group's sum is then FMA'd
// times its scale s into the row's eight lanes, and m·X_g into a scalar.

// acc += float(Σ c·q of the block at woff(SI), activations at xoff(DI))
// · d_x at doff(DX). Uses Y1–Y4; Y13 holds 0x0f bytes, Y14 int16 ones.
#define GPTQ_BLOCK(woff, xoff, doff, acc) \
	VMOVDQU woff(SI), X1; \
	VPSRLW $4, X1, X2; \
	VINSERTI128 $1, X2, Y1, Y1; \
	VPAND Y13, Y1, Y1; \
	VPMADDUBSW xoff(DI), Y1, Y3; \
	VPMADDWD Y14, Y3, Y3; \
	VCVTDQ2PS Y3, Y3; \
	VBROADCASTSS doff(DX), Y4; \
	VFMADD231PS Y4, Y3, acc

// func gptqRowsAVX2(w *byte, sm *float32, q *int8, d *float32, xg *float32, ng int, nb int, nrows int, out *float32)
// nrows consecutive rows of ng groups of nb blocks (ng, nb, nrows ≥ 1).
TEXT ·gptqRowsAVX2(SB), NOSPLIT, $0-72
	MOVQ w+0(FP), SI
	MOVQ sm+8(FP), R8
	MOVQ nrows+56(FP), BX
	MOVQ out+64(FP), R9
	MOVL $0x00010001, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13

gptqrow:
	MOVQ q+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ xg+32(FP), R10
	MOVQ ng+40(FP), R11
	VXORPS Y0, Y0, Y0
	VXORPS X7, X7, X7

gptqgroup:
	VXORPS Y6, Y6, Y6
	VXORPS Y8, Y8, Y8
	MOVQ nb+48(FP), CX
	SHRQ $1, CX
	JEQ gptqtail

gptqpair:
	GPTQ_BLOCK(0, 0, 0, Y6)
	GPTQ_BLOCK(16, 32, 4, Y8)
	ADDQ $32, SI
	ADDQ $64, DI
	ADDQ $8, DX
	DECQ CX
	JNE gptqpair

gptqtail:
	MOVQ nb+48(FP), CX
	ANDQ $1, CX
	JEQ gptqscale
	GPTQ_BLOCK(0, 0, 0, Y6)
	ADDQ $16, SI
	ADDQ $32, DI
	ADDQ $4, DX

gptqscale:
	VADDPS Y8, Y6, Y6
	VBROADCASTSS (R8), Y5
	VFMADD231PS Y5, Y6, Y0
	VMOVSS 4(R8), X5
	VFMADD231SS (R10), X5, X7
	ADDQ $8, R8
	ADDQ $4, R10
	DECQ R11
	JNE gptqgroup

	HSUM_Y0
	VADDSS X7, X0, X0
	VMOVSS X0, (R9)
	ADDQ $4, R9
	DECQ BX
	JNE gptqrow
	VZEROUPPER
	RET
