//go:build !purego

#include "textflag.h"
#include "hsum_amd64.h"

// The AVX-512 VNNI one-token Q2_K and Q3_K kernels (the formats and
// portable kernels are in quant_kernels.go; why one-token 512-bit kernels
// pay for these types: q23k_avx512_amd64.go). Q2_K first.
//
// A super-block's 256 codes become four registers in element order:
// qs[32h…32h+31] is broadcast to both 256-bit halves and VPSRLVQ shifts
// the halves by different amounts (bits 2s and 2s+2 of each byte: runs s
// and s+1 of half h, elements 128h+32s… and 128h+32s+32…), so register i
// holds elements 64i…64i+63 and its 128-bit lane j group 4i+j of 16. The
// group's scale goes into the codes before the product: VPSHUFB looks
// each code up in a per-lane table of sc·0, sc·1, sc·2, sc·3 (at most
// 45, an unsigned byte), so one VPDPBUSD with the activations sums
// sc·code·x, four products a lane, and four VPDPBUSD make the
// super-block's Σ_g sc_g·Σ code·x in one int32 register (each lane at
// most 16·45·128, no overflow). The four groups' tables of a register
// share its lane: bytes 4i…4i+3 of lane j are group 4i+j's, and register
// i's codes are looked up at 4i + code (VPTERNLOGD: masked and or'd in
// one operation). The mins meet the activation sums as in the AVX2
// kernel: Σ_g m_g·Σx_g by VPMADDWD.
//
// Registers: Z0 the row's float sums (times d·d_x), Y1 the mins' (times
// dmin·d_x), Z8 a super-block's int32 sums, Z10/Z11 the scale tables,
// Z12/Z13 the two halves' qs bytes, Z14–Z17 the looked-up codes; the
// constants Z20/Z21 the qword shifts, Z22–Z24 the table offsets 4, 8,
// 12, Z25 the table shuffle, Z28 0x03 and Z29 0x0f bytes, K1 the odd
// bytes of each four, K2 the upper two.

// q2kShiftLo, q2kShiftHi: the qword shifts of registers 0 and 2 (runs 0
// and 1: bits 0, 2) and 1 and 3 (runs 2 and 3: bits 4, 6).
DATA q2kShiftLo<>+0(SB)/8, $0
DATA q2kShiftLo<>+8(SB)/8, $0
DATA q2kShiftLo<>+16(SB)/8, $0
DATA q2kShiftLo<>+24(SB)/8, $0
DATA q2kShiftLo<>+32(SB)/8, $2
DATA q2kShiftLo<>+40(SB)/8, $2
DATA q2kShiftLo<>+48(SB)/8, $2
DATA q2kShiftLo<>+56(SB)/8, $2
GLOBL q2kShiftLo<>(SB), RODATA|NOPTR, $64

DATA q2kShiftHi<>+0(SB)/8, $4
DATA q2kShiftHi<>+8(SB)/8, $4
DATA q2kShiftHi<>+16(SB)/8, $4
DATA q2kShiftHi<>+24(SB)/8, $4
DATA q2kShiftHi<>+32(SB)/8, $6
DATA q2kShiftHi<>+40(SB)/8, $6
DATA q2kShiftHi<>+48(SB)/8, $6
DATA q2kShiftHi<>+56(SB)/8, $6
GLOBL q2kShiftHi<>(SB), RODATA|NOPTR, $64

// q2kTableIdx: byte 4i+k of lane j takes scale byte 4i+j (group 4i+j's
// scale into the four table bytes register i looks up in lane j).
DATA q2kTableIdx<>+0(SB)/8, $0x0404040400000000
DATA q2kTableIdx<>+8(SB)/8, $0x0c0c0c0c08080808
DATA q2kTableIdx<>+16(SB)/8, $0x0505050501010101
DATA q2kTableIdx<>+24(SB)/8, $0x0d0d0d0d09090909
DATA q2kTableIdx<>+32(SB)/8, $0x0606060602020202
DATA q2kTableIdx<>+40(SB)/8, $0x0e0e0e0e0a0a0a0a
DATA q2kTableIdx<>+48(SB)/8, $0x0707070703030303
DATA q2kTableIdx<>+56(SB)/8, $0x0f0f0f0f0b0b0b0b
GLOBL q2kTableIdx<>(SB), RODATA|NOPTR, $64

