//go:build !purego

#include "textflag.h"

// The lookup layout's kernels (sherry_lut.go) on AVX-512 VBMI + VNNI.

// func sherryLUTTablesVNNI(q *int8, groups int, dst *int16, c *[7][64]byte)
// Group g's table: its four activations as a dword broadcast to 16 lanes,
// made unsigned (x+128), and VPDPBUSD with the codes' signed weights (c[0]
// codes 8L+i, c[1] codes 8L+4+i in dword 4L+i) onto −128·Σw (c[2], c[3]):
// Σ w·(x+128) − 128·Σw = Σ w·x. VPACKSSDW's word order (lane L: c[0]'s four
// dwords, then c[1]'s) is then code order. c[4] holds 0x80 bytes.
TEXT ·sherryLUTTablesVNNI(SB), NOSPLIT, $0-32
	MOVQ q+0(FP), SI
	MOVQ groups+8(FP), CX
	MOVQ dst+16(FP), DI
	MOVQ c+24(FP), AX
	VMOVDQU64 0(AX), Z20
	VMOVDQU64 64(AX), Z21
	VMOVDQU64 128(AX), Z22
	VMOVDQU64 192(AX), Z23
	VMOVDQU64 256(AX), Z24
	TESTQ CX, CX
	JEQ tdone

tloop:
	VPBROADCASTD (SI), Z0
	VPXORD Z24, Z0, Z0
	VMOVDQA64 Z22, Z1
	VMOVDQA64 Z23, Z2
	VPDPBUSD Z20, Z0, Z1
	VPDPBUSD Z21, Z0, Z2
	VPACKSSDW Z2, Z1, Z1
	VMOVDQU64 Z1, (DI)
	ADDQ $4, SI
	ADDQ $64, DI
	DECQ CX
	JNE tloop

tdone:
	VZEROUPPER
	RET

// A block's triple k (64 bytes) holds its codes of groups 3k, 3k+1,
// 3k+2: qword j rows 4j…4j+3, group 3k+h's code of row 4j+i at bits
// 20h+5i. VPMULTISHIFTQB with control h (Z24–Z26) moves group 3k+h's
// code of row 4j+i to the low byte of word 4j+i (the high bits are other
// codes', which VPERMW ignores): no shuffle before the lookup.

// LUT3_LOOK looks the codes in z (control ctl) up in the table t and adds
// them into acc.
#define LUT3_LOOK(z, ctl, t, tmp, acc) \
	VPMULTISHIFTQB z, ctl, tmp; \
	VPERMW t, tmp, tmp; \
	VPADDW tmp, acc, acc

// LUT3_BLOCK adds a block's triple at src, looked up in the tables Z14–Z16,
// into acc.
#define LUT3_BLOCK(src, acc) \
	VMOVDQU64 src, Z17; \
	LUT3_LOOK(Z17, Z24, Z14, Z18, acc); \
	LUT3_LOOK(Z17, Z25, Z15, Z19, acc); \
	LUT3_LOOK(Z17, Z26, Z16, Z20, acc)

// LUT_WIDEN adds the word sums acc (rows 0–31 of a block) into the dword
// sums lo (rows 0–15) and hi (16–31).
#define LUT_WIDEN(acc, yacc, lo, hi) \
	VPMOVSXWD yacc, Z13; \
	VPADDD Z13, lo, lo; \
	VEXTRACTI64X4 $1, acc, Y12; \
	VPMOVSXWD Y12, Z13; \
	VPADDD Z13, hi, hi

// LUT_STORE writes a block's rows: float32(sum)·scale·xs, rounded as the
// Go expression is.
#define LUT_STORE(lo, hi, scale, out) \
	VCVTDQ2PS lo, lo; \
	VMULPS (scale), lo, lo; \
	VMULPS Z27, lo, lo; \
	VMOVUPS lo, (out); \
	VCVTDQ2PS hi, hi; \
	VMULPS 64(scale), hi, hi; \
	VMULPS Z27, hi, hi; \
	VMOVUPS hi, 64(out)

// LUT_PAIR looks block A's indices (ia) and B's (ib) up in table t and
// adds them into a and b.
#define LUT_PAIR(t, ia, ib, a, b) \
	VPERMW t, ia, Z27; \
	VPADDW Z27, a, a; \
	VPERMW t, ib, Z28; \
	VPADDW Z28, b, b

