//go:build !purego

#include "textflag.h"

// Instructions Go's arm64 assembler has no mnemonic for, as WORDs. Each
// macro is the base encoding from the Arm ARM (field layout in the
// comment) with the register numbers (0..31) or shift OR-ed in; d, n, m
// are Vd, Vn, Vm. TestARM64Encodings runs every one of them (neonProbe
// below) against a Go model of the instruction.

// SDOT Vd.4S, Vn.16B, Vm.16B: 0 1 0 01110 10 0 Rm 100101 Rn Rd (FEAT_DotProd)
#define SDOT(d, n, m) WORD $(0x4E809400 | ((m)<<16) | ((n)<<5) | (d))
// SMULL Vd.8H, Vn.8B, Vm.8B: 0 0 0 01110 00 1 Rm 110000 Rn Rd
#define SMULL(d, n, m) WORD $(0x0E20C000 | ((m)<<16) | ((n)<<5) | (d))
// SMULL2 Vd.8H, Vn.16B, Vm.16B: 0 1 0 01110 00 1 Rm 110000 Rn Rd
#define SMULL2(d, n, m) WORD $(0x4E20C000 | ((m)<<16) | ((n)<<5) | (d))
// SMLAL Vd.8H, Vn.8B, Vm.8B: 0 0 0 01110 00 1 Rm 100000 Rn Rd
#define SMLAL(d, n, m) WORD $(0x0E208000 | ((m)<<16) | ((n)<<5) | (d))
// SMLAL2 Vd.8H, Vn.16B, Vm.16B: 0 1 0 01110 00 1 Rm 100000 Rn Rd
#define SMLAL2(d, n, m) WORD $(0x4E208000 | ((m)<<16) | ((n)<<5) | (d))
// SADALP Vd.4S, Vn.8H: 0 1 0 01110 01 10000 0 0110 10 Rn Rd
#define SADALP(d, n) WORD $(0x4E606800 | ((n)<<5) | (d))
// SSRA Vd.4S, Vn.4S, #sh: 0 1 0 011110 immh:immb=64-sh 00010 1 Rn Rd
#define SSRA(d, n, sh) WORD $(0x4F001400 | ((64-(sh))<<16) | ((n)<<5) | (d))
// SCVTF Vd.4S, Vn.4S: 0 1 0 01110 0 0 10000 11101 10 Rn Rd
#define SCVTF(d, n) WORD $(0x4E21D800 | ((n)<<5) | (d))
// FMUL Vd.4S, Vn.4S, Vm.4S: 0 1 1 01110 0 0 1 Rm 11011 1 Rn Rd
#define FMUL(d, n, m) WORD $(0x6E20DC00 | ((m)<<16) | ((n)<<5) | (d))
// FADD Vd.4S, Vn.4S, Vm.4S: 0 1 0 01110 0 0 1 Rm 11010 1 Rn Rd
#define FADD(d, n, m) WORD $(0x4E20D400 | ((m)<<16) | ((n)<<5) | (d))
// FADDP Vd.4S, Vn.4S, Vm.4S: 0 1 1 01110 0 0 1 Rm 11010 1 Rn Rd
#define FADDP(d, n, m) WORD $(0x6E20D400 | ((m)<<16) | ((n)<<5) | (d))
// FCVTL Vd.4S, Vn.4H: 0 0 0 01110 0 0 10000 10111 10 Rn Rd
#define FCVTL(d, n) WORD $(0x0E217800 | ((n)<<5) | (d))
// FCVTL2 Vd.4S, Vn.8H: 0 1 0 01110 0 0 10000 10111 10 Rn Rd
#define FCVTL2(d, n) WORD $(0x4E217800 | ((n)<<5) | (d))
// FCVTAS Vd.4S, Vn.4S: 0 1 0 01110 0 0 10000 11100 10 Rn Rd
#define FCVTAS(d, n) WORD $(0x4E21C800 | ((n)<<5) | (d))
// FABS Vd.4S, Vn.4S: 0 1 0 01110 1 0 10000 01111 10 Rn Rd
#define FABS(d, n) WORD $(0x4EA0F800 | ((n)<<5) | (d))
// FMAX Vd.4S, Vn.4S, Vm.4S: 0 1 0 01110 0 0 1 Rm 11110 1 Rn Rd
#define FMAX(d, n, m) WORD $(0x4E20F400 | ((m)<<16) | ((n)<<5) | (d))
// FMAXV Sd, Vn.4S: 0 1 1 01110 0 0 11000 01111 10 Rn Rd
#define FMAXV(d, n) WORD $(0x6E30F800 | ((n)<<5) | (d))
// SMAX Vd.4S, Vn.4S, Vm.4S: 0 1 0 01110 10 1 Rm 0110 0 1 Rn Rd
#define SMAX(d, n, m) WORD $(0x4EA06400 | ((m)<<16) | ((n)<<5) | (d))
// SMIN Vd.4S, Vn.4S, Vm.4S: 0 1 0 01110 10 1 Rm 0110 1 1 Rn Rd
#define SMIN(d, n, m) WORD $(0x4EA06C00 | ((m)<<16) | ((n)<<5) | (d))
// FMIN Vd.4S, Vn.4S, Vm.4S: 0 1 0 01110 1 0 1 Rm 11110 1 Rn Rd
#define FMIN(d, n, m) WORD $(0x4EA0F400 | ((m)<<16) | ((n)<<5) | (d))
// FCVTNS Vd.4S, Vn.4S: 0 1 0 01110 0 0 10000 11010 10 Rn Rd
#define FCVTNS(d, n) WORD $(0x4E21A800 | ((n)<<5) | (d))
// FCVTL Vd.2D, Vn.2S: 0 0 0 01110 0 1 10000 10111 10 Rn Rd
#define FCVTLD(d, n) WORD $(0x0E617800 | ((n)<<5) | (d))
// FCVTL2 Vd.2D, Vn.4S: 0 1 0 01110 0 1 10000 10111 10 Rn Rd
#define FCVTL2D(d, n) WORD $(0x4E617800 | ((n)<<5) | (d))

// ---------------------------------------------------------------------
// I2 rows, SDOT. A 64-byte block of one row holds, in byte 32j+16h+i at
// bits 2n, the code (w+1 ∈ 0..2) of weight 128j+32n+16h+i. So the 16-byte
// vector W(j,h), masked with 0x03<<2n, lines up lane for lane with the 16
// contiguous activations at 128j+32n+16h. The masks leave the code scaled
// by 4^n: n=0 and n=3 (shifted down by 6, no mask needed) feed accumulator
// A1, n=1 (×4) A4 and n=2 (×16) A16, and the row sum is A1 + A4/4 + A16/16
// (exact: A4 and A16 are exact multiples; the Go side bounds nb so they
// cannot wrap). Four masks+shift and four SDOTs per 16 weight bytes.
//
// Registers: V0-V11 accumulators (row r: A1 V(3r), A4 V(3r+1), A16
// V(3r+2)); V12-V19 the 128 activations of half j (V12+2n+h = activations
// 128j+32n+16h..+15); V20,V21 / V26,V27 one row's W(j,0), W(j,1); V22-V25
// decode temps; V28-V30 the masks 0x03, 0x0C, 0x30; V31 xs broadcast.

// SDOTROW: one row, one half (32 weight bytes in WA, WB = 128 weights).
#define SDOTROW(WA, WB, wa, wb, a1, a4, a16) \
	VAND V28.B16, WA.B16, V22.B16; \
	VAND V28.B16, WB.B16, V23.B16; \
	VAND V29.B16, WA.B16, V24.B16; \
	VAND V29.B16, WB.B16, V25.B16; \
	SDOT(a1, 22, 12); \
	SDOT(a4, 24, 14); \
	VAND V30.B16, WA.B16, V22.B16; \
	VAND V30.B16, WB.B16, V24.B16; \
	SDOT(a1, 23, 13); \
	SDOT(a4, 25, 15); \
	VUSHR $6, WA.B16, WA.B16; \
	VUSHR $6, WB.B16, WB.B16; \
	SDOT(a16, 22, 16); \
	SDOT(a1, wa, 18); \
	SDOT(a16, 24, 17); \
	SDOT(a1, wb, 19)

// SDOTHALF4: half j of the current block for the four rows R9..R12, each
// row's loads issued one row ahead of its arithmetic.
#define SDOTHALF4 \
	VLD1.P 32(R9), [V20.B16, V21.B16]; \
	VLD1.P 32(R10), [V26.B16, V27.B16]; \
	SDOTROW(V20, V21, 20, 21, 0, 1, 2); \
	VLD1.P 32(R11), [V20.B16, V21.B16]; \
	SDOTROW(V26, V27, 26, 27, 3, 4, 5); \
	VLD1.P 32(R12), [V26.B16, V27.B16]; \
	SDOTROW(V20, V21, 20, 21, 6, 7, 8); \
	SDOTROW(V26, V27, 26, 27, 9, 10, 11)

