//go:build !purego

#include "textflag.h"

// The AVX-512 VNNI one-token Q4_K kernel (the format and portable kernel
// are in quant_kernels.go; why: q4k_avx512_amd64.go). Needs VBMI (VPERMB)
// and GFNI besides VNNI. Rows i and i+half of the call run as a pair,
// sharing each super-block's activation loads, sums and scale unpacking.
//
// Half h of a super-block (its qs bytes 64h…64h+63, elements 128h…) is
// one 64-byte load: VPANDD keeps the low nibbles (elements 128h+l and
// 128h+64+l), VGF2P8AFFINEQB moves the high ones down (128h+32+l and
// 128h+96+l), which is the activations' nibbleOrder, so each meets one
// 64-byte activation load. One VPDPBUSD each gives sixteen int32 sums of
// four code·x products (at most 4·15·128 = 7680 in magnitude: they fit
// an int16), lanes 0–7 of one sub-block and 8–15 of another. VPACKSSDW
// packs a half's low and high sums into words, and VPMADDWD (then
// VPDPWSSD for the second half) multiplies each word by its sub-block's
// 6-bit scale and adds the pairs: the super-block's Σ_j sc_j·Σ n·x in
// sixteen int32 lanes (at most 2·2·7680·63 each), exact in float32.
// VPACKSSDW's word order (128-bit lane L: the first source's four
// dwords, then the second's) decides the scale tables below. The mins
// meet the activation sums by VPMADDWD of the sixteen sums (one per 16
// elements) with each min taken twice.
//
// Both rows' 12 scale bytes are unpacked in one YMM register (ggml's
// get_scale_min_k4 on 32-bit lanes), a 128-bit lane per row: qword 0 its
// eight scales, qword 1 its eight mins, which VPERMB spreads into word
// tables. d·d_x and dmin·d_x go through the stack so the FMAs broadcast
// them from memory.
//
// Registers: Z0/Z1 the two rows' float sums (times d·d_x), Y2/Y3 their
// mins' (times −dmin·d_x); Z4–Z7 a half's int32 sums, Z8/Z9 codes, X9
// the row's d and dmin, Z10/Z11 the scale tables, Y12–Y14 scale
// unpacking; constants Z16 the GF2P8 matrix of x>>4, Z17 0x0f bytes,
// Z18/Z19 the scale table indices and Y20 the mins' (first row),
// Z26/Z27/Y28 the second row's, Y21 0x3f bytes, Y22 0x30 bytes, Y23 the
// dword shifts 0 and 4; per super-block X24 d_x, Y25 the activation
// sums; K1 the even bytes; BX the second row's output, R11 the offset
// of its weights, R12 the pairs left.

// q4kvIdx01: half 0's scale words. Word w of 128-bit lane L takes scale
// byte 0 (lanes 0, 1, words 0–3: low nibbles of qs 0…31, sub-block 0),
// 1 (words 4–7: their high nibbles), 2 and 3 in lanes 2 and 3 (qs
// 32…63). Odd bytes are zeroed by K1.
DATA q4kvIdx01<>+0(SB)/8, $0x0000000000000000
DATA q4kvIdx01<>+8(SB)/8, $0x0001000100010001
DATA q4kvIdx01<>+16(SB)/8, $0x0000000000000000
DATA q4kvIdx01<>+24(SB)/8, $0x0001000100010001
DATA q4kvIdx01<>+32(SB)/8, $0x0002000200020002
DATA q4kvIdx01<>+40(SB)/8, $0x0003000300030003
DATA q4kvIdx01<>+48(SB)/8, $0x0002000200020002
DATA q4kvIdx01<>+56(SB)/8, $0x0003000300030003
GLOBL q4kvIdx01<>(SB), RODATA|NOPTR, $64

// q4kvIdx23: the same for half 1 (scales 4, 5, 6, 7).
DATA q4kvIdx23<>+0(SB)/8, $0x0004000400040004
DATA q4kvIdx23<>+8(SB)/8, $0x0005000500050005
DATA q4kvIdx23<>+16(SB)/8, $0x0004000400040004
DATA q4kvIdx23<>+24(SB)/8, $0x0005000500050005
DATA q4kvIdx23<>+32(SB)/8, $0x0006000600060006
DATA q4kvIdx23<>+40(SB)/8, $0x0007000700070007
DATA q4kvIdx23<>+48(SB)/8, $0x0006000600060006
DATA q4kvIdx23<>+56(SB)/8, $0x0007000700070007
GLOBL q4kvIdx23<>(SB), RODATA|NOPTR, $64