// LUT_ACC adds the word sums acc (a block's 32 rows, one token) into
// the dword sums at off(R11).
#define LUT_ACC(acc, yacc, off) \
	VPMOVSXWD yacc, Z13; \
	VPADDD off(R11), Z13, Z13; \
	VMOVDQU64 Z13, off(R11); \
	VEXTRACTI64X4 $1, acc, Y12; \
	VPMOVSXWD Y12, Z13; \
	VPADDD (off+64)(R11), Z13, Z13; \
	VMOVDQU64 Z13, (off+64)(R11)

// LUT_STORE4 writes one token's rows of a block at AX from its dword sums
// at off(R15): float32(sum)·scale·xs (scales at R11, xs broadcast in x).
#define LUT_STORE4(off, x) \
	VCVTDQ2PS off(R15), Z0; \
	VMULPS (R11), Z0, Z0; \
	VMULPS x, Z0, Z0; \
	VMOVUPS Z0, (AX); \
	VCVTDQ2PS (off+64)(R15), Z1; \
	VMULPS 64(R11), Z1, Z1; \
	VMULPS x, Z1, Z1; \
	VMOVUPS Z1, 64(AX)

// LUT_CHUNK sets CX to the triples of the next chunk (at most 21: 63
// groups, 63·381 fits the word sums) and takes them off R12.
#define LUT_CHUNK \
	MOVQ $21, CX; \
	CMPQ R12, CX; \
	CMOVQLT R12, CX; \
	SUBQ CX, R12


// LUT4_PAIR_H: blocks A (Z16) and B (Z17), group h of the triple (control
// ctl, tables at off of the four tokens' pointers DI, R8–R10).
#define LUT4_PAIR_H(ctl, off) \
	VPMULTISHIFTQB Z16, ctl, Z18; \
	VPMULTISHIFTQB Z17, ctl, Z19; \
	VMOVDQU64 off(DI), Z20; \
	LUT_PAIR(Z20, Z18, Z19, Z8, Z0); \
	VMOVDQU64 off(R8), Z21; \
	LUT_PAIR(Z21, Z18, Z19, Z9, Z1); \
	VMOVDQU64 off(R9), Z22; \
	LUT_PAIR(Z22, Z18, Z19, Z10, Z2); \
	VMOVDQU64 off(R10), Z23; \
	LUT_PAIR(Z23, Z18, Z19, Z11, Z3)

// LUT4_ONE_H: one block (Z16), group h, the four tokens.
#define LUT4_ONE_H(ctl, off) \
	VPMULTISHIFTQB Z16, ctl, Z18; \
	VPERMW off(DI), Z18, Z19; \
	VPADDW Z19, Z8, Z8; \
	VPERMW off(R8), Z18, Z20; \
	VPADDW Z20, Z9, Z9; \
	VPERMW off(R9), Z18, Z21; \
	VPADDW Z21, Z10, Z10; \
	VPERMW off(R10), Z18, Z22; \
	VPADDW Z22, Z11, Z11

// func sherryLUTRowsVBMI(blocks *byte, tab *int16, triples int, nblk int, xs float32, scale *float32, out *float32, c *[3][64]byte)
// nblk blocks of 32 rows: four at a time while four remain, blocks b,
// b+q, b+2q, b+3q (q = nblk/4) sharing each table load, each walking its
// blocks front to back (four sequential streams); then the nblk mod 4
// last ones alone.
TEXT ·sherryLUTRowsVBMI(SB), NOSPLIT, $0-64
	MOVQ blocks+0(FP), SI
	MOVQ triples+16(FP), BX
	MOVQ nblk+24(FP), R13
	MOVQ scale+40(FP), R11
	MOVQ out+48(FP), DX
	MOVQ c+56(FP), AX
	VMOVDQU64 0(AX), Z24
	VMOVDQU64 64(AX), Z25
	VMOVDQU64 128(AX), Z26
	VBROADCASTSS xs+32(FP), Z27
	MOVQ R13, R14
	SHRQ $2, R14
	JEQ lone
	// R8–R10 the other streams, q blocks (q·triples·64 bytes) apart;
	// R15 the streams' distance in scale and out (q·128 bytes).
	MOVQ BX, AX
	SHLQ $6, AX
	IMULQ R14, AX
	LEAQ (SI)(AX*1), R8
	LEAQ (R8)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	MOVQ R14, R15
	SHLQ $7, R15