#define LOADHALF(R) \
	VLD1.P 64(R), [V12.B16, V13.B16, V14.B16, V15.B16]; \
	VLD1.P 64(R), [V16.B16, V17.B16, V18.B16, V19.B16]

#define ZERO(V) VEOR V.B16, V.B16, V.B16

// func i2RowsSDOT(rows *byte, q *int8, nb, n int, total int32, xs float32, scale *float32, out unsafe.Pointer)
// For each of n consecutive rows of nb blocks: s = Σ code·q; with scale
// nil out is []int32 and gets s, else out is []float32 and gets
// float32(s−total)·scale[r]·xs (rounded after each step, as the Go
// expression is).
TEXT ·i2RowsSDOT(SB), NOSPLIT, $0-56
	MOVD rows+0(FP), R0
	MOVD q+8(FP), R1
	MOVD nb+16(FP), R2
	MOVD n+24(FP), R3
	MOVW total+32(FP), R4
	FMOVS xs+36(FP), F31
	MOVD scale+40(FP), R6
	MOVD out+48(FP), R7
	VDUP V31.S[0], V31.S4
	LSL $6, R2, R8 // row stride
	VMOVI $3, V28.B16
	VMOVI $12, V29.B16
	VMOVI $48, V30.B16
	CMP $4, R3
	BLT sdtail

sdgroup:
	MOVD R0, R9
	ADD R8, R9, R10
	ADD R8, R10, R11
	ADD R8, R11, R12
	ADD R8, R12, R15 // the next group's rows: prefetched one group ahead
	MOVD R1, R13
	MOVD R2, R14
	ZERO(V0); ZERO(V1); ZERO(V2); ZERO(V3); ZERO(V4); ZERO(V5)
	ZERO(V6); ZERO(V7); ZERO(V8); ZERO(V9); ZERO(V10); ZERO(V11)

sdblock:
	PRFM (R15), PLDL1KEEP
	PRFM 64(R15), PLDL1KEEP
	PRFM 128(R15), PLDL1KEEP
	PRFM 192(R15), PLDL1KEEP
	ADD $256, R15
	LOADHALF(R13)
	SDOTHALF4
	LOADHALF(R13)
	SDOTHALF4
	SUBS $1, R14
	BNE sdblock

	// [row0..row3] of each accumulator class, then A1 + A4>>2 + A16>>4.
	VADDP V3.S4, V0.S4, V20.S4
	VADDP V9.S4, V6.S4, V21.S4
	VADDP V21.S4, V20.S4, V20.S4
	VADDP V4.S4, V1.S4, V21.S4
	VADDP V10.S4, V7.S4, V22.S4
	VADDP V22.S4, V21.S4, V21.S4
	VADDP V5.S4, V2.S4, V22.S4
	VADDP V11.S4, V8.S4, V23.S4
	VADDP V23.S4, V22.S4, V22.S4
	SSRA(20, 21, 2)
	SSRA(20, 22, 4)
	CBZ R6, sdints
	VDUP R4, V21.S4
	VSUB V21.S4, V20.S4, V20.S4
	SCVTF(20, 20)
	VLD1.P 16(R6), [V21.S4]
	FMUL(20, 20, 21)
	FMUL(20, 20, 31)

sdints:
	VST1.P [V20.S4], 16(R7)
	MOVD R12, R0
	SUB $4, R3
	CMP $4, R3
	BGE sdgroup

sdtail:
	CBZ R3, sddone

sdrow:
	MOVD R0, R9
	MOVD R1, R13
	MOVD R2, R14
	ZERO(V0); ZERO(V1); ZERO(V2)

sdrowblock:
	LOADHALF(R13)
	VLD1.P 32(R9), [V20.B16, V21.B16]
	SDOTROW(V20, V21, 20, 21, 0, 1, 2)
	LOADHALF(R13)
	VLD1.P 32(R9), [V20.B16, V21.B16]
	SDOTROW(V20, V21, 20, 21, 0, 1, 2)
	SUBS $1, R14
	BNE sdrowblock

	VADDV V0.S4, V0
	VADDV V1.S4, V1
	VADDV V2.S4, V2
	VMOV V0.S[0], R16
	VMOV V1.S[0], R17
	VMOV V2.S[0], R19
	ADDW R17->2, R16, R16
	ADDW R19->4, R16, R16
	CBZ R6, sdrowint
	SUBW R4, R16, R16
	SCVTFWS R16, F20
	FMOVS.P 4(R6), F21
	FMULS F21, F20, F20
	FMULS F31, F20, F20
	FMOVS.P F20, 4(R7)
	B sdrownext

sdrowint:
	MOVW.P R16, 4(R7)

sdrownext:
	MOVD R9, R0
	SUBS $1, R3
	BNE sdrow

sddone:
	RET

// func i2Dot4SDOT(row *byte, q *int8, k, nb int, out *int32)
// One row against four activation rows k apart: out[t] = Σ code·q_t. The
// weights are decoded once per block (shifts, codes 0..2, V0-V15 with
// V(8j+2n+h) = codes of W(j,h) at bits 2n, the order in which the
// activations load) and serve four tokens: 64 SDOTs per 12 decode ops.
// Token t accumulates in V(16+2t) and V(17+2t) (alternate SDOTs, so no
// SDOT waits on the one before); activations load 64 bytes at a time into
// V24-V27 and V28-V31 by turns, each load four SDOTs ahead of its use.
#define DOT4A(e, o, c) \
	SDOT(e, c, 24); \
	SDOT(o, c+1, 25); \
	SDOT(e, c+2, 26); \
	SDOT(o, c+3, 27)

#define DOT4B(e, o, c) \
	SDOT(e, c, 28); \
	SDOT(o, c+1, 29); \
	SDOT(e, c+2, 30); \
	SDOT(o, c+3, 31)

#define LDA(R) VLD1.P 64(R), [V24.B16, V25.B16, V26.B16, V27.B16]
#define LDB(R) VLD1.P 64(R), [V28.B16, V29.B16, V30.B16, V31.B16]

// DECODE4: the four codes of W (bits 0,2,4,6) into C0, C1, C2, C3 (mask M).
#define DECODE4(W, M, C0, C1, C2, C3) \
	VAND M.B16, W.B16, C0.B16; \
	VUSHR $2, W.B16, C1.B16; \
	VUSHR $4, W.B16, C2.B16; \
	VUSHR $6, W.B16, C3.B16; \
	VAND M.B16, C1.B16, C1.B16; \
	VAND M.B16, C2.B16, C2.B16

TEXT ·i2Dot4SDOT(SB), NOSPLIT, $0-40
	MOVD row+0(FP), R0
	MOVD q+8(FP), R1
	MOVD k+16(FP), R5
	MOVD nb+24(FP), R6
	MOVD out+32(FP), R7
	ADD R5, R1, R2
	ADD R5, R2, R3
	ADD R5, R3, R4
	ZERO(V16); ZERO(V17); ZERO(V18); ZERO(V19)
	ZERO(V20); ZERO(V21); ZERO(V22); ZERO(V23)

s4block:
	VLD1.P 64(R0), [V24.B16, V25.B16, V26.B16, V27.B16]
	VMOVI $3, V28.B16
	PRFM 1024(R0), PLDL1KEEP
	DECODE4(V24, V28, V0, V2, V4, V6)
	DECODE4(V25, V28, V1, V3, V5, V7)
	DECODE4(V26, V28, V8, V10, V12, V14)
	DECODE4(V27, V28, V9, V11, V13, V15)
	LDA(R1)
	LDB(R2)
	DOT4A(16, 17, 0)
	LDA(R3)
	DOT4B(18, 19, 0)
	LDB(R4)
	DOT4A(20, 21, 0)
	LDA(R1)
	DOT4B(22, 23, 0)
	LDB(R2)
	DOT4A(16, 17, 4)
	LDA(R3)
	DOT4B(18, 19, 4)
	LDB(R4)
	DOT4A(20, 21, 4)
	LDA(R1)
	DOT4B(22, 23, 4)
	LDB(R2)
	DOT4A(16, 17, 8)
	LDA(R3)
	DOT4B(18, 19, 8)
	LDB(R4)
	DOT4A(20, 21, 8)
	LDA(R1)
	DOT4B(22, 23, 8)
	LDB(R2)
	DOT4A(16, 17, 12)
	LDA(R3)
	DOT4B(18, 19, 12)
	LDB(R4)
	DOT4A(20, 21, 12)
	DOT4B(22, 23, 12)
	SUBS $1, R6
	BNE s4block

	VADD V17.S4, V16.S4, V16.S4
	VADD V19.S4, V18.S4, V18.S4
	VADD V21.S4, V20.S4, V20.S4
	VADD V23.S4, V22.S4, V22.S4
	VADDP V18.S4, V16.S4, V16.S4
	VADDP V22.S4, V20.S4, V20.S4
	VADDP V20.S4, V16.S4, V16.S4
	VST1 [V16.S4], (R7)
	RET

