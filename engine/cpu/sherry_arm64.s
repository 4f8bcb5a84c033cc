//go:build !purego

#include "textflag.h"

// Sherry kernels for NEON with SDOT (see sherry_kernels.go). A unit is
// 128 weights: 20 bytes, 32 codes, taken as two halves of 16 codes, each
// from one 16-byte load (bytes 0…15 and 4…19: no read past the unit).
// Code c of a half lies at bit t = 5c mod 8 of byte r (and, when t > 3,
// of r+1): TBL picks byte r and byte r+1 for each code, USHL shifts them
// by −t and 8−t (a per-byte variable shift), ORR and AND 31 leave the code,
// and a 32-entry TBL gives its I2-style byte (w+1 of lane p in bits
// 2p…2p+1). As in the I2 SDOT kernel, field 0 and field 3 (shifted down
// by 6) go to accumulator A1, field 1 (masked, so 4·w+1) to A4, field 2
// (16·) to A16: every operand stays below 128 for the signed SDOT, and the
// sum is A1 + A4/4 + A16/16 (exact). The activations come in plane order
// (sherryPlanesNEON: plane p of a unit is 32 bytes, the codes' lane p).

// SDOT Vd.4S, Vn.16B, Vm.16B: 0 1 0 01110 10 0 Rm 100101 Rn Rd (FEAT_DotProd)
#define SDOT(d, n, m) WORD $(0x4E809400 | ((m)<<16) | ((n)<<5) | (d))
// USHL Vd.16B, Vn.16B, Vm.16B: 0 1 1 01110 00 1 Rm 010001 Rn Rd (shift
// each byte of Vn by the signed byte of Vm: negative shifts right)
#define USHL(d, n, m) WORD $(0x6E204400 | ((m)<<16) | ((n)<<5) | (d))
// SSRA Vd.4S, Vn.4S, #sh: 0 1 0 011110 immh:immb=64-sh 00010 1 Rn Rd
#define SSRA(d, n, sh) WORD $(0x4F001400 | ((64-(sh))<<16) | ((n)<<5) | (d))

// Constants (V16–V27): byte indexes of r and r+1 for the first half
// (V16, V17) and the second (V18, V19; its bytes start at 4), the shifts
// −t and 8−t (V20, V21), the lookup table (V22, V23), and the masks 31,
// 0x03, 0x0c, 0x30 (V24–V27).
#define SHN_SETUP \
	VLD1.P 64(R8), [V16.B16, V17.B16, V18.B16, V19.B16]; \
	VLD1 (R8), [V20.B16, V21.B16, V22.B16, V23.B16]; \
	VMOVI $31, V24.B16; \
	VMOVI $3, V25.B16; \
	VMOVI $12, V26.B16; \
	VMOVI $48, V27.B16

// SHN_DECODE decodes the unit at (R9) into its two halves' I2-style bytes,
// V14 (codes 0–15) and V15 (16–31), and advances R9 past it (uses R10,
// V12, V13, V28, V29).
#define SHN_DECODE \
	VLD1 (R9), [V12.B16]; \
	ADD $4, R9, R10; \
	VLD1 (R10), [V13.B16]; \
	ADD $20, R9; \
	VTBL V16.B16, [V12.B16], V14.B16; \
	VTBL V17.B16, [V12.B16], V28.B16; \
	VTBL V18.B16, [V13.B16], V15.B16; \
	VTBL V19.B16, [V13.B16], V29.B16; \
	USHL(14, 14, 20); \
	USHL(28, 28, 21); \
	USHL(15, 15, 20); \
	USHL(29, 29, 21); \
	VORR V28.B16, V14.B16, V14.B16; \
	VORR V29.B16, V15.B16, V15.B16; \
	VAND V24.B16, V14.B16, V14.B16; \
	VAND V24.B16, V15.B16, V15.B16; \
	VTBL V14.B16, [V22.B16, V23.B16], V14.B16; \
	VTBL V15.B16, [V22.B16, V23.B16], V15.B16

// SHN_HALF multiplies the decoded half B with its planes p0…p3 (register
// numbers) into A1 (V0), A4 (V1), A16 (V2) (uses V28–V31).
#define SHN_HALF(B, p0, p1, p2, p3) \
	VAND V25.B16, B.B16, V28.B16; \
	VAND V26.B16, B.B16, V29.B16; \
	VAND V27.B16, B.B16, V30.B16; \
	VUSHR $6, B.B16, V31.B16; \
	SDOT(0, 28, p0); \
	SDOT(1, 29, p1); \
	SDOT(2, 30, p2); \
	SDOT(0, 31, p3)

// func sherryPlanesNEON(dst, src *int8, nu int)
// Plane order for nu 128-weight units: LD4 de-interleaves 64 activations
// into the four planes of 16 codes.
TEXT ·sherryPlanesNEON(SB), NOSPLIT, $0-24
	MOVD dst+0(FP), R0
	MOVD src+8(FP), R1
	MOVD nu+16(FP), R2
	CBZ R2, spndone

spnloop:
	VLD4.P 64(R1), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD4.P 64(R1), [V4.B16, V5.B16, V6.B16, V7.B16]
	VST1.P [V0.B16], 16(R0)
	VST1.P [V4.B16], 16(R0)
	VST1.P [V1.B16], 16(R0)
	VST1.P [V5.B16], 16(R0)
	VST1.P [V2.B16], 16(R0)
	VST1.P [V6.B16], 16(R0)
	VST1.P [V3.B16], 16(R0)
	VST1.P [V7.B16], 16(R0)
	SUBS $1, R2
	BNE spnloop