lquad:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	MOVQ BX, R12
	MOVQ tab+8(FP), DI
	TESTQ R12, R12
	JEQ lqstore

lqchunk:
	LUT_CHUNK
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11

lqtriple:
	VMOVDQU64 (DI), Z14
	VMOVDQU64 64(DI), Z15
	VMOVDQU64 128(DI), Z16
	LUT3_BLOCK((SI), Z8)
	LUT3_BLOCK((R8), Z9)
	LUT3_BLOCK((R9), Z10)
	LUT3_BLOCK((R10), Z11)
	ADDQ $64, SI
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, R10
	ADDQ $192, DI
	DECQ CX
	JNE lqtriple
	LUT_WIDEN(Z8, Y8, Z0, Z1)
	LUT_WIDEN(Z9, Y9, Z2, Z3)
	LUT_WIDEN(Z10, Y10, Z4, Z5)
	LUT_WIDEN(Z11, Y11, Z6, Z7)
	TESTQ R12, R12
	JNE lqchunk

lqstore:
	LUT_STORE(Z0, Z1, R11, DX)
	LEAQ (R11)(R15*1), AX
	LEAQ (DX)(R15*1), CX
	LUT_STORE(Z2, Z3, AX, CX)
	ADDQ R15, AX
	ADDQ R15, CX
	LUT_STORE(Z4, Z5, AX, CX)
	ADDQ R15, AX
	ADDQ R15, CX
	LUT_STORE(Z6, Z7, AX, CX)
	ADDQ $128, R11
	ADDQ $128, DX
	DECQ R14
	JNE lquad
	// The rest start where the fourth stream ends; their scales and
	// outputs after the fourth stream's.
	MOVQ R10, SI
	LEAQ (R15)(R15*2), AX
	ADDQ AX, R11
	ADDQ AX, DX

lone:
	ANDQ $3, R13
	JEQ ldone

lblock:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	MOVQ BX, R12
	MOVQ tab+8(FP), DI
	TESTQ R12, R12
	JEQ lostore

lochunk:
	LUT_CHUNK
	VPXORD Z8, Z8, Z8

lotriple:
	VMOVDQU64 (DI), Z14
	VMOVDQU64 64(DI), Z15
	VMOVDQU64 128(DI), Z16
	LUT3_BLOCK((SI), Z8)
	ADDQ $64, SI
	ADDQ $192, DI
	DECQ CX
	JNE lotriple
	LUT_WIDEN(Z8, Y8, Z0, Z1)
	TESTQ R12, R12
	JNE lochunk

lostore:
	LUT_STORE(Z0, Z1, R11, DX)
	ADDQ $128, R11
	ADDQ $128, DX
	DECQ R13
	JNE lblock

ldone:
	VZEROUPPER
	RET

// func sherryLUTRows4VBMI(blocks *byte, tab *int16, tstride int, triples int, nblk int, xs *float32, scale *float32, out *float32, ldo int, acc *int32, c *[3][64]byte)
// Prefill: nblk blocks against four tokens, whose tables lie tstride
// bytes apart and whose outputs ldo bytes apart: each triple's codes are
// loaded once and looked up in the four tables. The triples go 21 at a
// time over all the blocks, so that the four tokens' tables of those 63
// groups (16 KB) stay in L1 (block by block over all groups, the tables
// came from L2 at 256 bytes a group: its bandwidth bound the kernel);
// two blocks share each table load; the sums wait in acc (nblk·4·32
// int32: block b, token t at (4b+t)·128).
TEXT ·sherryLUTRows4VBMI(SB), NOSPLIT, $0-88
	MOVQ triples+24(FP), BX
	MOVQ nblk+32(FP), R13
	MOVQ acc+72(FP), R15
	MOVQ c+80(FP), AX
	VMOVDQU64 0(AX), Z24
	VMOVDQU64 64(AX), Z25
	VMOVDQU64 128(AX), Z26
	TESTQ R13, R13
	JEQ l4done
	// Zero the sums.
	VPXORD Z0, Z0, Z0
	MOVQ R13, CX
	SHLQ $3, CX // 8 ZMM a block
	MOVQ R15, AX

