//go:build !purego

#include "textflag.h"
#include "hsum_amd64.h"

// The AVX-512 VNNI one-token Q6_K kernel (the format and portable kernel
// are in quant_kernels.go; why: q6k_avx512_amd64.go). Needs GFNI besides
// VNNI (VPERMW is AVX-512 BW).
//
// Half h of a super-block is one 64-byte load of ql (its low nibbles are
// elements 128h…128h+63 in order, its high ones 128h+64…128h+127) and the
// 32 qh bytes broadcast to both 256-bit halves: shifted per half (VPSLLVQ
// by 4 and 2 for the low nibbles' two top bits, VPSRLVQ by 0 and 2 for the
// high nibbles') and merged in with one VPTERNLOGD (x & 0x30 | nibble),
// the 6-bit codes meet 64 activations each in element order. VPDPBUSD
// sums four code·x products a lane (at most 4·63·128 = 32256: an int16),
// VPACKSSDW packs a half's two registers into words and VPMADDWD (then
// VPDPWSSD) multiplies each by its 16 elements' signed scale: lane L of
// half h holds scales 8h+L (words 0–3) and 8h+4+L (words 4–7). The codes'
// offset of 32 is 32·Σ_j sc_j·Σx_j, by VPMADDWD of the sixteen
// activation sums (one per 16 elements, as the scales) with the scales.
//
// Registers: Z0 the row's float sums; Z4–Z7 a super-block's int32 sums,
// Z8 ql, Z9 qh, Z10 the scales as words, Z11/Z12 the two halves' scale
// tables, Y13 the offset's sums, Z14/Z15 temporaries; constants Z16 the
// GF2P8 matrix of x>>4, Z17 0x0f bytes, Z18 0x30 bytes, Z19/Z20 the qh
// shifts, Z21/Z22 the scale table indices.

// q6kvShiftL/R: the qh qword shifts of the low nibbles' halves (bits 0–1
// and 2–3 up to 4–5) and the high nibbles' (bits 4–5 and 6–7).
DATA q6kvShiftL<>+0(SB)/8, $4
DATA q6kvShiftL<>+8(SB)/8, $4
DATA q6kvShiftL<>+16(SB)/8, $4
DATA q6kvShiftL<>+24(SB)/8, $4
DATA q6kvShiftL<>+32(SB)/8, $2
DATA q6kvShiftL<>+40(SB)/8, $2
DATA q6kvShiftL<>+48(SB)/8, $2
DATA q6kvShiftL<>+56(SB)/8, $2
GLOBL q6kvShiftL<>(SB), RODATA|NOPTR, $64

DATA q6kvShiftR<>+0(SB)/8, $0
DATA q6kvShiftR<>+8(SB)/8, $0
DATA q6kvShiftR<>+16(SB)/8, $0
DATA q6kvShiftR<>+24(SB)/8, $0
DATA q6kvShiftR<>+32(SB)/8, $2
DATA q6kvShiftR<>+40(SB)/8, $2
DATA q6kvShiftR<>+48(SB)/8, $2
DATA q6kvShiftR<>+56(SB)/8, $2
GLOBL q6kvShiftR<>(SB), RODATA|NOPTR, $64

// q6kvIdx0/1: VPERMW indices of the halves' scale tables: word w of lane
// L takes scale 8h+L (w < 4) or 8h+4+L.
DATA q6kvIdx0<>+0(SB)/8, $0x0000000000000000
DATA q6kvIdx0<>+8(SB)/8, $0x0004000400040004
DATA q6kvIdx0<>+16(SB)/8, $0x0001000100010001
DATA q6kvIdx0<>+24(SB)/8, $0x0005000500050005
DATA q6kvIdx0<>+32(SB)/8, $0x0002000200020002
DATA q6kvIdx0<>+40(SB)/8, $0x0006000600060006
DATA q6kvIdx0<>+48(SB)/8, $0x0003000300030003
DATA q6kvIdx0<>+56(SB)/8, $0x0007000700070007
GLOBL q6kvIdx0<>(SB), RODATA|NOPTR, $64