// q4kvIdxMin: word w takes min w/2 (byte 8 + w/2), so VPMADDWD with the
// sixteen activation sums (one per 16 elements) gives m_j·Σx over
// sub-block j.
DATA q4kvIdxMin<>+0(SB)/8, $0x0009000900080008
DATA q4kvIdxMin<>+8(SB)/8, $0x000b000b000a000a
DATA q4kvIdxMin<>+16(SB)/8, $0x000d000d000c000c
DATA q4kvIdxMin<>+24(SB)/8, $0x000f000f000e000e
GLOBL q4kvIdxMin<>(SB), RODATA|NOPTR, $32

// q4kvDShift: dword shifts 0, 4 (u2's low and high nibbles).
DATA q4kvDShift<>+0(SB)/4, $0
DATA q4kvDShift<>+4(SB)/4, $4
DATA q4kvDShift<>+8(SB)/4, $0
DATA q4kvDShift<>+12(SB)/4, $0
GLOBL q4kvDShift<>(SB), RODATA|NOPTR, $16

// Half h (128 codes, 64 qs bytes) of the super-block at p into the
// zeroed sums xlo/lo (its low nibbles) and xhi/hi (its high ones).
// The matrix Z16 maps each byte to its high nibble (x>>4).
#define Q4KV_HALF(p, h, xlo, lo, xhi, hi) \
	VPXOR xlo, xlo, xlo; \
	VPXOR xhi, xhi, xhi; \
	VMOVDQU64 (16+64*h)(p), Z9; \
	VPANDD Z9, Z17, Z8; \
	VPDPBUSD (128*h)(DI), Z8, lo; \
	VGF2P8AFFINEQB $0, Z16, Z9, Z8; \
	VPDPBUSD (128*h+64)(DI), Z8, hi

// Q5_K's half h: qs at 48+64h, and qh (bytes 16…47: bit 2c of qh[l] is
// the fifth bit of chunk c's low nibble l, bit 2c+1 of its high one)
// rotated so that each code's bit lands on bit 4 of its byte and merged
// with VPTERNLOGD. Half 1's bits (4–7) are shifted down to half 0's
// first, so both use the rotations Z30 (low nibbles: bits 0 and 2 of the
// 256-bit halves' qwords to 4) and Z31 (high: bits 1 and 3); Z29 holds
// 0x10 bytes. The codes are 0…31: four products still fit an int16.
#define Q5KV_HALF(p, h, xlo, lo, xhi, hi) \
	VPXOR xlo, xlo, xlo; \
	VPXOR xhi, xhi, xhi; \
	VMOVDQU64 (48+64*h)(p), Z9; \
	VBROADCASTI64X4 16(p), Z15; \
	VPSRLQ $(4*h), Z15, Z15; \
	VPANDD Z9, Z17, Z8; \
	VPROLVQ Z30, Z15, Z14; \
	VPTERNLOGD $0xEA, Z8, Z29, Z14; \
	VPDPBUSD (128*h)(DI), Z14, lo; \
	VGF2P8AFFINEQB $0, Z16, Z9, Z8; \
	VPROLVQ Z31, Z15, Z14; \
	VPTERNLOGD $0xEA, Z8, Z29, Z14; \
	VPDPBUSD (128*h+64)(DI), Z14, hi

// Both rows' scales and mins (rows at p0 and p1) into Y13.
#define Q4KV_SCALES(p0, p1) \
	VMOVDQU 4(p0), X12; \
	VINSERTI128 $1, 4(p1), Y12, Y12; \
	VPANDD Y21, Y12, Y13; \
	VPSRLD $2, Y12, Y14; \
	VPANDD Y22, Y14, Y14; \
	VPSHUFD $0xAA, Y12, Y12; \
	VPSRLVD Y23, Y12, Y12; \
	VPTERNLOGD $0xEA, Y14, Y17, Y12; \
	VPUNPCKLDQ Y12, Y13, Y13

// One super-block of the row at p, its scales in the lane of Y13 that
// i01, i23 and ymin index: d·d_x·Σ sc·Σ n·x into zacc, −dmin·d_x·Σ m·Σx
// into ymacc; dd is the row's stack slot for d·d_x and dmin·d_x.
#define Q4KV_SB(p, zacc, ymacc, dd, i01, i23, ymin) \
	Q45KV_PRE(i01, i23, ymin); \
	Q4KV_HALF(p, 0, X4, Z4, X5, Z5); \
	Q4KV_HALF(p, 1, X6, Z6, X7, Z7); \
	Q45KV_POST(p, zacc, ymacc, dd)

// Q5_K's: the same with the fifth bits merged into the codes.
#define Q5KV_SB(p, zacc, ymacc, dd, i01, i23, ymin) \
	Q45KV_PRE(i01, i23, ymin); \
	Q5KV_HALF(p, 0, X4, Z4, X5, Z5); \
	Q5KV_HALF(p, 1, X6, Z6, X7, Z7); \
	Q45KV_POST(p, zacc, ymacc, dd)