// func tq2BlockSumsSDOT(row *byte, q *int8, nb int, out *int32)
// TQ2_0 (66-byte blocks: the I2 block, then its fp16 scale, skipped here):
// out[b] = Σ code·q over block b. Each lane of A4 (A16) is 4× (16×) an
// exact partial sum, so SSRA folds them lane by lane.
TEXT ·tq2BlockSumsSDOT(SB), NOSPLIT, $0-32
	MOVD row+0(FP), R9
	MOVD q+8(FP), R13
	MOVD nb+16(FP), R14
	MOVD out+24(FP), R7
	VMOVI $3, V28.B16
	VMOVI $12, V29.B16
	VMOVI $48, V30.B16
	CBZ R14, tqsdone

tqsblock:
	ZERO(V0); ZERO(V1); ZERO(V2)
	PRFM 512(R9), PLDL1KEEP
	LOADHALF(R13)
	VLD1.P 32(R9), [V20.B16, V21.B16]
	SDOTROW(V20, V21, 20, 21, 0, 1, 2)
	LOADHALF(R13)
	VLD1.P 32(R9), [V20.B16, V21.B16]
	SDOTROW(V20, V21, 20, 21, 0, 1, 2)
	ADD $2, R9
	SSRA(0, 1, 2)
	SSRA(0, 2, 4)
	VADDV V0.S4, V0
	VMOV V0.S[0], R16
	MOVW.P R16, 4(R7)
	SUBS $1, R14
	BNE tqsblock

tqsdone:
	RET