spndone:
	RET

// func sherryRowsNEON(rows *byte, planes *int8, nu, stride, n int, total int32, xs float32, scale *float32, out unsafe.Pointer, c *[8][16]byte)
// n rows stride bytes apart, nu units each, one row at a time against one
// token's planes. With scale nil out is []int32 and gets Σ code·q; else out
// is []float32 and gets float32(Σ − total)·scale[r]·xs, rounded as the Go
// expression is.
TEXT ·sherryRowsNEON(SB), NOSPLIT, $0-72
	MOVD rows+0(FP), R0
	MOVD planes+8(FP), R1
	MOVD nu+16(FP), R2
	MOVD stride+24(FP), R3
	MOVD n+32(FP), R4
	MOVW total+40(FP), R5
	FMOVS xs+44(FP), F11 // V11: free in this kernel
	MOVD scale+48(FP), R6
	MOVD out+56(FP), R7
	MOVD c+64(FP), R8
	SHN_SETUP
	CBZ R4, snrdone

snrrow:
	MOVD R0, R9
	ADD R3, R0
	MOVD R1, R11
	MOVD R2, R12
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16

snrunit:
	VLD1.P 64(R11), [V3.B16, V4.B16, V5.B16, V6.B16]
	VLD1.P 64(R11), [V7.B16, V8.B16, V9.B16, V10.B16]
	SHN_DECODE
	SHN_HALF(V14, 3, 5, 7, 9)
	SHN_HALF(V15, 4, 6, 8, 10)
	SUBS $1, R12
	BNE snrunit
	SSRA(0, 1, 2)
	SSRA(0, 2, 4)
	VADDV V0.S4, V0
	VMOV V0.S[0], R13
	CBZ R6, snrints
	SUBW R5, R13, R13
	SCVTFWS R13, F0
	FMOVS.P 4(R6), F1
	FMULS F1, F0, F0
	FMULS F11, F0, F0
	FMOVS.P F0, 4(R7)
	B snrnext

snrints:
	MOVW.P R13, 4(R7)

snrnext:
	SUBS $1, R4
	BNE snrrow

snrdone:
	RET

// SHN_TOKEN multiplies the unit's eight fields (V4–V11: half 0's fields
// 0…3, then half 1's, each w+1 shifted down) with the planes at R into the
// token's sum acc (uses V28–V31).
#define SHN_TOKEN(R, acc) \
	VLD1.P 64(R), [V28.B16, V29.B16, V30.B16, V31.B16]; \
	SDOT(acc, 4, 28); \
	SDOT(acc, 8, 29); \
	SDOT(acc, 5, 30); \
	SDOT(acc, 9, 31); \
	VLD1.P 64(R), [V28.B16, V29.B16, V30.B16, V31.B16]; \
	SDOT(acc, 6, 28); \
	SDOT(acc, 10, 29); \
	SDOT(acc, 7, 30); \
	SDOT(acc, 11, 31)

// SHN_FIELDS splits the decoded half B into w+1 per lane: f0…f3.
#define SHN_FIELDS(B, f0, f1, f2, f3) \
	VAND V25.B16, B.B16, f0.B16; \
	VUSHR $2, B.B16, f1.B16; \
	VAND V25.B16, f1.B16, f1.B16; \
	VUSHR $4, B.B16, f2.B16; \
	VAND V25.B16, f2.B16, f2.B16; \
	VUSHR $6, B.B16, f3.B16

// func sherryRows4NEON(rows *byte, planes *int8, kp, nu, stride, n int, out *int32, c *[8][16]byte)
// Prefill: n rows against four tokens' planes kp bytes apart, one row at a
// time, each unit decoded once for the four: out[4r+t] = Σ code·q.
TEXT ·sherryRows4NEON(SB), NOSPLIT, $0-64
	MOVD rows+0(FP), R0
	MOVD planes+8(FP), R1
	MOVD kp+16(FP), R2
	MOVD nu+24(FP), R3
	MOVD stride+32(FP), R4
	MOVD n+40(FP), R5
	MOVD out+48(FP), R7
	MOVD c+56(FP), R8
	SHN_SETUP
	CBZ R5, sn4done

sn4row:
	MOVD R0, R9
	ADD R4, R0
	MOVD R1, R13
	ADD R2, R13, R14
	ADD R2, R14, R15
	ADD R2, R15, R16
	MOVD R3, R12
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16

sn4unit:
	SHN_DECODE
	SHN_FIELDS(V14, V4, V5, V6, V7)
	SHN_FIELDS(V15, V8, V9, V10, V11)
	SHN_TOKEN(R13, 0)
	SHN_TOKEN(R14, 1)
	SHN_TOKEN(R15, 2)
	SHN_TOKEN(R16, 3)
	SUBS $1, R12
	BNE sn4unit
	VADDV V0.S4, V0
	VADDV V1.S4, V1
	VADDV V2.S4, V2
	VADDV V3.S4, V3
	VMOV V0.S[0], R17
	MOVW.P R17, 4(R7)
	VMOV V1.S[0], R17
	MOVW.P R17, 4(R7)
	VMOV V2.S[0], R17
	MOVW.P R17, 4(R7)
	VMOV V3.S[0], R17
	MOVW.P R17, 4(R7)
	SUBS $1, R5
	BNE sn4row

sn4done:
	RET