// The scale tables and the mins' sums of a super-block (Q45KV_SB's
// first part).
#define Q45KV_PRE(i01, i23, ymin) \
	VPERMB.Z Z13, i01, K1, Z10; \
	VPERMB.Z Z13, i23, K1, Z11; \
	VPERMB.Z Y13, ymin, K1, Y12; \
	VPMADDWD Y25, Y12, Y12

// The scales applied to the halves' sums, and both sums into the row's
// accumulators (Q45KV_SB's last part).
#define Q45KV_POST(p, zacc, ymacc, dd) \
	VPACKSSDW Z5, Z4, Z4; \
	VPACKSSDW Z7, Z6, Z6; \
	VPMADDWD Z10, Z4, Z4; \
	VPDPWSSD Z11, Z6, Z4; \
	VCVTPH2PS (p), X9; \
	VMULPS X24, X9, X9; \
	VMOVQ X9, dd(SP); \
	VCVTDQ2PS Z4, Z4; \
	VFMADD231PS.BCST dd(SP), Z4, zacc; \
	VCVTDQ2PS Y12, Y12; \
	VFNMADD231PS.BCST (dd+4)(SP), Y12, ymacc

// The row's sum (its float sums and its mins') stored at (dst).
#define Q4KV_END(zacc, yacc, xacc, ymacc, dst) \
	VEXTRACTF64X4 $1, zacc, Y5; \
	VADDPS Y5, yacc, yacc; \
	VADDPS ymacc, yacc, yacc; \
	VEXTRACTF128 $1, yacc, X5; \
	VADDPS X5, xacc, xacc; \
	VPERMILPS $0x4E, xacc, X5; \
	VADDPS X5, xacc, xacc; \
	VPERMILPS $0xB1, xacc, X5; \
	VADDPS X5, xacc, xacc; \
	VMOVSS xacc, (dst)

// Q45KV_CONSTS loads both kernels' constants (the register list above);
// Z29 keeps the 0x10 bytes that offset the second row's indices.
#define Q45KV_CONSTS \
	MOVL $0x0f0f0f0f, AX; \
	VPBROADCASTD AX, Z17; \
	MOVQ $0x1020408000000000, AX; \
	VPBROADCASTQ AX, Z16; \
	VMOVDQU64 q4kvIdx01<>(SB), Z18; \
	VMOVDQU64 q4kvIdx23<>(SB), Z19; \
	VMOVDQU64 q4kvIdxMin<>(SB), Y20; \
	MOVL $0x3f3f3f3f, AX; \
	VPBROADCASTD AX, Y21; \
	MOVL $0x30303030, AX; \
	VPBROADCASTD AX, Y22; \
	VBROADCASTI32X4 q4kvDShift<>(SB), Y23; \
	MOVL $0x10101010, AX; \
	VPBROADCASTD AX, Z29; \
	VPADDB Z29, Z18, Z26; \
	VPADDB Z29, Z19, Z27; \
	VPADDB Y29, Y20, Y28; \
	MOVQ $0x5555555555555555, AX; \
	KMOVQ AX, K1

// The two kernels' loop bookkeeping. Q45KV_START: the row stride (R10,
// nb·bs), the pairs (R12) of rows i and i+half, two streams in
// different pages — adjacent rows interleaved within a page defeat the
// hardware prefetcher (8 GB/s against 19 from memory on one Zen 4 core)
// — the second row's weight offset (R11) and output (BX); to one without
// a pair.
#define Q45KV_START(bs, one) \
	MOVQ w+0(FP), SI; \
	MOVQ nb+32(FP), R10; \
	IMULQ $bs, R10; \
	MOVQ nrows+40(FP), R13; \
	MOVQ out+48(FP), R14; \
	Q45KV_CONSTS; \
	MOVQ R13, R12; \
	SHRQ $1, R12; \
	MOVQ R12, R11; \
	IMULQ R10, R11; \
	LEAQ (R14)(R12*4), BX; \
	TESTQ R12, R12; \
	JEQ one

// Q45KV_ROW: a row's (or pair's) pass starts at the activations' first
// super-block.
#define Q45KV_ROW \
	MOVQ q+8(FP), DI; \
	MOVQ d+16(FP), DX; \
	MOVQ bsum+24(FP), R8; \
	MOVQ nb+32(FP), CX; \
	VPXOR X0, X0, X0; \
	VPXOR X1, X1, X1; \
	VPXOR X2, X2, X2; \
	VPXOR X3, X3, X3