// func q8DotSDOT(w, x *int8, n int) int32   (n a multiple of 16)
TEXT ·q8DotSDOT(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	ZERO(V16); ZERO(V17); ZERO(V18); ZERO(V19)
	CMP $64, R2
	BLT q8s16

q8s64:
	VLD1.P 64(R0), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P 64(R1), [V4.B16, V5.B16, V6.B16, V7.B16]
	SDOT(16, 0, 4)
	SDOT(17, 1, 5)
	SDOT(18, 2, 6)
	SDOT(19, 3, 7)
	SUB $64, R2
	CMP $64, R2
	BGE q8s64

q8s16:
	CBZ R2, q8sdone
	VLD1.P 16(R0), [V0.B16]
	VLD1.P 16(R1), [V4.B16]
	SDOT(16, 0, 4)
	SUB $16, R2
	B q8s16

q8sdone:
	VADD V17.S4, V16.S4, V16.S4
	VADD V19.S4, V18.S4, V18.S4
	VADD V18.S4, V16.S4, V16.S4
	VADDV V16.S4, V16
	VMOV V16.S[0], R3
	MOVW R3, ret+24(FP)
	RET

// ---------------------------------------------------------------------
// The same kernels without SDOT (ARMv8.0, e.g. Cortex-A53): codes 0..2 by
// shift+mask, SMULL/SMLAL(2) into int16 lanes (16 products of |code·q| ≤
// 256 per lane per block: ≤ 4096, no overflow), SADALP into int32 once per
// block. Everything is exact modulo 2^32, as the Go int32 sums are.
//
// Registers (rows): row r: int32 acc V(3r), int16 lo V(3r+1), hi V(3r+2);
// V12-V19 activations of half j as above; V20,V21 / V26,V27 weights;
// V22-V25 codes; V28 the 0x03 mask; V31 xs.

// MLROW1: one 16-byte weight vector W against the activations ACT0..ACT3
// (its n = 0..3 partners).
#define MLROW1(W, lo, hi, a0, a1, a2, a3) \
	VAND V28.B16, W.B16, V22.B16; \
	VUSHR $2, W.B16, V23.B16; \
	VUSHR $4, W.B16, V24.B16; \
	VUSHR $6, W.B16, V25.B16; \
	SMLAL(lo, 22, a0); \
	SMLAL2(hi, 22, a0); \
	VAND V28.B16, V23.B16, V23.B16; \
	VAND V28.B16, V24.B16, V24.B16; \
	SMLAL(lo, 25, a3); \
	SMLAL2(hi, 25, a3); \
	SMLAL(lo, 23, a1); \
	SMLAL2(hi, 23, a1); \
	SMLAL(lo, 24, a2); \
	SMLAL2(hi, 24, a2)

#define MLROW(WA, WB, lo, hi) \
	MLROW1(WA, lo, hi, 12, 14, 16, 18); \
	MLROW1(WB, lo, hi, 13, 15, 17, 19)

#define MLHALF4 \
	VLD1.P 32(R9), [V20.B16, V21.B16]; \
	VLD1.P 32(R10), [V26.B16, V27.B16]; \
	MLROW(V20, V21, 1, 2); \
	VLD1.P 32(R11), [V20.B16, V21.B16]; \
	MLROW(V26, V27, 4, 5); \
	VLD1.P 32(R12), [V26.B16, V27.B16]; \
	MLROW(V20, V21, 7, 8); \
	MLROW(V26, V27, 10, 11)

// func i2RowsNEON(rows *byte, q *int8, nb, n int, total int32, xs float32, scale *float32, out unsafe.Pointer)
// As i2RowsSDOT.
TEXT ·i2RowsNEON(SB), NOSPLIT, $0-56
	MOVD rows+0(FP), R0
	MOVD q+8(FP), R1
	MOVD nb+16(FP), R2
	MOVD n+24(FP), R3
	MOVW total+32(FP), R4
	FMOVS xs+36(FP), F31
	MOVD scale+40(FP), R6
	MOVD out+48(FP), R7
	VDUP V31.S[0], V31.S4
	LSL $6, R2, R8
	VMOVI $3, V28.B16
	CMP $4, R3
	BLT mltail

mlgroup:
	MOVD R0, R9
	ADD R8, R9, R10
	ADD R8, R10, R11
	ADD R8, R11, R12
	ADD R8, R12, R15
	MOVD R1, R13
	MOVD R2, R14
	ZERO(V0); ZERO(V3); ZERO(V6); ZERO(V9)

mlblock:
	PRFM (R15), PLDL1KEEP
	PRFM 64(R15), PLDL1KEEP
	PRFM 128(R15), PLDL1KEEP
	PRFM 192(R15), PLDL1KEEP
	ADD $256, R15
	ZERO(V1); ZERO(V2); ZERO(V4); ZERO(V5)
	ZERO(V7); ZERO(V8); ZERO(V10); ZERO(V11)
	LOADHALF(R13)
	MLHALF4
	LOADHALF(R13)
	MLHALF4
	SADALP(0, 1)
	SADALP(0, 2)
	SADALP(3, 4)
	SADALP(3, 5)
	SADALP(6, 7)
	SADALP(6, 8)
	SADALP(9, 10)
	SADALP(9, 11)
	SUBS $1, R14
	BNE mlblock

	VADDP V3.S4, V0.S4, V20.S4
	VADDP V9.S4, V6.S4, V21.S4
	VADDP V21.S4, V20.S4, V20.S4
	CBZ R6, mlints
	VDUP R4, V21.S4
	VSUB V21.S4, V20.S4, V20.S4
	SCVTF(20, 20)
	VLD1.P 16(R6), [V21.S4]
	FMUL(20, 20, 21)
	FMUL(20, 20, 31)

mlints:
	VST1.P [V20.S4], 16(R7)
	MOVD R12, R0
	SUB $4, R3
	CMP $4, R3
	BGE mlgroup

mltail:
	CBZ R3, mldone

mlrow:
	MOVD R0, R9
	MOVD R1, R13
	MOVD R2, R14
	ZERO(V0)

mlrowblock:
	ZERO(V1); ZERO(V2)
	LOADHALF(R13)
	VLD1.P 32(R9), [V20.B16, V21.B16]
	MLROW(V20, V21, 1, 2)
	LOADHALF(R13)
	VLD1.P 32(R9), [V20.B16, V21.B16]
	MLROW(V20, V21, 1, 2)
	SADALP(0, 1)
	SADALP(0, 2)
	SUBS $1, R14
	BNE mlrowblock

	VADDV V0.S4, V0
	VMOV V0.S[0], R16
	CBZ R6, mlrowint
	SUBW R4, R16, R16
	SCVTFWS R16, F20
	FMOVS.P 4(R6), F21
	FMULS F21, F20, F20
	FMULS F31, F20, F20
	FMOVS.P F20, 4(R7)
	B mlrownext

mlrowint:
	MOVW.P R16, 4(R7)

mlrownext:
	MOVD R9, R0
	SUBS $1, R3
	BNE mlrow

mldone:
	RET

// func i2Dot4NEON(row *byte, q *int8, k, nb int, out *int32)
// As i2Dot4SDOT, half a block at a time: V0-V7 the codes of half j
// (V(2n+h)), token t: int32 acc V(8+3t), int16 lo V(9+3t), hi V(10+3t);
// V20-V27 activations; V28, V29 weights; V31 the mask.
#define ML4TOK(R, lo, hi) \
	VLD1.P 64(R), [V20.B16, V21.B16, V22.B16, V23.B16]; \
	VLD1.P 64(R), [V24.B16, V25.B16, V26.B16, V27.B16]; \
	SMLAL(lo, 0, 20); \
	SMLAL2(hi, 0, 20); \
	SMLAL(lo, 1, 21); \
	SMLAL2(hi, 1, 21); \
	SMLAL(lo, 2, 22); \
	SMLAL2(hi, 2, 22); \
	SMLAL(lo, 3, 23); \
	SMLAL2(hi, 3, 23); \
	SMLAL(lo, 4, 24); \
	SMLAL2(hi, 4, 24); \
	SMLAL(lo, 5, 25); \
	SMLAL2(hi, 5, 25); \
	SMLAL(lo, 6, 26); \
	SMLAL2(hi, 6, 26); \
	SMLAL(lo, 7, 27); \
	SMLAL2(hi, 7, 27)

#define ML4HALF \
	VLD1.P 32(R0), [V28.B16, V29.B16]; \
	DECODE4(V28, V31, V0, V2, V4, V6); \
	DECODE4(V29, V31, V1, V3, V5, V7); \
	ML4TOK(R1, 9, 10); \
	ML4TOK(R2, 12, 13); \
	ML4TOK(R3, 15, 16); \
	ML4TOK(R4, 18, 19)

TEXT ·i2Dot4NEON(SB), NOSPLIT, $0-40
	MOVD row+0(FP), R0
	MOVD q+8(FP), R1
	MOVD k+16(FP), R5
	MOVD nb+24(FP), R6
	MOVD out+32(FP), R7
	ADD R5, R1, R2
	ADD R5, R2, R3
	ADD R5, R3, R4
	VMOVI $3, V31.B16
	ZERO(V8); ZERO(V11); ZERO(V14); ZERO(V17)

n4block:
	PRFM 1024(R0), PLDL1KEEP
	ZERO(V9); ZERO(V10); ZERO(V12); ZERO(V13)
	ZERO(V15); ZERO(V16); ZERO(V18); ZERO(V19)
	ML4HALF
	ML4HALF
	SADALP(8, 9)
	SADALP(8, 10)
	SADALP(11, 12)
	SADALP(11, 13)
	SADALP(14, 15)
	SADALP(14, 16)
	SADALP(17, 18)
	SADALP(17, 19)
	SUBS $1, R6
	BNE n4block

	VADDP V11.S4, V8.S4, V8.S4
	VADDP V17.S4, V14.S4, V14.S4
	VADDP V14.S4, V8.S4, V8.S4
	VST1 [V8.S4], (R7)
	RET

// func tq2BlockSumsNEON(row *byte, q *int8, nb int, out *int32)
// As tq2BlockSumsSDOT.
TEXT ·tq2BlockSumsNEON(SB), NOSPLIT, $0-32
	MOVD row+0(FP), R9
	MOVD q+8(FP), R13
	MOVD nb+16(FP), R14
	MOVD out+24(FP), R7
	VMOVI $3, V28.B16
	CBZ R14, tqndone

tqnblock:
	ZERO(V0); ZERO(V1); ZERO(V2)
	PRFM 512(R9), PLDL1KEEP
	LOADHALF(R13)
	VLD1.P 32(R9), [V20.B16, V21.B16]
	MLROW(V20, V21, 1, 2)
	LOADHALF(R13)
	VLD1.P 32(R9), [V20.B16, V21.B16]
	MLROW(V20, V21, 1, 2)
	ADD $2, R9
	SADALP(0, 1)
	SADALP(0, 2)
	VADDV V0.S4, V0
	VMOV V0.S[0], R16
	MOVW.P R16, 4(R7)
	SUBS $1, R14
	BNE tqnblock

tqndone:
	RET

// func q8DotNEON(w, x *int8, n int) int32   (n a multiple of 16)
// int8·int8 products reach 2^14, so each int16 product vector is widened
// (SADALP) before the next is added.
TEXT ·q8DotNEON(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	ZERO(V16); ZERO(V17)
	CBZ R2, q8ndone

q8nloop:
	VLD1.P 16(R0), [V0.B16]
	VLD1.P 16(R1), [V1.B16]
	SMULL(2, 0, 1)
	SMULL2(3, 0, 1)
	SADALP(16, 2)
	SADALP(17, 3)
	SUBS $16, R2
	BNE q8nloop

q8ndone:
	VADD V17.S4, V16.S4, V16.S4
	VADDV V16.S4, V16
	VMOV V16.S[0], R3
	MOVW R3, ret+24(FP)
	RET

// ---------------------------------------------------------------------
// Float kernels (plain ARMv8.0 ASIMD).

// func dotF32NEON(a, b *float32, n int) float32   (n a multiple of 16)
TEXT ·dotF32NEON(SB), NOSPLIT, $0-28
	MOVD a+0(FP), R0
	MOVD b+8(FP), R1
	MOVD n+16(FP), R2
	ZERO(V16); ZERO(V17); ZERO(V18); ZERO(V19)

df32loop:
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4]
	VFMLA V4.S4, V0.S4, V16.S4
	VFMLA V5.S4, V1.S4, V17.S4
	VFMLA V6.S4, V2.S4, V18.S4
	VFMLA V7.S4, V3.S4, V19.S4
	SUBS $16, R2
	BNE df32loop

	FADD(16, 16, 17)
	FADD(18, 18, 19)
	FADD(16, 16, 18)
	FADDP(16, 16, 16)
	FADDP(16, 16, 16)
	FMOVS F16, ret+24(FP)
	RET

// func axpyF32NEON(a float32, x, y *float32, n int)   (n a multiple of 16)
TEXT ·axpyF32NEON(SB), NOSPLIT, $0-32
	FMOVS a+0(FP), F31
	MOVD x+8(FP), R0
	MOVD y+16(FP), R1
	MOVD n+24(FP), R2
	VDUP V31.S[0], V31.S4

axloop:
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1 (R1), [V4.S4, V5.S4, V6.S4, V7.S4]
	VFMLA V31.S4, V0.S4, V4.S4
	VFMLA V31.S4, V1.S4, V5.S4
	VFMLA V31.S4, V2.S4, V6.S4
	VFMLA V31.S4, V3.S4, V7.S4
	VST1.P [V4.S4, V5.S4, V6.S4, V7.S4], 64(R1)
	SUBS $16, R2
	BNE axloop
	RET

// func dotF16NEON(w *byte, x *float32, n int) float32   (n halves, a multiple of 16)
TEXT ·dotF16NEON(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	ZERO(V16); ZERO(V17); ZERO(V18); ZERO(V19)

df16loop:
	VLD1.P 32(R0), [V0.H8, V1.H8]
	VLD1.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4]
	FCVTL(2, 0)
	FCVTL2(3, 0)
	FCVTL(8, 1)
	FCVTL2(9, 1)
	VFMLA V4.S4, V2.S4, V16.S4
	VFMLA V5.S4, V3.S4, V17.S4
	VFMLA V6.S4, V8.S4, V18.S4
	VFMLA V7.S4, V9.S4, V19.S4
	SUBS $16, R2
	BNE df16loop

	FADD(16, 16, 17)
	FADD(18, 18, 19)
	FADD(16, 16, 18)
	FADDP(16, 16, 16)
	FADDP(16, 16, 16)
	FMOVS F16, ret+24(FP)
	RET

// func readSumNEON(p *byte, n int) uint64   (n a multiple of 128)
// The XOR of every 8-byte word (as readSumAVX2).
TEXT ·readSumNEON(SB), NOSPLIT, $0-24
	MOVD p+0(FP), R0
	MOVD n+8(FP), R1
	ZERO(V16); ZERO(V17); ZERO(V18); ZERO(V19)
	LSR $7, R1
	CBZ R1, rsdone

rsloop:
	VLD1.P 64(R0), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P 64(R0), [V4.B16, V5.B16, V6.B16, V7.B16]
	VEOR V0.B16, V16.B16, V16.B16
	VEOR V1.B16, V17.B16, V17.B16
	VEOR V2.B16, V18.B16, V18.B16
	VEOR V3.B16, V19.B16, V19.B16
	VEOR V4.B16, V16.B16, V16.B16
	VEOR V5.B16, V17.B16, V17.B16
	VEOR V6.B16, V18.B16, V18.B16
	VEOR V7.B16, V19.B16, V19.B16
	SUBS $1, R1
	BNE rsloop

rsdone:
	VEOR V17.B16, V16.B16, V16.B16
	VEOR V19.B16, V18.B16, V18.B16
	VEOR V18.B16, V16.B16, V16.B16
	VMOV V16.D[0], R2
	VMOV V16.D[1], R3
	EOR R3, R2, R2
	MOVD R2, ret+16(FP)
	RET

// func absMaxNEON(x *float32, n int) float32   (n a multiple of 16, > 0)
// FMAX returns NaN when either input is, as Go's max does.
TEXT ·absMaxNEON(SB), NOSPLIT, $0-20
	MOVD x+0(FP), R0
	MOVD n+8(FP), R1
	ZERO(V16); ZERO(V17); ZERO(V18); ZERO(V19)

amloop:
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	FABS(0, 0)
	FABS(1, 1)
	FABS(2, 2)
	FABS(3, 3)
	FMAX(16, 16, 0)
	FMAX(17, 17, 1)
	FMAX(18, 18, 2)
	FMAX(19, 19, 3)
	SUBS $16, R1
	BNE amloop

	FMAX(16, 16, 17)
	FMAX(18, 18, 19)
	FMAX(16, 16, 18)
	FMAXV(16, 16)
	FMOVS F16, ret+16(FP)
	RET

// func quantBlocksNEON(x *float32, nb int, inv float32, q *int8, bsum *int32)
// q = clamp(round(x·inv), ±127) over nb 256-blocks and each block's sum.
// FMUL rounds x·inv as the Go float32 product does; FCVTAS rounds to
// nearest with ties away from zero, as math.Round, and saturates as Go's
// float64→int32 conversion does on arm64 (NaN → 0).
TEXT ·quantBlocksNEON(SB), NOSPLIT, $0-40
	MOVD x+0(FP), R0
	MOVD nb+8(FP), R1
	FMOVS inv+16(FP), F31
	MOVD q+24(FP), R2
	MOVD bsum+32(FP), R3
	VDUP V31.S[0], V31.S4
	MOVW $127, R4
	VDUP R4, V30.S4
	MOVW $-127, R4
	VDUP R4, V29.S4
	CBZ R1, qbdone

qbblock:
	ZERO(V28)
	MOVD $16, R5

qbloop:
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	FMUL(0, 0, 31)
	FMUL(1, 1, 31)
	FMUL(2, 2, 31)
	FMUL(3, 3, 31)
	FCVTAS(0, 0)
	FCVTAS(1, 1)
	FCVTAS(2, 2)
	FCVTAS(3, 3)
	SMIN(0, 0, 30)
	SMIN(1, 1, 30)
	SMIN(2, 2, 30)
	SMIN(3, 3, 30)
	SMAX(0, 0, 29)
	SMAX(1, 1, 29)
	SMAX(2, 2, 29)
	SMAX(3, 3, 29)
	VADD V0.S4, V28.S4, V28.S4
	VADD V1.S4, V28.S4, V28.S4
	VADD V2.S4, V28.S4, V28.S4
	VADD V3.S4, V28.S4, V28.S4
	VUZP1 V1.H8, V0.H8, V4.H8
	VUZP1 V3.H8, V2.H8, V5.H8
	VUZP1 V5.B16, V4.B16, V6.B16
	VST1.P [V6.B16], 16(R2)
	SUBS $1, R5
	BNE qbloop

	VADDV V28.S4, V28
	VMOV V28.S[0], R6
	MOVW.P R6, 4(R3)
	SUBS $1, R1
	BNE qbblock

qbdone:
	RET

// ---------------------------------------------------------------------
// func neonProbe(op int, d, n, m *[16]byte)
// Runs one WORD-encoded instruction with Vd = V17 (in/out), Vn = V9,
// Vm = V26 (distinct, asymmetric register numbers so that a field put in
// the wrong place shows); the test models each instruction in Go.
TEXT ·neonProbe(SB), NOSPLIT, $0-32
	MOVD op+0(FP), R0
	MOVD d+8(FP), R1
	MOVD n+16(FP), R2
	MOVD m+24(FP), R3
	VLD1 (R1), [V17.B16]
	VLD1 (R2), [V9.B16]
	VLD1 (R3), [V26.B16]
	CMP $0, R0
	BEQ p0
	CMP $1, R0
	BEQ p1
	CMP $2, R0
	BEQ p2
	CMP $3, R0
	BEQ p3
	CMP $4, R0
	BEQ p4
	CMP $5, R0
	BEQ p5
	CMP $6, R0
	BEQ p6
	CMP $7, R0
	BEQ p7
	CMP $8, R0
	BEQ p8
	CMP $9, R0
	BEQ p9
	CMP $10, R0
	BEQ p10
	CMP $11, R0
	BEQ p11
	CMP $12, R0
	BEQ p12
	CMP $13, R0
	BEQ p13
	CMP $14, R0
	BEQ p14
	CMP $15, R0
	BEQ p15
	CMP $16, R0
	BEQ p16
	CMP $17, R0
	BEQ p17
	CMP $18, R0
	BEQ p18
	CMP $19, R0
	BEQ p19
	CMP $20, R0
	BEQ p20
	CMP $21, R0
	BEQ p21
	CMP $22, R0
	BEQ p22
	CMP $23, R0
	BEQ p23
	B pdone
p0:
	SDOT(17, 9, 26)
	B pdone
p1:
	SMULL(17, 9, 26)
	B pdone
p2:
	SMULL2(17, 9, 26)
	B pdone
p3:
	SMLAL(17, 9, 26)
	B pdone
p4:
	SMLAL2(17, 9, 26)
	B pdone
p5:
	SADALP(17, 9)
	B pdone
p6:
	SSRA(17, 9, 2)
	B pdone
p7:
	SSRA(17, 9, 4)
	B pdone
p8:
	SCVTF(17, 9)
	B pdone
p9:
	FMUL(17, 9, 26)
	B pdone
p10:
	FADD(17, 9, 26)
	B pdone
p11:
	FADDP(17, 9, 26)
	B pdone
p12:
	FCVTL(17, 9)
	B pdone
p13:
	FCVTL2(17, 9)
	B pdone
p14:
	FCVTAS(17, 9)
	B pdone
p15:
	FABS(17, 9)
	B pdone
p16:
	FMAX(17, 9, 26)
	B pdone
p17:
	FMAXV(17, 9)
	B pdone
p18:
	SMAX(17, 9, 26)
	B pdone
p19:
	SMIN(17, 9, 26)
	B pdone
p20:
	FMIN(17, 9, 26)
	B pdone
p21:
	FCVTNS(17, 9)
	B pdone
p22:
	FCVTLD(17, 9)
	B pdone
p23:
	FCVTL2D(17, 9)
pdone:
	VST1 [V17.B16], (R1)
	RET

// ---------------------------------------------------------------------
// Attention for headDim 128 (plain ASIMD).

// func attnScores128NEON(q, k *float32, stride, n int, scale float32, out *float32)
// out[p] = (q · k[p·stride : p·stride+128]) · scale for p < n (n > 0).
// q[0:64] stays in V16-V31; q[64:128] is reloaded (L1) per position.
TEXT ·attnScores128NEON(SB), NOSPLIT, $0-48
	MOVD q+0(FP), R0
	MOVD k+8(FP), R1
	MOVD stride+16(FP), R2
	MOVD n+24(FP), R3
	FMOVS scale+32(FP), F15
	MOVD out+40(FP), R4
	LSL $2, R2
	MOVD R0, R6
	VLD1.P 64(R6), [V16.S4, V17.S4, V18.S4, V19.S4]
	VLD1.P 64(R6), [V20.S4, V21.S4, V22.S4, V23.S4]
	VLD1.P 64(R6), [V24.S4, V25.S4, V26.S4, V27.S4]
	VLD1.P 64(R6), [V28.S4, V29.S4, V30.S4, V31.S4]

asloop:
	MOVD R1, R5
	MOVD R6, R7
	VLD1.P 64(R5), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R5), [V4.S4, V5.S4, V6.S4, V7.S4]
	ZERO(V8); ZERO(V9)
	VFMLA V16.S4, V0.S4, V8.S4
	VFMLA V17.S4, V1.S4, V9.S4
	VFMLA V18.S4, V2.S4, V8.S4
	VFMLA V19.S4, V3.S4, V9.S4
	VLD1.P 64(R5), [V0.S4, V1.S4, V2.S4, V3.S4]
	VFMLA V20.S4, V4.S4, V8.S4
	VFMLA V21.S4, V5.S4, V9.S4
	VFMLA V22.S4, V6.S4, V8.S4
	VFMLA V23.S4, V7.S4, V9.S4
	VLD1.P 64(R5), [V4.S4, V5.S4, V6.S4, V7.S4]
	VFMLA V24.S4, V0.S4, V8.S4
	VFMLA V25.S4, V1.S4, V9.S4
	VFMLA V26.S4, V2.S4, V8.S4
	VFMLA V27.S4, V3.S4, V9.S4
	VLD1.P 64(R5), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R7), [V10.S4, V11.S4, V12.S4, V13.S4]
	VFMLA V28.S4, V4.S4, V8.S4
	VFMLA V29.S4, V5.S4, V9.S4
	VFMLA V30.S4, V6.S4, V8.S4
	VFMLA V31.S4, V7.S4, V9.S4
	VLD1.P 64(R5), [V4.S4, V5.S4, V6.S4, V7.S4]
	VFMLA V10.S4, V0.S4, V8.S4
	VFMLA V11.S4, V1.S4, V9.S4
	VFMLA V12.S4, V2.S4, V8.S4
	VFMLA V13.S4, V3.S4, V9.S4
	VLD1.P 64(R7), [V10.S4, V11.S4, V12.S4, V13.S4]
	VLD1.P 64(R5), [V0.S4, V1.S4, V2.S4, V3.S4]
	VFMLA V10.S4, V4.S4, V8.S4
	VFMLA V11.S4, V5.S4, V9.S4
	VFMLA V12.S4, V6.S4, V8.S4
	VFMLA V13.S4, V7.S4, V9.S4
	VLD1.P 64(R7), [V10.S4, V11.S4, V12.S4, V13.S4]
	VLD1.P 64(R5), [V4.S4, V5.S4, V6.S4, V7.S4]
	VFMLA V10.S4, V0.S4, V8.S4
	VFMLA V11.S4, V1.S4, V9.S4
	VFMLA V12.S4, V2.S4, V8.S4
	VFMLA V13.S4, V3.S4, V9.S4
	VLD1.P 64(R7), [V10.S4, V11.S4, V12.S4, V13.S4]
	VFMLA V10.S4, V4.S4, V8.S4
	VFMLA V11.S4, V5.S4, V9.S4
	VFMLA V12.S4, V6.S4, V8.S4
	VFMLA V13.S4, V7.S4, V9.S4
	FADD(8, 8, 9)
	FADDP(8, 8, 8)
	FADDP(8, 8, 8)
	FMULS F15, F8, F8
	FMOVS.P F8, 4(R4)
	ADD R2, R1
	SUBS $1, R3
	BNE asloop
	RET