// Register i (elements 64i…) of the super-block at SI: its qs half
// shifted, masked to the code and offset to its table (off: a register
// of 4i bytes), looked up in Z11, multiplied with its activations and
// added into Z8.
#define Q2KV_REG(i, half, shift, dst, off) \
	VPSRLVQ shift, half, dst; \
	VPTERNLOGD $0xEA, off, Z28, dst; \
	VPSHUFB dst, Z11, dst; \
	VPDPBUSD (64*i)(DI), dst, Z8

// func rowsQ2KVNNI(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)
TEXT ·rowsQ2KVNNI(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ nrows+40(FP), R13
	MOVQ out+48(FP), R14
	VMOVDQU64 q2kShiftLo<>(SB), Z20
	VMOVDQU64 q2kShiftHi<>(SB), Z21
	VMOVDQU64 q2kTableIdx<>(SB), Z25
	MOVL $0x04040404, AX
	VPBROADCASTD AX, Z22
	MOVL $0x08080808, AX
	VPBROADCASTD AX, Z23
	MOVL $0x0c0c0c0c, AX
	VPBROADCASTD AX, Z24
	MOVL $0x03030303, AX
	VPBROADCASTD AX, Z28
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z29
	MOVQ $0xaaaaaaaaaaaaaaaa, AX
	KMOVQ AX, K1
	MOVQ $0xcccccccccccccccc, AX
	KMOVQ AX, K2

q2kvrow:
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bsum+24(FP), R8
	MOVQ nb+32(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1

q2kvloop:
	// The table: lane j, byte 4i+k = k·sc of group 4i+j (k·sc as
	// 2sc where k ≥ 2, plus sc where k is odd).
	VBROADCASTI32X4 (SI), Z10
	VPANDD Z29, Z10, Z10
	VPSHUFB Z25, Z10, Z10
	VPADDB.Z Z10, Z10, K2, Z11
	VPADDB Z10, Z11, K1, Z11
	VBROADCASTI64X4 16(SI), Z12
	VBROADCASTI64X4 48(SI), Z13
	VPXORD Z8, Z8, Z8
	VPSRLVQ Z20, Z12, Z14
	VPANDD Z28, Z14, Z14
	VPSHUFB Z14, Z11, Z14
	VPDPBUSD (DI), Z14, Z8
	Q2KV_REG(1, Z12, Z21, Z15, Z22)
	Q2KV_REG(2, Z13, Z20, Z16, Z23)
	Q2KV_REG(3, Z13, Z21, Z17, Z24)
	// d·d_x, dmin·d_x.
	VPBROADCASTD 80(SI), X4
	VCVTPH2PS X4, X4
	VBROADCASTSS (DX), X3
	VMULPS X3, X4, X4
	VBROADCASTSS X4, Z5
	VMOVSHDUP X4, X7
	VBROADCASTSS X7, Y7
	VCVTDQ2PS Z8, Z8
	VFMADD231PS Z5, Z8, Z0
	// The mins: the scale bytes as words, shifted down to m.
	VPMOVZXBW (SI), Y6
	VPSRLW $4, Y6, Y6
	VPMADDWD (R8), Y6, Y6
	VCVTDQ2PS Y6, Y6
	VFNMADD231PS Y7, Y6, Y1
	ADDQ $84, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, R8
	DECQ CX
	JNE q2kvloop

	VEXTRACTF64X4 $1, Z0, Y2
	VADDPS Y2, Y0, Y0
	VADDPS Y1, Y0, Y0
	HSUM_Y0
	VMOVSS X0, (R14)
	ADDQ $4, R14
	DECQ R13
	JNE q2kvrow
	VZEROUPPER
	RET

// ---------------------------------------------------------------------
// Q3_K (block_q3_K: hmask[32], qs[64], scales[12], d). The 2-bit parts
// of the codes come out in Q2_K's element order (register i: elements
// 64i…64i+63, lane j group 4i+j), by the same broadcasts and VPSRLVQ.
// The third bit of element 32r + l is bit r of hmask[l]; register i
// needs runs 2i and 2i+1 (its low and high 256 bits), each at bit 2 of
// its byte: hmask broadcast to both halves and one VGF2P8AFFINEQB, whose
// per-qword bit matrix moves bit 2i (low half) or 2i+1 (high) to bit 2
// and clears the rest (two shifts and a mask did the same 0.7 ns a
// super-block slower). VPTERNLOGD merges it with the masked 2-bit code:
// codes 0…7, so one VPDPBUSD per register gives sixteen int32 sums of
// four code·x products (at most 4·7·128 = 3584: an int16).
//
// The scales are signed (−32…31), so they do not go into a byte table as
// Q2_K's do. The sums are packed as Q4_K's are (VPACKSSDW: lane j of
// registers 0 and 1 gives groups j and 4+j, of registers 2 and 3 groups
// 8+j and 12+j), and VPMADDWD/VPDPWSSD apply each group's scale from two
// word tables VPERMW spreads (q3kIdx01, q3kIdx23). The codes' −4 offset
// is 4·Σ_g sc_g·Σx_g: VPMADDWD of the sixteen scales with the activation
// sums, taken off the int32 lanes before they become floats.
//
// The sixteen 6-bit scales unpack as ggml's: scale j's low four bits are
// the low (j < 8) or high nibble of scales[j%8], its high two bits bits
// 2·(j/4) of scales[8 + j%4]: bytes [a, a>>4] masked with 0x0f, or'd
// with scales[8…11] broadcast to four dwords, dword k shifted right by
// 2k, masked with 0x03 and moved to bits 4–5.
//
// Registers: Z0 the row's float sums (times d·d_x); Z1/Z2 the two qs
// halves, Z3 hmask; Z4–Z7 the four registers' int32 sums; Z8 codes, Z16
// the third bits; Z9 the scales (bytes, then words), Z10 the offset
// term, Z11/Z12 the scale tables; constants Z13, Z14, Z22, Z23 the bit
// matrices of registers 0–3, Z20/Z21 the 2-bit shifts (as Q2_K's),
// Z24/Z25 the tables' word indices, X26 the dword shifts 0, 2, 4, 6, Z28
// 0x03 bytes, X30 0x0f bytes, X31 0x20 bytes.

// q3kHBit0…3: GF(2) matrices (VGF2P8AFFINEQB) that move run 2i's bit
// (bit 2i of each hmask byte; low 256 bits) or run 2i+1's (high 256
// bits) to bit 2 and clear the rest: row 2 of the matrix is byte 5 of
// the qword.
#define Q3K_HBIT_DATA(name, lo, hi) \
	DATA name<>+0(SB)/8, $lo; \
	DATA name<>+8(SB)/8, $lo; \
	DATA name<>+16(SB)/8, $lo; \
	DATA name<>+24(SB)/8, $lo; \
	DATA name<>+32(SB)/8, $hi; \
	DATA name<>+40(SB)/8, $hi; \
	DATA name<>+48(SB)/8, $hi; \
	DATA name<>+56(SB)/8, $hi; \
	GLOBL name<>(SB), RODATA|NOPTR, $64

Q3K_HBIT_DATA(q3kHBit0, 0x0000010000000000, 0x0000020000000000)
Q3K_HBIT_DATA(q3kHBit1, 0x0000040000000000, 0x0000080000000000)
Q3K_HBIT_DATA(q3kHBit2, 0x0000100000000000, 0x0000200000000000)
Q3K_HBIT_DATA(q3kHBit3, 0x0000400000000000, 0x0000800000000000)

// q3kIdx01: lane j's words 0–3 take scale j, words 4–7 scale 4+j (the
// packed sums of registers 0 and 1); q3kIdx23 scales 8+j and 12+j.
DATA q3kIdx01<>+0(SB)/8, $0x0000000000000000
DATA q3kIdx01<>+8(SB)/8, $0x0004000400040004
DATA q3kIdx01<>+16(SB)/8, $0x0001000100010001
DATA q3kIdx01<>+24(SB)/8, $0x0005000500050005
DATA q3kIdx01<>+32(SB)/8, $0x0002000200020002
DATA q3kIdx01<>+40(SB)/8, $0x0006000600060006
DATA q3kIdx01<>+48(SB)/8, $0x0003000300030003
DATA q3kIdx01<>+56(SB)/8, $0x0007000700070007
GLOBL q3kIdx01<>(SB), RODATA|NOPTR, $64

DATA q3kIdx23<>+0(SB)/8, $0x0008000800080008
DATA q3kIdx23<>+8(SB)/8, $0x000c000c000c000c
DATA q3kIdx23<>+16(SB)/8, $0x0009000900090009
DATA q3kIdx23<>+24(SB)/8, $0x000d000d000d000d
DATA q3kIdx23<>+32(SB)/8, $0x000a000a000a000a
DATA q3kIdx23<>+40(SB)/8, $0x000e000e000e000e
DATA q3kIdx23<>+48(SB)/8, $0x000b000b000b000b
DATA q3kIdx23<>+56(SB)/8, $0x000f000f000f000f
GLOBL q3kIdx23<>(SB), RODATA|NOPTR, $64

// q3kScaleShift: dword shifts 0, 2, 4, 6 (the scales' high bits).
DATA q3kScaleShift<>+0(SB)/4, $0
DATA q3kScaleShift<>+4(SB)/4, $2
DATA q3kScaleShift<>+8(SB)/4, $4
DATA q3kScaleShift<>+12(SB)/4, $6
GLOBL q3kScaleShift<>(SB), RODATA|NOPTR, $16

// Register i of the super-block: the 2-bit codes of half (shift: Z20 or
// Z21) and the third bits of hmask (Z3) by the matrix hbit, merged and
// multiplied with the activations into acc.
#define Q3KV_REG(i, half, shift, hbit, acc) \
	VPSRLVQ shift, half, Z8; \
	VGF2P8AFFINEQB $0, hbit, Z3, Z16; \
	VPTERNLOGD $0xEA, Z16, Z28, Z8; \
	VPDPBUSD (64*i)(DI), Z8, acc

// func rowsQ3KVNNI(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32)
TEXT ·rowsQ3KVNNI(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ nrows+40(FP), R13
	MOVQ out+48(FP), R14
	VMOVDQU64 q2kShiftLo<>(SB), Z20
	VMOVDQU64 q2kShiftHi<>(SB), Z21
	VMOVDQU64 q3kHBit0<>(SB), Z13
	VMOVDQU64 q3kHBit1<>(SB), Z14
	VMOVDQU64 q3kHBit2<>(SB), Z22
	VMOVDQU64 q3kHBit3<>(SB), Z23
	VMOVDQU64 q3kIdx01<>(SB), Z24
	VMOVDQU64 q3kIdx23<>(SB), Z25
	VMOVDQU32 q3kScaleShift<>(SB), X26
	MOVL $0x03030303, AX
	VPBROADCASTD AX, Z28
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, X30
	MOVL $0x20202020, AX
	VPBROADCASTD AX, X31

q3kvrow:
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bsum+24(FP), R8
	MOVQ nb+32(FP), CX
	VPXORD Z0, Z0, Z0

q3kvloop:
	// The scales as signed words (Y9) and their tables; the offset
	// term 4·Σ sc·Σx in Y10.
	VMOVQ 96(SI), X9
	VPSRLQ $4, X9, X10
	VPUNPCKLQDQ X10, X9, X9
	VPBROADCASTD 104(SI), X10
	VPSRLVD X26, X10, X10
	VPANDD X28, X10, X10
	VPSLLD $4, X10, X10
	VPTERNLOGD $0xEA, X10, X30, X9
	VPSUBB X31, X9, X9
	VPMOVSXBW X9, Y9
	VPERMW Z9, Z24, Z11
	VPERMW Z9, Z25, Z12
	VPMADDWD (R8), Y9, Y10
	VPSLLD $2, Y10, Y10
	// The codes, register by register.
	VBROADCASTI64X4 32(SI), Z1
	VBROADCASTI64X4 64(SI), Z2
	VBROADCASTI64X4 (SI), Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	Q3KV_REG(0, Z1, Z20, Z13, Z4)
	Q3KV_REG(1, Z1, Z21, Z14, Z5)
	Q3KV_REG(2, Z2, Z20, Z22, Z6)
	Q3KV_REG(3, Z2, Z21, Z23, Z7)
	// Scaled: lane j of Z4 holds groups j and 4+j, of Z6 8+j and 12+j.
	VPACKSSDW Z5, Z4, Z4
	VPACKSSDW Z7, Z6, Z6
	VPMADDWD Z11, Z4, Z4
	VPDPWSSD Z12, Z6, Z4
	VPSUBD Z10, Z4, Z4
	// d·d_x.
	VPBROADCASTW 108(SI), X9
	VCVTPH2PS X9, X9
	VMULSS (DX), X9, X9
	VBROADCASTSS X9, Z9
	VCVTDQ2PS Z4, Z4
	VFMADD231PS Z9, Z4, Z0
	ADDQ $110, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, R8
	DECQ CX
	JNE q3kvloop

	VEXTRACTF64X4 $1, Z0, Y2
	VADDPS Y2, Y0, Y0
	HSUM_Y0
	VMOVSS X0, (R14)
	ADDQ $4, R14
	DECQ R13
	JNE q3kvrow
	VZEROUPPER
	RET
