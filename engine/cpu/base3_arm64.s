//go:build !purego

#include "textflag.h"

// B3 kernels for NEON with the dot-product extension (base3.go,
// base3_simd.go). NEON has byte multiplies and shifts, so the digits come
// straight out: c_n = byte·3^n (mod 256, one MUL by 3 per plane) and
// t_n = ⌊3c_n/256⌋ = ⌊(c + ⌊c/2⌋)/2⌋ >> 6 — USHR, UHADD (a halving add,
// no overflow), USHR — then SDOT with the activations: five instructions
// per 16 weights. TestB3TritArithmetic checks the halving-add form for
// all 256 bytes.
//
// Instructions Go's assembler has no mnemonic for, as WORDs (base
// encodings from the Arm ARM; d, n, m register numbers).

// SDOT Vd.4S, Vn.16B, Vm.16B: 0 1 0 01110 10 0 Rm 100101 Rn Rd (FEAT_DotProd)
#define SDOT(d, n, m) WORD $(0x4E809400 | ((m)<<16) | ((n)<<5) | (d))
// MUL Vd.16B, Vn.16B, Vm.16B: 0 1 0 01110 00 1 Rm 100111 Rn Rd
#define MULB(d, n, m) WORD $(0x4E209C00 | ((m)<<16) | ((n)<<5) | (d))
// UHADD Vd.16B, Vn.16B, Vm.16B: 0 1 1 01110 00 1 Rm 000001 Rn Rd
#define UHADDB(d, n, m) WORD $(0x6E200400 | ((m)<<16) | ((n)<<5) | (d))
// USHR Vd.16B, Vn.16B, #sh: 0 1 1 011110 0001 (8−sh) 000001 Rn Rd
#define USHRB(d, n, sh) WORD $(0x6F000400 | ((16-(sh))<<16) | ((n)<<5) | (d))
// SCVTF Vd.4S, Vn.4S: 0 1 0 01110 0 0 10000 11101 10 Rn Rd
#define SCVTF(d, n) WORD $(0x4E21D800 | ((n)<<5) | (d))
// FMUL Vd.4S, Vn.4S, Vm.4S: 0 1 1 01110 0 0 1 Rm 11011 1 Rn Rd
#define FMUL(d, n, m) WORD $(0x6E20DC00 | ((m)<<16) | ((n)<<5) | (d))

// Registers: V0–V3 one plane's 64 activations; V4–V7 the rows'
// accumulators; V8–V23 the four rows' chunk bytes (row r in V(8+4r) …
// V(11+4r), 16 bytes each), turned into c_n in place plane by plane;
// V24 = 3 in every byte; V25–V28 temporaries; V31 xs.

// DIG: acc += t(c)·x for one 16-byte vector.
#define DIG(c, x, acc, h, t) \
	USHRB(h, c, 1); \
	UHADDB(t, c, h); \
	USHRB(t, t, 6); \
	SDOT(acc, t, x)

// ROWP: one plane of one row (c in V(cb)…V(cb+3)).
#define ROWP(cb, acc) \
	DIG(cb, 0, acc, 25, 26); \
	DIG(cb+1, 1, acc, 27, 28); \
	DIG(cb+2, 2, acc, 25, 26); \
	DIG(cb+3, 3, acc, 27, 28)

// NEXT4: c ← 3c for one row.
#define NEXT4(cb) \
	MULB(cb, cb, 24); \
	MULB(cb+1, cb+1, 24); \
	MULB(cb+2, cb+2, 24); \
	MULB(cb+3, cb+3, 24)

// PLANE4: one plane of the four rows, activations from R8.
#define PLANE4 \
	VLD1.P 64(R8), [V0.B16, V1.B16, V2.B16, V3.B16]; \
	ROWP(8, 4); \
	ROWP(12, 5); \
	ROWP(16, 6); \
	ROWP(20, 7)

#define NEXT16 \
	NEXT4(8); \
	NEXT4(12); \
	NEXT4(16); \
	NEXT4(20)