// func attnMix128NEON(w, v *float32, stride, n int, o *float32)
// o[0:128] = Σ_p w[p] · v[p·stride : p·stride+128] (n > 0), in two
// passes of 64 outputs held in V16-V31.
TEXT ·attnMix128NEON(SB), NOSPLIT, $0-40
	MOVD w+0(FP), R0
	MOVD v+8(FP), R1
	MOVD stride+16(FP), R2
	MOVD n+24(FP), R3
	MOVD o+32(FP), R4
	LSL $2, R2
	MOVD $2, R8

ampass:
	ZERO(V16); ZERO(V17); ZERO(V18); ZERO(V19)
	ZERO(V20); ZERO(V21); ZERO(V22); ZERO(V23)
	ZERO(V24); ZERO(V25); ZERO(V26); ZERO(V27)
	ZERO(V28); ZERO(V29); ZERO(V30); ZERO(V31)
	MOVD R0, R6
	MOVD R1, R7
	MOVD R3, R9

amloop:
	MOVD R7, R5
	VLD1R.P 4(R6), [V8.S4]
	VLD1.P 64(R5), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R5), [V4.S4, V5.S4, V6.S4, V7.S4]
	VFMLA V8.S4, V0.S4, V16.S4
	VFMLA V8.S4, V1.S4, V17.S4
	VFMLA V8.S4, V2.S4, V18.S4
	VFMLA V8.S4, V3.S4, V19.S4
	VLD1.P 64(R5), [V0.S4, V1.S4, V2.S4, V3.S4]
	VFMLA V8.S4, V4.S4, V20.S4
	VFMLA V8.S4, V5.S4, V21.S4
	VFMLA V8.S4, V6.S4, V22.S4
	VFMLA V8.S4, V7.S4, V23.S4
	VLD1.P 64(R5), [V4.S4, V5.S4, V6.S4, V7.S4]
	VFMLA V8.S4, V0.S4, V24.S4
	VFMLA V8.S4, V1.S4, V25.S4
	VFMLA V8.S4, V2.S4, V26.S4
	VFMLA V8.S4, V3.S4, V27.S4
	VFMLA V8.S4, V4.S4, V28.S4
	VFMLA V8.S4, V5.S4, V29.S4
	VFMLA V8.S4, V6.S4, V30.S4
	VFMLA V8.S4, V7.S4, V31.S4
	ADD R2, R7
	SUBS $1, R9
	BNE amloop

	VST1.P [V16.S4, V17.S4, V18.S4, V19.S4], 64(R4)
	VST1.P [V20.S4, V21.S4, V22.S4, V23.S4], 64(R4)
	VST1.P [V24.S4, V25.S4, V26.S4, V27.S4], 64(R4)
	VST1.P [V28.S4, V29.S4, V30.S4, V31.S4], 64(R4)
	ADD $256, R1
	SUBS $1, R8
	BNE ampass
	RET