l4zero:
	VMOVDQU64 Z0, (AX)
	ADDQ $64, AX
	DECQ CX
	JNE l4zero
	XORQ R12, R12 // the chunk's first triple

l4chunk:
	MOVQ BX, CX
	SUBQ R12, CX
	CMPQ CX, $21
	JLE l4cn
	MOVQ $21, CX

l4cn:
	MOVQ CX, R14 // the chunk's triples
	MOVQ blocks+0(FP), SI
	MOVQ R12, AX
	SHLQ $6, AX
	ADDQ AX, SI // block 0's codes of the chunk
	MOVQ R15, R11 // the block's sums
	MOVQ nblk+32(FP), R13

l4block:
	MOVQ tab+8(FP), DI
	IMUL3Q $192, R12, AX
	ADDQ AX, DI
	MOVQ tstride+16(FP), AX
	LEAQ (DI)(AX*1), R8
	LEAQ (R8)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	MOVQ SI, DX
	MOVQ R14, CX
	CMPQ R13, $2
	JLT l4single
	// Two blocks (the second triples·64 bytes on, in AX) share each
	// table load: block A's sums in Z8–Z11, B's in Z0–Z3.
	MOVQ BX, AX
	SHLQ $6, AX
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

l4ptriple:
	VMOVDQU64 (DX), Z16
	VMOVDQU64 (DX)(AX*1), Z17
	LUT4_PAIR_H(Z24, 0)
	LUT4_PAIR_H(Z25, 64)
	LUT4_PAIR_H(Z26, 128)
	ADDQ $64, DX
	ADDQ $192, DI
	ADDQ $192, R8
	ADDQ $192, R9
	ADDQ $192, R10
	DECQ CX
	JNE l4ptriple
	LUT_ACC(Z8, Y8, 0)
	LUT_ACC(Z9, Y9, 128)
	LUT_ACC(Z10, Y10, 256)
	LUT_ACC(Z11, Y11, 384)
	LUT_ACC(Z0, Y0, 512)
	LUT_ACC(Z1, Y1, 640)
	LUT_ACC(Z2, Y2, 768)
	LUT_ACC(Z3, Y3, 896)
	MOVQ BX, AX
	SHLQ $7, AX
	ADDQ AX, SI // the block after next's codes of the chunk
	ADDQ $1024, R11
	SUBQ $2, R13
	JNE l4block
	JMP l4next

l4single:
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11

l4triple:
	VMOVDQU64 (DX), Z16
	LUT4_ONE_H(Z24, 0)
	LUT4_ONE_H(Z25, 64)
	LUT4_ONE_H(Z26, 128)
	ADDQ $64, DX
	ADDQ $192, DI
	ADDQ $192, R8
	ADDQ $192, R9
	ADDQ $192, R10
	DECQ CX
	JNE l4triple
	LUT_ACC(Z8, Y8, 0)
	LUT_ACC(Z9, Y9, 128)
	LUT_ACC(Z10, Y10, 256)
	LUT_ACC(Z11, Y11, 384)
	MOVQ BX, AX
	SHLQ $6, AX
	ADDQ AX, SI // the next block's codes of the chunk
	ADDQ $512, R11
	DECQ R13
	JNE l4block

l4next:
	ADDQ R14, R12
	CMPQ R12, BX
	JLT l4chunk

	// The sums to floats: float32(sum)·scale·xs.
	MOVQ xs+40(FP), AX
	VBROADCASTSS 0(AX), Z28
	VBROADCASTSS 4(AX), Z29
	VBROADCASTSS 8(AX), Z30
	VBROADCASTSS 12(AX), Z31
	MOVQ scale+48(FP), R11
	MOVQ out+56(FP), DX
	MOVQ ldo+64(FP), R14
	MOVQ nblk+32(FP), R13

l4store:
	MOVQ DX, AX
	LUT_STORE4(0, Z28)
	ADDQ R14, AX
	LUT_STORE4(128, Z29)
	ADDQ R14, AX
	LUT_STORE4(256, Z30)
	ADDQ R14, AX
	LUT_STORE4(384, Z31)
	ADDQ $512, R15
	ADDQ $128, R11
	ADDQ $128, DX
	DECQ R13
	JNE l4store

l4done:
	VZEROUPPER
	RET