DATA q6kvIdx1<>+0(SB)/8, $0x0008000800080008
DATA q6kvIdx1<>+8(SB)/8, $0x000c000c000c000c
DATA q6kvIdx1<>+16(SB)/8, $0x0009000900090009
DATA q6kvIdx1<>+24(SB)/8, $0x000d000d000d000d
DATA q6kvIdx1<>+32(SB)/8, $0x000a000a000a000a
DATA q6kvIdx1<>+40(SB)/8, $0x000e000e000e000e
DATA q6kvIdx1<>+48(SB)/8, $0x000b000b000b000b
DATA q6kvIdx1<>+56(SB)/8, $0x000f000f000f000f
GLOBL q6kvIdx1<>(SB), RODATA|NOPTR, $64

// Half h of the super-block at SI into the zeroed sums xlo/lo (elements
// 128h…128h+63) and xhi/hi (128h+64…).
#define Q6KV_HALF(h, xlo, lo, xhi, hi) \
	VPXOR xlo, xlo, xlo; \
	VPXOR xhi, xhi, xhi; \
	VMOVDQU64 (64*h)(SI), Z8; \
	VBROADCASTI64X4 (128+32*h)(SI), Z9; \
	VPANDD Z8, Z17, Z14; \
	VPSLLVQ Z19, Z9, Z15; \
	VPTERNLOGD $0xEA, Z14, Z18, Z15; \
	VPDPBUSD (128*h)(DI), Z15, lo; \
	VGF2P8AFFINEQB $0, Z16, Z8, Z14; \
	VPSRLVQ Z20, Z9, Z15; \
	VPTERNLOGD $0xEA, Z14, Z18, Z15; \
	VPDPBUSD (128*h+64)(DI), Z15, hi

// func rowsQ6KVNNI(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)
TEXT ·rowsQ6KVNNI(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ nrows+40(FP), R13
	MOVQ out+48(FP), R14
	MOVQ $0x1020408000000000, AX
	VPBROADCASTQ AX, Z16
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z17
	MOVL $0x30303030, AX
	VPBROADCASTD AX, Z18
	VMOVDQU64 q6kvShiftL<>(SB), Z19
	VMOVDQU64 q6kvShiftR<>(SB), Z20
	VMOVDQU64 q6kvIdx0<>(SB), Z21
	VMOVDQU64 q6kvIdx1<>(SB), Z22
	TESTQ R13, R13
	JEQ q6kvdone

q6kvrow:
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bsum+24(FP), R8
	MOVQ nb+32(FP), CX
	VPXOR X0, X0, X0

q6kvloop:
	VPMOVSXBW 192(SI), Y10
	VPERMW Z10, Z21, Z11
	VPERMW Z10, Z22, Z12
	VPMADDWD (R8), Y10, Y13
	VPSLLD $5, Y13, Y13
	Q6KV_HALF(0, X4, Z4, X5, Z5)
	Q6KV_HALF(1, X6, Z6, X7, Z7)
	VPACKSSDW Z5, Z4, Z4
	VPACKSSDW Z7, Z6, Z6
	VPMADDWD Z11, Z4, Z4
	VPDPWSSD Z12, Z6, Z4
	VPSUBD Z13, Z4, Z4
	// d·d_x: d is the block's last two bytes (a wider load could run past
	// the matrix).
	MOVWLZX 208(SI), AX
	VMOVD AX, X9
	VCVTPH2PS X9, X9
	VMULSS (DX), X9, X9
	VBROADCASTSS X9, Z9
	VCVTDQ2PS Z4, Z4
	VFMADD231PS Z9, Z4, Z0
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, R8
	DECQ CX
	JNE q6kvloop

	HSUM_Z0
	VMOVSS X0, (R14)
	ADDQ $4, R14
	DECQ R13
	JNE q6kvrow

q6kvdone:
	VZEROUPPER
	RET