// ---------------------------------------------------------------------
// The int8 LM head at decode: four k-wide rows against one activation
// row per pass, so each 64 bytes of activations (L1-resident) serve 256
// bytes of weights. The weights stream from DRAM once per token; the four
// rows of a group are contiguous, so the next group (4k bytes ahead) is
// prefetched 256 bytes per 64-byte step, as i2RowsSDOT does.

// func q8Rows4SDOT(w, x *int8, stride, n, groups int, out *int32)
// For groups×4 rows stride bytes apart: out[r] = Σ_{i<n} w[r][i]·x[i]
// (n a positive multiple of 16). Row r accumulates in V(20+2r) and
// V(21+2r) by turns; exact modulo 2^32, as Go's int32 sum.
TEXT ·q8Rows4SDOT(SB), NOSPLIT, $0-48
	MOVD w+0(FP), R0
	MOVD x+8(FP), R1
	MOVD stride+16(FP), R2
	MOVD n+24(FP), R3
	MOVD groups+32(FP), R4
	MOVD out+40(FP), R5
	LSL $2, R2, R6
	CBZ R4, q8sgdone

q8sgroup:
	MOVD R0, R7
	ADD R2, R7, R8
	ADD R2, R8, R9
	ADD R2, R9, R10
	ADD R6, R0, R11
	MOVD R1, R12
	MOVD R3, R13
	ZERO(V20); ZERO(V21); ZERO(V22); ZERO(V23)
	ZERO(V24); ZERO(V25); ZERO(V26); ZERO(V27)
	CMP $64, R13
	BLT q8sg16

q8sg64:
	PRFM (R11), PLDL1KEEP
	PRFM 64(R11), PLDL1KEEP
	PRFM 128(R11), PLDL1KEEP
	PRFM 192(R11), PLDL1KEEP
	ADD $256, R11
	VLD1.P 64(R12), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P 64(R7), [V4.B16, V5.B16, V6.B16, V7.B16]
	VLD1.P 64(R8), [V8.B16, V9.B16, V10.B16, V11.B16]
	SDOT(20, 4, 0)
	SDOT(21, 5, 1)
	SDOT(20, 6, 2)
	SDOT(21, 7, 3)
	VLD1.P 64(R9), [V12.B16, V13.B16, V14.B16, V15.B16]
	SDOT(22, 8, 0)
	SDOT(23, 9, 1)
	SDOT(22, 10, 2)
	SDOT(23, 11, 3)
	VLD1.P 64(R10), [V16.B16, V17.B16, V18.B16, V19.B16]
	SDOT(24, 12, 0)
	SDOT(25, 13, 1)
	SDOT(24, 14, 2)
	SDOT(25, 15, 3)
	SDOT(26, 16, 0)
	SDOT(27, 17, 1)
	SDOT(26, 18, 2)
	SDOT(27, 19, 3)
	SUB $64, R13
	CMP $64, R13
	BGE q8sg64