// CHUNK4: one chunk of a group (weights from R0, activations from R8).
#define CHUNK4 \
	VLD1.P 64(R0), [V8.B16, V9.B16, V10.B16, V11.B16]; \
	VLD1.P 64(R0), [V12.B16, V13.B16, V14.B16, V15.B16]; \
	VLD1.P 64(R0), [V16.B16, V17.B16, V18.B16, V19.B16]; \
	VLD1.P 64(R0), [V20.B16, V21.B16, V22.B16, V23.B16]; \
	PLANE4; \
	NEXT16; \
	PLANE4; \
	NEXT16; \
	PLANE4; \
	NEXT16; \
	PLANE4; \
	NEXT16; \
	PLANE4

// func b3x4RowsSDOT(groups *byte, q *int8, nc int, tail *int8, ngroups int, total int32, xs float32, scale *float32, out *float32)
// ngroups groups of four B3 rows against one activation row: out[r] =
// float32(Σ code·q − total) · scale[r] · xs (convert, then two float32
// multiplies, as the Go expression rounds).
TEXT ·b3x4RowsSDOT(SB), NOSPLIT, $0-64
	MOVD groups+0(FP), R0
	MOVD q+8(FP), R1
	MOVD nc+16(FP), R2
	MOVD tail+24(FP), R3
	MOVD ngroups+32(FP), R4
	MOVW total+40(FP), R5
	FMOVS xs+44(FP), F31
	MOVD scale+48(FP), R6
	MOVD out+56(FP), R7
	VDUP V31.S[0], V31.S4
	VMOVI $3, V24.B16
	CBZ R4, b3sdone

b3sgroup:
	VEOR V4.B16, V4.B16, V4.B16
	VEOR V5.B16, V5.B16, V5.B16
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16
	MOVD R1, R8
	MOVD R2, R9
	CBZ R9, b3stail

b3schunk:
	CHUNK4
	SUBS $1, R9
	BNE b3schunk

b3stail:
	CBZ R3, b3ssums
	MOVD R3, R8
	CHUNK4

b3ssums:
	// [row0 … row3]: pairwise sums of the four accumulators.
	VADDP V5.S4, V4.S4, V4.S4
	VADDP V7.S4, V6.S4, V6.S4
	VADDP V6.S4, V4.S4, V4.S4
	VDUP R5, V25.S4
	VSUB V25.S4, V4.S4, V4.S4
	SCVTF(4, 4)
	VLD1.P 16(R6), [V25.S4]
	FMUL(4, 4, 25)
	FMUL(4, 4, 31)
	VST1.P [V4.S4], 16(R7)
	SUBS $1, R4
	BNE b3sgroup

b3sdone:
	RET

// func b3DotSDOT(row *byte, q *int8, nc int, tail *int8) int32
// Σ code·q over one B3 row whose chunks lie 256 bytes apart (row(r) of a
// group): the group kernel's work for one row, four accumulators (one per
// 16-byte column) summed at the end.
#define ROW1P \
	VLD1.P 64(R8), [V0.B16, V1.B16, V2.B16, V3.B16]; \
	DIG(8, 0, 4, 25, 26); \
	DIG(9, 1, 5, 27, 28); \
	DIG(10, 2, 6, 25, 26); \
	DIG(11, 3, 7, 27, 28)

#define CHUNK1 \
	VLD1 (R0), [V8.B16, V9.B16, V10.B16, V11.B16]; \
	ADD $256, R0; \
	ROW1P; \
	NEXT4(8); \
	ROW1P; \
	NEXT4(8); \
	ROW1P; \
	NEXT4(8); \
	ROW1P; \
	NEXT4(8); \
	ROW1P

TEXT ·b3DotSDOT(SB), NOSPLIT, $0-36
	MOVD row+0(FP), R0
	MOVD q+8(FP), R8
	MOVD nc+16(FP), R9
	MOVD tail+24(FP), R3
	VMOVI $3, V24.B16
	VEOR V4.B16, V4.B16, V4.B16
	VEOR V5.B16, V5.B16, V5.B16
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16
	CBZ R9, b3dstail

b3dschunk:
	CHUNK1
	SUBS $1, R9
	BNE b3dschunk

b3dstail:
	CBZ R3, b3dssum
	MOVD R3, R8
	CHUNK1

b3dssum:
	VADD V5.S4, V4.S4, V4.S4
	VADD V7.S4, V6.S4, V6.S4
	VADD V6.S4, V4.S4, V4.S4
	VADDV V4.S4, V4
	VMOV V4.S[0], R10
	MOVW R10, ret+32(FP)
	RET