// Q45KV_LOADS: the super-block's d_x and activation sums.
#define Q45KV_LOADS \
	VBROADCASTSS (DX), X24; \
	VMOVDQU64 (R8), Y25

// Q45KV_NEXT: on to the next super-block (flags: super-blocks left).
#define Q45KV_NEXT(bs) \
	ADDQ $bs, SI; \
	ADDQ $bs, R9; \
	ADDQ $256, DI; \
	ADDQ $4, DX; \
	ADDQ $32, R8; \
	DECQ CX

// Q45KV_PAIR_END stores a pair's sums and goes on to the next pair;
// after the last, an odd count leaves the last row: SI is at row half,
// BX at its output 2·half (to done when the count is even).
#define Q45KV_PAIR_END(pair, done) \
	Q4KV_END(Z0, Y0, X0, Y2, R14); \
	Q4KV_END(Z1, Y1, X1, Y3, BX); \
	ADDQ $4, R14; \
	ADDQ $4, BX; \
	DECQ R12; \
	JNE pair; \
	ANDQ $1, R13; \
	JEQ done; \
	ADDQ R11, SI; \
	MOVQ BX, R14

// func rowsQ4KVNNI(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)
TEXT ·rowsQ4KVNNI(SB), NOSPLIT, $16-56
	Q45KV_START(144, q4kvone)

q4kvpair:
	LEAQ (SI)(R11*1), R9
	Q45KV_ROW

q4kvloop2:
	Q45KV_LOADS
	Q4KV_SCALES(SI, R9)
	Q4KV_SB(SI, Z0, Y2, 0, Z18, Z19, Y20)
	Q4KV_SB(R9, Z1, Y3, 8, Z26, Z27, Y28)
	Q45KV_NEXT(144)
	JNE q4kvloop2
	Q45KV_PAIR_END(q4kvpair, q4kvdone)

q4kvone:
	Q45KV_ROW

q4kvloop1:
	Q45KV_LOADS
	Q4KV_SCALES(SI, SI)
	Q4KV_SB(SI, Z0, Y2, 0, Z18, Z19, Y20)
	Q45KV_NEXT(144)
	JNE q4kvloop1
	Q4KV_END(Z0, Y0, X0, Y2, R14)

q4kvdone:
	VZEROUPPER
	RET

// q5kvRotLo/Hi: the qh qword rotations (Q5KV_HALF).
DATA q5kvRotLo<>+0(SB)/8, $4
DATA q5kvRotLo<>+8(SB)/8, $4
DATA q5kvRotLo<>+16(SB)/8, $4
DATA q5kvRotLo<>+24(SB)/8, $4
DATA q5kvRotLo<>+32(SB)/8, $2
DATA q5kvRotLo<>+40(SB)/8, $2
DATA q5kvRotLo<>+48(SB)/8, $2
DATA q5kvRotLo<>+56(SB)/8, $2
GLOBL q5kvRotLo<>(SB), RODATA|NOPTR, $64

DATA q5kvRotHi<>+0(SB)/8, $3
DATA q5kvRotHi<>+8(SB)/8, $3
DATA q5kvRotHi<>+16(SB)/8, $3
DATA q5kvRotHi<>+24(SB)/8, $3
DATA q5kvRotHi<>+32(SB)/8, $1
DATA q5kvRotHi<>+40(SB)/8, $1
DATA q5kvRotHi<>+48(SB)/8, $1
DATA q5kvRotHi<>+56(SB)/8, $1
GLOBL q5kvRotHi<>(SB), RODATA|NOPTR, $64

// func rowsQ5KVNNI(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)
TEXT ·rowsQ5KVNNI(SB), NOSPLIT, $16-56
	VMOVDQU64 q5kvRotLo<>(SB), Z30
	VMOVDQU64 q5kvRotHi<>(SB), Z31
	Q45KV_START(176, q5kvone)

q5kvpair:
	LEAQ (SI)(R11*1), R9
	Q45KV_ROW

q5kvloop2:
	Q45KV_LOADS
	Q4KV_SCALES(SI, R9)
	Q5KV_SB(SI, Z0, Y2, 0, Z18, Z19, Y20)
	Q5KV_SB(R9, Z1, Y3, 8, Z26, Z27, Y28)
	Q45KV_NEXT(176)
	JNE q5kvloop2
	Q45KV_PAIR_END(q5kvpair, q5kvdone)

q5kvone:
	Q45KV_ROW

q5kvloop1:
	Q45KV_LOADS
	Q4KV_SCALES(SI, SI)
	Q5KV_SB(SI, Z0, Y2, 0, Z18, Z19, Y20)
	Q45KV_NEXT(176)
	JNE q5kvloop1
	Q4KV_END(Z0, Y0, X0, Y2, R14)

q5kvdone:
	VZEROUPPER
	RET