q8sg16:
	CBZ R13, q8sgsum
	VLD1.P 16(R12), [V0.B16]
	VLD1.P 16(R7), [V4.B16]
	VLD1.P 16(R8), [V5.B16]
	VLD1.P 16(R9), [V6.B16]
	VLD1.P 16(R10), [V7.B16]
	SDOT(20, 4, 0)
	SDOT(22, 5, 0)
	SDOT(24, 6, 0)
	SDOT(26, 7, 0)
	SUB $16, R13
	B q8sg16

q8sgsum:
	VADD V21.S4, V20.S4, V20.S4
	VADD V23.S4, V22.S4, V22.S4
	VADD V25.S4, V24.S4, V24.S4
	VADD V27.S4, V26.S4, V26.S4
	VADDP V22.S4, V20.S4, V20.S4
	VADDP V26.S4, V24.S4, V24.S4
	VADDP V24.S4, V20.S4, V20.S4
	VST1.P [V20.S4], 16(R5)
	ADD R6, R0
	SUBS $1, R4
	BNE q8sgroup

q8sgdone:
	RET

// Q8ROWN: one row's 64 bytes (W0..W3) against the activations V0-V3:
// int8·int8 products (up to 2^14) in int16 lanes V12-V19, each widened
// into the row's int32 accumulators A, B (SADALP) before another is
// added, so −128·−128 pairs stay exact.
#define Q8ROWN(W0, W1, W2, W3, A, B) \
	SMULL(12, W0, 0); \
	SMULL2(13, W0, 0); \
	SMULL(14, W1, 1); \
	SMULL2(15, W1, 1); \
	SMULL(16, W2, 2); \
	SMULL2(17, W2, 2); \
	SMULL(18, W3, 3); \
	SMULL2(19, W3, 3); \
	SADALP(A, 12); \
	SADALP(B, 13); \
	SADALP(A, 14); \
	SADALP(B, 15); \
	SADALP(A, 16); \
	SADALP(B, 17); \
	SADALP(A, 18); \
	SADALP(B, 19)

// Q8ROWN16: one row's 16 bytes W against V0.
#define Q8ROWN16(W, A, B) \
	SMULL(12, W, 0); \
	SMULL2(13, W, 0); \
	SADALP(A, 12); \
	SADALP(B, 13)

// func q8Rows4NEON(w, x *int8, stride, n, groups int, out *int32)
// As q8Rows4SDOT, without SDOT (ARMv8.0).
TEXT ·q8Rows4NEON(SB), NOSPLIT, $0-48
	MOVD w+0(FP), R0
	MOVD x+8(FP), R1
	MOVD stride+16(FP), R2
	MOVD n+24(FP), R3
	MOVD groups+32(FP), R4
	MOVD out+40(FP), R5
	LSL $2, R2, R6
	CBZ R4, q8ngdone

q8ngroup:
	MOVD R0, R7
	ADD R2, R7, R8
	ADD R2, R8, R9
	ADD R2, R9, R10
	ADD R6, R0, R11
	MOVD R1, R12
	MOVD R3, R13
	ZERO(V20); ZERO(V21); ZERO(V22); ZERO(V23)
	ZERO(V24); ZERO(V25); ZERO(V26); ZERO(V27)
	CMP $64, R13
	BLT q8ng16

q8ng64:
	PRFM (R11), PLDL1KEEP
	PRFM 64(R11), PLDL1KEEP
	PRFM 128(R11), PLDL1KEEP
	PRFM 192(R11), PLDL1KEEP
	ADD $256, R11
	VLD1.P 64(R12), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P 64(R7), [V4.B16, V5.B16, V6.B16, V7.B16]
	VLD1.P 64(R8), [V8.B16, V9.B16, V10.B16, V11.B16]
	Q8ROWN(4, 5, 6, 7, 20, 21)
	VLD1.P 64(R9), [V4.B16, V5.B16, V6.B16, V7.B16]
	Q8ROWN(8, 9, 10, 11, 22, 23)
	VLD1.P 64(R10), [V8.B16, V9.B16, V10.B16, V11.B16]
	Q8ROWN(4, 5, 6, 7, 24, 25)
	Q8ROWN(8, 9, 10, 11, 26, 27)
	SUB $64, R13
	CMP $64, R13
	BGE q8ng64

q8ng16:
	CBZ R13, q8ngsum
	VLD1.P 16(R12), [V0.B16]
	VLD1.P 16(R7), [V4.B16]
	VLD1.P 16(R8), [V5.B16]
	VLD1.P 16(R9), [V6.B16]
	VLD1.P 16(R10), [V7.B16]
	Q8ROWN16(4, 20, 21)
	Q8ROWN16(5, 22, 23)
	Q8ROWN16(6, 24, 25)
	Q8ROWN16(7, 26, 27)
	SUB $16, R13
	B q8ng16

q8ngsum:
	VADD V21.S4, V20.S4, V20.S4
	VADD V23.S4, V22.S4, V22.S4
	VADD V25.S4, V24.S4, V24.S4
	VADD V27.S4, V26.S4, V26.S4
	VADDP V22.S4, V20.S4, V20.S4
	VADDP V26.S4, V24.S4, V24.S4
	VADDP V24.S4, V20.S4, V20.S4
	VST1.P [V20.S4], 16(R5)
	ADD R6, R0
	SUBS $1, R4
	BNE q8ngroup

q8ngdone:
	RET

// ---------------------------------------------------------------------
// Softmax and rmsnorm passes (plain ARMv8.0 ASIMD).

// func maxNEON(x *float32, n int) float32   (n a positive multiple of 16)
TEXT ·maxNEON(SB), NOSPLIT, $0-20
	MOVD x+0(FP), R0
	MOVD n+8(FP), R1
	MOVW $0xff800000, R2 // −Inf
	VDUP R2, V16.S4
	VDUP R2, V17.S4
	VDUP R2, V18.S4
	VDUP R2, V19.S4

mxloop:
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	FMAX(16, 16, 0)
	FMAX(17, 17, 1)
	FMAX(18, 18, 2)
	FMAX(19, 19, 3)
	SUBS $16, R1
	BNE mxloop

	FMAX(16, 16, 17)
	FMAX(18, 18, 19)
	FMAX(16, 16, 18)
	FMAXV(16, 16)
	FMOVS F16, ret+16(FP)
	RET

// func expSubSumNEON(x *float32, n int, mx float32) float32   (n a multiple of 16)
// x[i] = e^(x[i] − mx) in place, returning the sum: Cephes' expf, as
// expSubSumAVX512. d = x − mx is clamped to [−87.33654, 88]; n =
// round(d·log2e) (FCVTNS, ties to even) lies in [−126, 127], so 2^n is the
// normal float with exponent field n+127 ∈ [1, 254] and the final FMUL
// rounds results below 2^−126 to subnormals as a scaling would. r = d −
// n·C1 − n·C2 (fused); p = (((((c0·r + c1)·r + c2)·r + c3)·r + c4)·r +
// 0.5)·r² + r + 1; result p·2^n.
//
// Sixteen floats per step, x in V0-V3, each instruction repeated for the
// four vectors so that an in-order core (Cortex-A53/A55) has four
// independent chains to issue from. Temps per vector j: V(4+j) int n,
// then 2^n; V(8+j) float n, Horner terms, r²; V(12+j) Horner terms.
// Constants: V31 −mx, V30 −87.33654, V29 88, V28 log2e, V27 C1, V26 C2,
// V25..V20 the polynomial (c0..c4, 0.5), V19 1, V18 127; sums V16, V17.
TEXT ·expSubSumNEON(SB), NOSPLIT, $0-28
	MOVD x+0(FP), R0
	MOVD n+8(FP), R1
	FMOVS mx+16(FP), F31
	FNEGS F31, F31
	VDUP V31.S[0], V31.S4
	MOVW $0xc2aeac4f, R2 // −87.33654
	VDUP R2, V30.S4
	MOVW $0x42b00000, R2 // 88
	VDUP R2, V29.S4
	MOVW $0x3fb8aa3b, R2 // log2(e)
	VDUP R2, V28.S4
	MOVW $0x3f318000, R2 // ln 2, high part (0.693359375)
	VDUP R2, V27.S4
	MOVW $0xb95e8083, R2 // ln 2, low part (−2.12194440e-4)
	VDUP R2, V26.S4
	MOVW $0x39506967, R2 // 1.9875691500e-4
	VDUP R2, V25.S4
	MOVW $0x3ab743ce, R2 // 1.3981999507e-3
	VDUP R2, V24.S4
	MOVW $0x3c088908, R2 // 8.3334519073e-3
	VDUP R2, V23.S4
	MOVW $0x3d2aa9c1, R2 // 4.1665795894e-2
	VDUP R2, V22.S4
	MOVW $0x3e2aaaaa, R2 // 1.6666665459e-1
	VDUP R2, V21.S4
	MOVW $0x3f000000, R2 // 0.5
	VDUP R2, V20.S4
	MOVW $0x3f800000, R2 // 1
	VDUP R2, V19.S4
	MOVW $127, R2
	VDUP R2, V18.S4
	ZERO(V16); ZERO(V17)
	CBZ R1, exdone

