//go:build !purego

#include "textflag.h"
#include "hsum_amd64.h"

// The AVX-512 VNNI one-token Q2_K kernel (the format and portable kernel
// are in quant_kernels.go; why a one-token 512-bit kernel pays for this
// type alone: q2k_avx512_amd64.go).
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