exloop:
	VLD1 (R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	FADD(0, 0, 31)
	FADD(1, 1, 31)
	FADD(2, 2, 31)
	FADD(3, 3, 31)
	FMAX(0, 0, 30)
	FMAX(1, 1, 30)
	FMAX(2, 2, 30)
	FMAX(3, 3, 30)
	FMIN(0, 0, 29)
	FMIN(1, 1, 29)
	FMIN(2, 2, 29)
	FMIN(3, 3, 29)
	FMUL(8, 0, 28)
	FMUL(9, 1, 28)
	FMUL(10, 2, 28)
	FMUL(11, 3, 28)
	FCVTNS(4, 8)
	FCVTNS(5, 9)
	FCVTNS(6, 10)
	FCVTNS(7, 11)
	SCVTF(8, 4)
	SCVTF(9, 5)
	SCVTF(10, 6)
	SCVTF(11, 7)
	VFMLS V27.S4, V8.S4, V0.S4
	VFMLS V27.S4, V9.S4, V1.S4
	VFMLS V27.S4, V10.S4, V2.S4
	VFMLS V27.S4, V11.S4, V3.S4
	VFMLS V26.S4, V8.S4, V0.S4
	VFMLS V26.S4, V9.S4, V1.S4
	VFMLS V26.S4, V10.S4, V2.S4
	VFMLS V26.S4, V11.S4, V3.S4
	VORR V24.B16, V24.B16, V12.B16
	VORR V24.B16, V24.B16, V13.B16
	VORR V24.B16, V24.B16, V14.B16
	VORR V24.B16, V24.B16, V15.B16
	VFMLA V25.S4, V0.S4, V12.S4
	VFMLA V25.S4, V1.S4, V13.S4
	VFMLA V25.S4, V2.S4, V14.S4
	VFMLA V25.S4, V3.S4, V15.S4
	VORR V23.B16, V23.B16, V8.B16
	VORR V23.B16, V23.B16, V9.B16
	VORR V23.B16, V23.B16, V10.B16
	VORR V23.B16, V23.B16, V11.B16
	VFMLA V12.S4, V0.S4, V8.S4
	VFMLA V13.S4, V1.S4, V9.S4
	VFMLA V14.S4, V2.S4, V10.S4
	VFMLA V15.S4, V3.S4, V11.S4
	VORR V22.B16, V22.B16, V12.B16
	VORR V22.B16, V22.B16, V13.B16
	VORR V22.B16, V22.B16, V14.B16
	VORR V22.B16, V22.B16, V15.B16
	VFMLA V8.S4, V0.S4, V12.S4
	VFMLA V9.S4, V1.S4, V13.S4
	VFMLA V10.S4, V2.S4, V14.S4
	VFMLA V11.S4, V3.S4, V15.S4
	VORR V21.B16, V21.B16, V8.B16
	VORR V21.B16, V21.B16, V9.B16
	VORR V21.B16, V21.B16, V10.B16
	VORR V21.B16, V21.B16, V11.B16
	VFMLA V12.S4, V0.S4, V8.S4
	VFMLA V13.S4, V1.S4, V9.S4
	VFMLA V14.S4, V2.S4, V10.S4
	VFMLA V15.S4, V3.S4, V11.S4
	VORR V20.B16, V20.B16, V12.B16
	VORR V20.B16, V20.B16, V13.B16
	VORR V20.B16, V20.B16, V14.B16
	VORR V20.B16, V20.B16, V15.B16
	VFMLA V8.S4, V0.S4, V12.S4
	VFMLA V9.S4, V1.S4, V13.S4
	VFMLA V10.S4, V2.S4, V14.S4
	VFMLA V11.S4, V3.S4, V15.S4
	FMUL(8, 0, 0)
	FMUL(9, 1, 1)
	FMUL(10, 2, 2)
	FMUL(11, 3, 3)
	VFMLA V12.S4, V8.S4, V0.S4
	VFMLA V13.S4, V9.S4, V1.S4
	VFMLA V14.S4, V10.S4, V2.S4
	VFMLA V15.S4, V11.S4, V3.S4
	FADD(0, 0, 19)
	FADD(1, 1, 19)
	FADD(2, 2, 19)
	FADD(3, 3, 19)
	VADD V18.S4, V4.S4, V4.S4
	VADD V18.S4, V5.S4, V5.S4
	VADD V18.S4, V6.S4, V6.S4
	VADD V18.S4, V7.S4, V7.S4
	VSHL $23, V4.S4, V4.S4
	VSHL $23, V5.S4, V5.S4
	VSHL $23, V6.S4, V6.S4
	VSHL $23, V7.S4, V7.S4
	FMUL(0, 0, 4)
	FMUL(1, 1, 5)
	FMUL(2, 2, 6)
	FMUL(3, 3, 7)
	FADD(16, 16, 0)
	FADD(17, 17, 1)
	FADD(16, 16, 2)
	FADD(17, 17, 3)
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0)
	SUBS $16, R1
	BNE exloop

exdone:
	FADD(16, 16, 17)
	FADDP(16, 16, 16)
	FADDP(16, 16, 16)
	FMOVS F16, ret+24(FP)
	RET

// func sumSquaresNEON(x *float32, n int) float64   (n a multiple of 16)
// Each float32 widened (FCVTL, FCVTL2) and squared into float64 lanes.
TEXT ·sumSquaresNEON(SB), NOSPLIT, $0-24
	MOVD x+0(FP), R0
	MOVD n+8(FP), R1
	ZERO(V16); ZERO(V17); ZERO(V18); ZERO(V19)
	CBZ R1, ssdone

ssloop:
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	FCVTLD(4, 0)
	FCVTL2D(5, 0)
	FCVTLD(6, 1)
	FCVTL2D(7, 1)
	FCVTLD(8, 2)
	FCVTL2D(9, 2)
	FCVTLD(10, 3)
	FCVTL2D(11, 3)
	VFMLA V4.D2, V4.D2, V16.D2
	VFMLA V5.D2, V5.D2, V17.D2
	VFMLA V6.D2, V6.D2, V18.D2
	VFMLA V7.D2, V7.D2, V19.D2
	VFMLA V8.D2, V8.D2, V16.D2
	VFMLA V9.D2, V9.D2, V17.D2
	VFMLA V10.D2, V10.D2, V18.D2
	VFMLA V11.D2, V11.D2, V19.D2
	SUBS $16, R1
	BNE ssloop

ssdone:
	// (V16 + V17) + (V18 + V19), lane 0 + lane 1, in scalar FADDD.
	VMOV V16.D[0], R2
	VMOV V16.D[1], R3
	FMOVD R2, F0
	FMOVD R3, F1
	FADDD F1, F0, F0
	VMOV V17.D[0], R2
	VMOV V17.D[1], R3
	FMOVD R2, F1
	FMOVD R3, F2
	FADDD F2, F1, F1
	FADDD F1, F0, F0
	VMOV V18.D[0], R2
	VMOV V18.D[1], R3
	FMOVD R2, F1
	FMOVD R3, F2
	FADDD F2, F1, F1
	VMOV V19.D[0], R2
	VMOV V19.D[1], R3
	FMOVD R2, F2
	FMOVD R3, F3
	FADDD F3, F2, F2
	FADDD F2, F1, F1
	FADDD F1, F0, F0
	FMOVD F0, ret+16(FP)
	RET

// func scaleMulNEON(dst, x, w *float32, n int, inv float32)   (n a multiple of 16)
// dst = (x·inv)·w, each product rounded as the Go expression is; all of
// a step's loads precede its store, so dst may be x.
TEXT ·scaleMulNEON(SB), NOSPLIT, $0-36
	MOVD dst+0(FP), R0
	MOVD x+8(FP), R1
	MOVD w+16(FP), R2
	MOVD n+24(FP), R3
	FMOVS inv+32(FP), F31
	VDUP V31.S[0], V31.S4
	CBZ R3, smdone

smloop:
	VLD1.P 64(R1), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R2), [V4.S4, V5.S4, V6.S4, V7.S4]
	FMUL(0, 0, 31)
	FMUL(1, 1, 31)
	FMUL(2, 2, 31)
	FMUL(3, 3, 31)
	FMUL(0, 0, 4)
	FMUL(1, 1, 5)
	FMUL(2, 2, 6)
	FMUL(3, 3, 7)
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0)
	SUBS $16, R3
	BNE smloop

smdone:
	RET
