//go:build !purego

#include "textflag.h"

// Prefetch distances (bytes ahead) for the decode kernels, which stream
// weights from memory: software prefetch lets the loads of the next rows
// overlap the arithmetic on these ones (measured: decode +12%). SPFD is
// for i2RowsScaledVNNI's four row streams (plain I2 layout), with the
// non-temporal hint. The single-stream kernels (i2x4RowsScaledVNNI,
// q8RowsVNNI) do not prefetch: on the 2-core Zen 4 VM the hardware
// prefetchers alone streamed them fastest — the BitNet-2B decode chain
// at 0.86 of the plain read rate against 0.78 with NTA 16 KiB ahead, 0.86
// with T1 8 KiB, 0.87 with T2 4 KiB when memory gave 35 GB/s; at 60 GB/s
// 0.76 against 0.50, 0.70 and 0.68 (alternating rounds, engine.md).
#define SPFD 16384

// The four-row I2 kernels' shared pieces. I2_ROW_DOTS accumulates one
// 64-byte block of one row's codes (loaded from src into the scratch zr)
// against the four activation vectors Z24–Z27: field j of each byte is
// masked in place (Z28–Z31 = 0x03, 0x0c, 0x30, 0xc0 per byte) and
// multiplied into its own accumulator aj, so aj holds 4^j·Σ code_j·q.
#define I2_ROW_DOTS(src, zr, a0, a1, a2, a3) \
	VMOVDQU64 src, zr; \
	VPANDQ Z28, zr, Z20; \
	VPDPBUSD Z24, Z20, a0; \
	VPANDQ Z29, zr, Z21; \
	VPDPBUSD Z25, Z21, a1; \
	VPANDQ Z30, zr, Z22; \
	VPDPBUSD Z26, Z22, a2; \
	VPANDQ Z31, zr, Z23; \
	VPDPBUSD Z27, Z23, a3

// I2_QUAD_SUMS turns the accumulators of four rows (Z0–Z3, Z4–Z7,
// Z8–Z11, Z12–Z15) into the rows' Σ code·q in X0's four lanes: each
// row's A0 + A1>>2 + A2>>4 + A3>>6 (exact shifts), then four horizontal
// sums at once.
#define I2_QUAD_SUMS \
	VPSRAD $2, Z1, Z1; VPSRAD $4, Z2, Z2; VPSRAD $6, Z3, Z3; \
	VPADDD Z1, Z0, Z0; VPADDD Z3, Z2, Z2; VPADDD Z2, Z0, Z0; \
	VPSRAD $2, Z5, Z5; VPSRAD $4, Z6, Z6; VPSRAD $6, Z7, Z7; \
	VPADDD Z5, Z4, Z4; VPADDD Z7, Z6, Z6; VPADDD Z6, Z4, Z4; \
	VPSRAD $2, Z9, Z9; VPSRAD $4, Z10, Z10; VPSRAD $6, Z11, Z11; \
	VPADDD Z9, Z8, Z8; VPADDD Z11, Z10, Z10; VPADDD Z10, Z8, Z8; \
	VPSRAD $2, Z13, Z13; VPSRAD $4, Z14, Z14; VPSRAD $6, Z15, Z15; \
	VPADDD Z13, Z12, Z12; VPADDD Z15, Z14, Z14; VPADDD Z14, Z12, Z12; \
	VEXTRACTI64X4 $1, Z0, Y1; VPADDD Y1, Y0, Y0; \
	VEXTRACTI64X4 $1, Z4, Y5; VPADDD Y5, Y4, Y4; \
	VEXTRACTI64X4 $1, Z8, Y9; VPADDD Y9, Y8, Y8; \
	VEXTRACTI64X4 $1, Z12, Y13; VPADDD Y13, Y12, Y12; \
	VPHADDD Y4, Y0, Y0; VPHADDD Y12, Y8, Y8; VPHADDD Y8, Y0, Y0; \
	VEXTRACTI128 $1, Y0, X1; VPADDD X1, X0, X0

// I2_QUAD_SCALE is decode's epilogue for four rows: (Σ − total)·scale[r]·xs
// (convert, then two float32 multiplies, as the Go expression rounds),
// stored at (DX); scale is at (R14). It uses DI, which the kernels reload
// before the next rows.
#define I2_QUAD_SCALE \
	MOVL total+32(FP), DI; \
	VPBROADCASTD DI, X2; \
	VBROADCASTSS xs+36(FP), X3; \
	VPSUBD X2, X0, X0; \
	VCVTDQ2PS X0, X0; \
	VMULPS (R14), X0, X0; \
	VMULPS X3, X0, X0; \
	VMOVUPS X0, (DX)

// I2_MASKS loads I2_ROW_DOTS's field masks into Z28–Z31 (uses AX).
#define I2_MASKS \
	MOVL $0x03030303, AX; VPBROADCASTD AX, Z28; \
	MOVL $0x0c0c0c0c, AX; VPBROADCASTD AX, Z29; \
	MOVL $0x30303030, AX; VPBROADCASTD AX, Z30; \
	MOVL $0xc0c0c0c0, AX; VPBROADCASTD AX, Z31

#define ZERO_Z0_Z15 \
	VPXORQ Z0, Z0, Z0; VPXORQ Z1, Z1, Z1; VPXORQ Z2, Z2, Z2; VPXORQ Z3, Z3, Z3; \
	VPXORQ Z4, Z4, Z4; VPXORQ Z5, Z5, Z5; VPXORQ Z6, Z6, Z6; VPXORQ Z7, Z7, Z7; \
	VPXORQ Z8, Z8, Z8; VPXORQ Z9, Z9, Z9; VPXORQ Z10, Z10, Z10; VPXORQ Z11, Z11, Z11; \
	VPXORQ Z12, Z12, Z12; VPXORQ Z13, Z13, Z13; VPXORQ Z14, Z14, Z14; VPXORQ Z15, Z15, Z15

// func tq2BlockSumsAVX2(row *byte, q *int8, nb int, out *int32)
// For each 256-weight TQ2_0 block b: out[b] = Σ code_i · q_i, codes 0..2.
// VPMADDUBSW multiplies the unsigned codes by the signed activations; eight
// such int16 partial sums (|·| ≤ 4064) are then widened with VPMADDWD.
TEXT ·tq2BlockSumsAVX2(SB), NOSPLIT, $0-32
	MOVQ row+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ nb+16(FP), CX
	MOVQ out+24(FP), DX
	MOVL $0x03030303, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15      // 0x03 mask
	MOVL $0x00010001, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14      // int16 ones
	TESTQ CX, CX
	JEQ done

block:
	VPXOR Y0, Y0, Y0
	// half 0: qs[0:32] covers weights 0..127
	VMOVDQU (SI), Y1
	VPAND Y15, Y1, Y2
	VPMADDUBSW (DI), Y2, Y3
	VPADDW Y3, Y0, Y0
	VPSRLW $2, Y1, Y2
	VPAND Y15, Y2, Y2
	VPMADDUBSW 32(DI), Y2, Y3
	VPADDW Y3, Y0, Y0
	VPSRLW $4, Y1, Y2
	VPAND Y15, Y2, Y2
	VPMADDUBSW 64(DI), Y2, Y3
	VPADDW Y3, Y0, Y0
	VPSRLW $6, Y1, Y2
	VPAND Y15, Y2, Y2
	VPMADDUBSW 96(DI), Y2, Y3
	VPADDW Y3, Y0, Y0
	// half 1: qs[32:64] covers weights 128..255
	VMOVDQU 32(SI), Y1
	VPAND Y15, Y1, Y2
	VPMADDUBSW 128(DI), Y2, Y3
	VPADDW Y3, Y0, Y0
	VPSRLW $2, Y1, Y2
	VPAND Y15, Y2, Y2
	VPMADDUBSW 160(DI), Y2, Y3
	VPADDW Y3, Y0, Y0
	VPSRLW $4, Y1, Y2
	VPAND Y15, Y2, Y2
	VPMADDUBSW 192(DI), Y2, Y3
	VPADDW Y3, Y0, Y0
	VPSRLW $6, Y1, Y2
	VPAND Y15, Y2, Y2
	VPMADDUBSW 224(DI), Y2, Y3
	VPADDW Y3, Y0, Y0
	// widen and reduce to one int32
	VPMADDWD Y14, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	MOVL AX, (DX)
	ADDQ $66, SI
	ADDQ $256, DI
	ADDQ $4, DX
	DECQ CX
	JNE block

done:
	VZEROUPPER
	RET

// func dotF32AVX2(a, b *float32, n int) float32   (n a multiple of 32)
TEXT ·dotF32AVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	SHRQ $5, CX
	JEQ f32sum

f32loop:
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNE f32loop

f32sum:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0x4E, X0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0xB1, X0, X1
	VADDPS X1, X0, X0
	VZEROUPPER
	VMOVSS X0, ret+24(FP)
	RET

// func dotF16AVX2(w *byte, x *float32, n int) float32   (n a multiple of 32)
// F16C widens 8 halves at a time; FMA accumulates in four registers.
TEXT ·dotF16AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	SHRQ $5, CX
	JEQ f16sum

f16loop:
	VCVTPH2PS (SI), Y4
	VCVTPH2PS 16(SI), Y5
	VCVTPH2PS 32(SI), Y6
	VCVTPH2PS 48(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $64, SI
	ADDQ $128, DI
	DECQ CX
	JNE f16loop

f16sum:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0x4E, X0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0xB1, X0, X1
	VADDPS X1, X0, X0
	VZEROUPPER
	VMOVSS X0, ret+24(FP)
	RET

// func readSumAVX2(p *byte, n int) uint64   (n a multiple of 128)
TEXT ·readSumAVX2(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	SHRQ $7, CX
	JEQ rsdone

rsloop:
	VPXOR (SI), Y0, Y0
	VPXOR 32(SI), Y1, Y1
	VPXOR 64(SI), Y2, Y2
	VPXOR 96(SI), Y3, Y3
	ADDQ $128, SI
	DECQ CX
	JNE rsloop

rsdone:
	VPXOR Y1, Y0, Y0
	VPXOR Y3, Y2, Y2
	VPXOR Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPXOR X1, X0, X0
	VMOVQ X0, AX
	VZEROUPPER
	MOVQ AX, ret+16(FP)
	RET

// func i2DotAVX2(row *byte, q *int8, nb int) int32
// Row-scaled 2-bit codes in TQ2_0's bit order without the per-block scale
// (64 bytes per 256 weights): Σ code_i · q_i over the row, in int32.
TEXT ·i2DotAVX2(SB), NOSPLIT, $0-28
	MOVQ row+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ nb+16(FP), CX
	MOVL $0x03030303, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x00010001, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	VPXOR Y13, Y13, Y13
	TESTQ CX, CX
	JEQ i2done

i2block:
	VMOVDQU (SI), Y1
	VMOVDQU 32(SI), Y8
	VPAND Y15, Y1, Y2
	VPMADDUBSW (DI), Y2, Y0
	VPSRLW $2, Y1, Y2
	VPAND Y15, Y2, Y2
	VPMADDUBSW 32(DI), Y2, Y3
	VPADDW Y3, Y0, Y0
	VPSRLW $4, Y1, Y2
	VPAND Y15, Y2, Y2
	VPMADDUBSW 64(DI), Y2, Y3
	VPADDW Y3, Y0, Y0
	VPSRLW $6, Y1, Y2
	VPAND Y15, Y2, Y2
	VPMADDUBSW 96(DI), Y2, Y3
	VPADDW Y3, Y0, Y0
	VPAND Y15, Y8, Y2
	VPMADDUBSW 128(DI), Y2, Y3
	VPADDW Y3, Y0, Y0
	VPSRLW $2, Y8, Y2
	VPAND Y15, Y2, Y2
	VPMADDUBSW 160(DI), Y2, Y3
	VPADDW Y3, Y0, Y0
	VPSRLW $4, Y8, Y2
	VPAND Y15, Y2, Y2
	VPMADDUBSW 192(DI), Y2, Y3
	VPADDW Y3, Y0, Y0
	VPSRLW $6, Y8, Y2
	VPAND Y15, Y2, Y2
	VPMADDUBSW 224(DI), Y2, Y3
	VPADDW Y3, Y0, Y0
	VPMADDWD Y14, Y0, Y0
	VPADDD Y0, Y13, Y13
	ADDQ $64, SI
	ADDQ $256, DI
	DECQ CX
	JNE i2block

i2done:
	VEXTRACTI128 $1, Y13, X1
	VPADDD X1, X13, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	VZEROUPPER
	MOVL AX, ret+24(FP)
	RET

// I2_HALF_AVX2 accumulates one 32-byte half of a 64-byte I2 block (codes
// in Y6) against its 128 activations at off(DI). Fields 0 and 2 (masked in
// place with 0x03, field 2 after a 4-bit shift) go to the int16 sums acc1;
// fields 1 and 3 (masked with 0x0c, so 4·code) to acc4a and acc4b, which
// thus hold 4·Σ code·q. One shift per half instead of three: 13 ops per
// 32 bytes.
#define I2_HALF_AVX2(off, acc1, acc4a, acc4b) \
	VPAND Y15, Y6, Y7; \
	VPMADDUBSW off(DI), Y7, Y7; \
	VPADDW Y7, acc1, acc1; \
	VPAND Y14, Y6, Y8; \
	VPMADDUBSW off+32(DI), Y8, Y8; \
	VPADDW Y8, acc4a, acc4a; \
	VPSRLW $4, Y6, Y6; \
	VPAND Y15, Y6, Y7; \
	VPMADDUBSW off+64(DI), Y7, Y7; \
	VPADDW Y7, acc1, acc1; \
	VPAND Y14, Y6, Y8; \
	VPMADDUBSW off+96(DI), Y8, Y8; \
	VPADDW Y8, acc4b, acc4b

// I2_ROW_AVX2 leaves Σ code·q of the row at SI (nb = R12 blocks, advancing
// SI past it) against the activations at R11 in Y9's eight int32 lanes.
// Chunks of up to 16 blocks: a pair product is at most 2·2·127 = 508 (×4
// for the 0x0c fields), so acc1 (two per block) stays ≤ 16·1016 and each
// acc4 ≤ 16·2032; at the chunk's end acc1 + acc4a/4 + acc4b/4 ≤ 32512
// fits int16 (the shifts are exact: each term is 4·code·q) and is
// widened once. BitNet-2B's 2560-wide rows are one chunk.
#define I2_ROW_AVX2(chunk, fit, block) \
	MOVQ R11, DI; \
	MOVQ R12, CX; \
	VPXOR Y9, Y9, Y9; \
chunk: \
	MOVQ CX, BX; \
	CMPQ BX, $16; \
	JLE fit; \
	MOVQ $16, BX; \
fit: \
	SUBQ BX, CX; \
	VPXOR Y0, Y0, Y0; \
	VPXOR Y1, Y1, Y1; \
	VPXOR Y2, Y2, Y2; \
	VPXOR Y3, Y3, Y3; \
	VPXOR Y4, Y4, Y4; \
	VPXOR Y5, Y5, Y5; \
block: \
	VMOVDQU (SI), Y6; \
	I2_HALF_AVX2(0, Y0, Y1, Y2); \
	VMOVDQU 32(SI), Y6; \
	I2_HALF_AVX2(128, Y3, Y4, Y5); \
	ADDQ $64, SI; \
	ADDQ $256, DI; \
	DECQ BX; \
	JNE block; \
	VPSRAW $2, Y1, Y1; \
	VPSRAW $2, Y2, Y2; \
	VPSRAW $2, Y4, Y4; \
	VPSRAW $2, Y5, Y5; \
	VPADDW Y1, Y0, Y0; \
	VPADDW Y2, Y0, Y0; \
	VPADDW Y4, Y3, Y3; \
	VPADDW Y5, Y3, Y3; \
	VPMADDWD Y13, Y0, Y0; \
	VPMADDWD Y13, Y3, Y3; \
	VPADDD Y0, Y9, Y9; \
	VPADDD Y3, Y9, Y9; \
	TESTQ CX, CX; \
	JNE chunk

// func i2RowsScaledAVX2(rows *byte, q *int8, nb int, n int, total int32, xs float32, scale *float32, out *float32)
// n consecutive plain I2 rows against one activation row (decode), one row
// at a time so the weights are one sequential stream: out[r] =
// float32(Σ code·q − total) · scale[r] · xs, rounded as the Go expression
// is. Four rows' lane sums wait on the stack and are reduced and scaled
// together (three VPHADDD, one vector multiply per factor); the last n%4
// rows are finished one by one.
TEXT ·i2RowsScaledAVX2(SB), NOSPLIT, $128-56
	MOVQ rows+0(FP), SI
	MOVQ q+8(FP), R11
	MOVQ nb+16(FP), R12
	MOVQ n+24(FP), R13
	MOVQ scale+40(FP), R14
	MOVQ out+48(FP), DX
	TESTQ R13, R13
	JEQ arsend
	TESTQ R12, R12
	JEQ arsend
	MOVL $0x03030303, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x0c0c0c0c, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x00010001, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	CMPQ R13, $4
	JLT arsone

arsquad:
	MOVQ $0, R8
arsquadrow:
	I2_ROW_AVX2(arsqchunk, arsqfit, arsqblock)
	VMOVDQU Y9, 0(SP)(R8*1)
	ADDQ $32, R8
	CMPQ R8, $128
	JNE arsquadrow
	VMOVDQU 0(SP), Y0
	VPHADDD 32(SP), Y0, Y0
	VMOVDQU 64(SP), Y1
	VPHADDD 96(SP), Y1, Y1
	VPHADDD Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	MOVL total+32(FP), AX
	VMOVD AX, X1
	VPBROADCASTD X1, X1
	VBROADCASTSS xs+36(FP), X2
	VPSUBD X1, X0, X0
	VCVTDQ2PS X0, X0
	VMULPS (R14), X0, X0
	VMULPS X2, X0, X0
	VMOVUPS X0, (DX)
	ADDQ $16, DX
	ADDQ $16, R14
	SUBQ $4, R13
	CMPQ R13, $4
	JGE arsquad
	TESTQ R13, R13
	JEQ arsend

arsone:
	I2_ROW_AVX2(arsochunk, arsofit, arsoblock)
	VEXTRACTI128 $1, Y9, X0
	VPADDD X9, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	MOVL total+32(FP), AX
	VMOVD AX, X1
	VPSUBD X1, X0, X0
	VCVTDQ2PS X0, X0
	VMULSS (R14), X0, X0
	VMULSS xs+36(FP), X0, X0
	VMOVSS X0, (DX)
	ADDQ $4, DX
	ADDQ $4, R14
	DECQ R13
	JNE arsone
arsend:
	VZEROUPPER
	RET

// func q8RowsAVX2(w *int8, x *int8, stride int, n32 int, nrows int, out *int32)
// out[r] = Σ w[r·stride+i]·x[i] over the first n32 bytes (a multiple of
// 32) of each of nrows rows, one row at a time (one sequential stream, as
// q8RowsVNNI). The sign trick of q8DotAVX2; two int32 sums per row.
TEXT ·q8RowsAVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), R11
	MOVQ stride+16(FP), R12
	MOVQ n32+24(FP), R13
	MOVQ nrows+32(FP), R14
	MOVQ out+40(FP), DX
	SHRQ $5, R13
	TESTQ R14, R14
	JEQ qrend
	MOVL $0x00010001, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14

qrrow:
	MOVQ SI, R8
	MOVQ R11, DI
	MOVQ R13, CX
	VPXOR Y0, Y0, Y0
	VPXOR Y6, Y6, Y6
	SHRQ $1, CX
	JEQ qrodd
qrloop:
	VMOVDQU (DI), Y2
	VPSIGNB (R8), Y2, Y3
	VPABSB (R8), Y4
	VPMADDUBSW Y3, Y4, Y5
	VPMADDWD Y14, Y5, Y5
	VPADDD Y5, Y0, Y0
	VMOVDQU 32(DI), Y2
	VPSIGNB 32(R8), Y2, Y3
	VPABSB 32(R8), Y4
	VPMADDUBSW Y3, Y4, Y5
	VPMADDWD Y14, Y5, Y5
	VPADDD Y5, Y6, Y6
	ADDQ $64, R8
	ADDQ $64, DI
	DECQ CX
	JNE qrloop
qrodd:
	TESTQ $1, R13
	JEQ qrsum
	VMOVDQU (DI), Y2
	VPSIGNB (R8), Y2, Y3
	VPABSB (R8), Y4
	VPMADDUBSW Y3, Y4, Y5
	VPMADDWD Y14, Y5, Y5
	VPADDD Y5, Y0, Y0
qrsum:
	VPADDD Y6, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, (DX)
	ADDQ R12, SI
	ADDQ $4, DX
	DECQ R14
	JNE qrrow
qrend:
	VZEROUPPER
	RET

// func q8DotAVX2(w *int8, x *int8, n int) int32   (n a multiple of 32)
// int8·int8 dot: VPMADDUBSW needs one unsigned operand, so |w| is
// multiplied by x carrying w's sign (VPSIGNB). |w|,|x| ≤ 127 keeps the
// int16 pair sums below saturation.
TEXT ·q8DotAVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	MOVL $0x00010001, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	VPXOR Y0, Y0, Y0
	VPXOR Y6, Y6, Y6
	SHRQ $6, CX
	JEQ q8tail

q8loop:
	VMOVDQU (SI), Y1
	VMOVDQU (DI), Y2
	VPSIGNB Y1, Y2, Y3
	VPABSB Y1, Y4
	VPMADDUBSW Y3, Y4, Y5
	VPMADDWD Y14, Y5, Y5
	VPADDD Y5, Y0, Y0
	VMOVDQU 32(SI), Y1
	VMOVDQU 32(DI), Y2
	VPSIGNB Y1, Y2, Y3
	VPABSB Y1, Y4
	VPMADDUBSW Y3, Y4, Y5
	VPMADDWD Y14, Y5, Y5
	VPADDD Y5, Y6, Y6
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNE q8loop

q8tail:
	MOVQ n+16(FP), CX
	ANDQ $32, CX
	JEQ q8sum
	VMOVDQU (SI), Y1
	VMOVDQU (DI), Y2
	VPSIGNB Y1, Y2, Y3
	VPABSB Y1, Y4
	VPMADDUBSW Y3, Y4, Y5
	VPMADDWD Y14, Y5, Y5
	VPADDD Y5, Y0, Y0

q8sum:
	VPADDD Y6, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	VZEROUPPER
	MOVL AX, ret+24(FP)
	RET

// func i2Dot4AVX2(row *byte, q *int8, k int, nb int, out *int32)
// Four tokens at once (prefill): each unpacked code vector is multiplied
// with four activation rows k bytes apart, so the unpacking is shared.
TEXT ·i2Dot4AVX2(SB), NOSPLIT, $0-40
	MOVQ row+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ k+16(FP), BX
	MOVQ nb+24(FP), CX
	MOVQ out+32(FP), DX
	LEAQ (DI)(BX*1), R8
	LEAQ (R8)(BX*1), R9
	LEAQ (R9)(BX*1), R10
	MOVL $0x03030303, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x00010001, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	VPXOR Y8, Y8, Y8
	VPXOR Y9, Y9, Y9
	VPXOR Y10, Y10, Y10
	VPXOR Y11, Y11, Y11
	TESTQ CX, CX
	JEQ i4done
i4block:
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	VMOVDQU (SI), Y1
	VMOVDQU 32(SI), Y12
	VPAND Y15, Y1, Y2
	VPMADDUBSW 0(DI), Y2, Y3
	VPADDW Y3, Y4, Y4
	VPMADDUBSW 0(R8), Y2, Y3
	VPADDW Y3, Y5, Y5
	VPMADDUBSW 0(R9), Y2, Y3
	VPADDW Y3, Y6, Y6
	VPMADDUBSW 0(R10), Y2, Y3
	VPADDW Y3, Y7, Y7
	VPSRLW $2, Y1, Y2
	VPAND Y15, Y2, Y2
	VPMADDUBSW 32(DI), Y2, Y3
	VPADDW Y3, Y4, Y4
	VPMADDUBSW 32(R8), Y2, Y3
	VPADDW Y3, Y5, Y5
	VPMADDUBSW 32(R9), Y2, Y3
	VPADDW Y3, Y6, Y6
	VPMADDUBSW 32(R10), Y2, Y3
	VPADDW Y3, Y7, Y7
	VPSRLW $4, Y1, Y2
	VPAND Y15, Y2, Y2
	VPMADDUBSW 64(DI), Y2, Y3
	VPADDW Y3, Y4, Y4
	VPMADDUBSW 64(R8), Y2, Y3
	VPADDW Y3, Y5, Y5
	VPMADDUBSW 64(R9), Y2, Y3
	VPADDW Y3, Y6, Y6
	VPMADDUBSW 64(R10), Y2, Y3
	VPADDW Y3, Y7, Y7
	VPSRLW $6, Y1, Y2
	VPAND Y15, Y2, Y2
	VPMADDUBSW 96(DI), Y2, Y3
	VPADDW Y3, Y4, Y4
	VPMADDUBSW 96(R8), Y2, Y3
	VPADDW Y3, Y5, Y5
	VPMADDUBSW 96(R9), Y2, Y3
	VPADDW Y3, Y6, Y6
	VPMADDUBSW 96(R10), Y2, Y3
	VPADDW Y3, Y7, Y7
	VPAND Y15, Y12, Y2
	VPMADDUBSW 128(DI), Y2, Y3
	VPADDW Y3, Y4, Y4
	VPMADDUBSW 128(R8), Y2, Y3
	VPADDW Y3, Y5, Y5
	VPMADDUBSW 128(R9), Y2, Y3
	VPADDW Y3, Y6, Y6
	VPMADDUBSW 128(R10), Y2, Y3
	VPADDW Y3, Y7, Y7
	VPSRLW $2, Y12, Y2
	VPAND Y15, Y2, Y2
	VPMADDUBSW 160(DI), Y2, Y3
	VPADDW Y3, Y4, Y4
	VPMADDUBSW 160(R8), Y2, Y3
	VPADDW Y3, Y5, Y5
	VPMADDUBSW 160(R9), Y2, Y3
	VPADDW Y3, Y6, Y6
	VPMADDUBSW 160(R10), Y2, Y3
	VPADDW Y3, Y7, Y7
	VPSRLW $4, Y12, Y2
	VPAND Y15, Y2, Y2
	VPMADDUBSW 192(DI), Y2, Y3
	VPADDW Y3, Y4, Y4
	VPMADDUBSW 192(R8), Y2, Y3
	VPADDW Y3, Y5, Y5
	VPMADDUBSW 192(R9), Y2, Y3
	VPADDW Y3, Y6, Y6
	VPMADDUBSW 192(R10), Y2, Y3
	VPADDW Y3, Y7, Y7
	VPSRLW $6, Y12, Y2
	VPAND Y15, Y2, Y2
	VPMADDUBSW 224(DI), Y2, Y3
	VPADDW Y3, Y4, Y4
	VPMADDUBSW 224(R8), Y2, Y3
	VPADDW Y3, Y5, Y5
	VPMADDUBSW 224(R9), Y2, Y3
	VPADDW Y3, Y6, Y6
	VPMADDUBSW 224(R10), Y2, Y3
	VPADDW Y3, Y7, Y7
	VPMADDWD Y14, Y4, Y4
	VPADDD Y4, Y8, Y8
	VPMADDWD Y14, Y5, Y5
	VPADDD Y5, Y9, Y9
	VPMADDWD Y14, Y6, Y6
	VPADDD Y6, Y10, Y10
	VPMADDWD Y14, Y7, Y7
	VPADDD Y7, Y11, Y11
	ADDQ $64, SI
	ADDQ $256, DI
	ADDQ $256, R8
	ADDQ $256, R9
	ADDQ $256, R10
	DECQ CX
	JNE i4block
i4done:
	VEXTRACTI128 $1, Y8, X1
	VPADDD X1, X8, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	MOVL AX, 0(DX)
	VEXTRACTI128 $1, Y9, X1
	VPADDD X1, X9, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	MOVL AX, 4(DX)
	VEXTRACTI128 $1, Y10, X1
	VPADDD X1, X10, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	MOVL AX, 8(DX)
	VEXTRACTI128 $1, Y11, X1
	VPADDD X1, X11, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	MOVL AX, 12(DX)
	VZEROUPPER
	RET

// AVX-512 versions of the I2 kernels. They read the activations in the
// block-permuted order acts.qp holds (see permuteI2): one 64-byte load
// of a block's codes, shifted by 2n, lines up with 64 contiguous bytes.

// func i2DotAVX512(row *byte, qp *int8, nb int) int32
TEXT ·i2DotAVX512(SB), NOSPLIT, $0-28
	MOVQ row+0(FP), SI
	MOVQ qp+8(FP), DI
	MOVQ nb+16(FP), CX
	MOVL $0x03030303, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Z15
	MOVL $0x00010001, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Z14
	VPXORQ Z13, Z13, Z13
	TESTQ CX, CX
	JEQ z1done
z1block:
	VMOVDQU64 (SI), Z1
	VPANDQ Z15, Z1, Z2
	VPMADDUBSW (DI), Z2, Z0
	VPSRLW $2, Z1, Z2
	VPANDQ Z15, Z2, Z2
	VPMADDUBSW 64(DI), Z2, Z3
	VPADDW Z3, Z0, Z0
	VPSRLW $4, Z1, Z2
	VPANDQ Z15, Z2, Z2
	VPMADDUBSW 128(DI), Z2, Z3
	VPADDW Z3, Z0, Z0
	VPSRLW $6, Z1, Z2
	VPANDQ Z15, Z2, Z2
	VPMADDUBSW 192(DI), Z2, Z3
	VPADDW Z3, Z0, Z0
	VPMADDWD Z14, Z0, Z0
	VPADDD Z0, Z13, Z13
	ADDQ $64, SI
	ADDQ $256, DI
	DECQ CX
	JNE z1block
z1done:
	VEXTRACTI64X4 $1, Z13, Y1
	VPADDD Y1, Y13, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	VZEROUPPER
	MOVL AX, ret+24(FP)
	RET

// func i2Dot4AVX512(row *byte, qp *int8, k int, nb int, out *int32)
TEXT ·i2Dot4AVX512(SB), NOSPLIT, $0-40
	MOVQ row+0(FP), SI
	MOVQ qp+8(FP), DI
	MOVQ k+16(FP), BX
	MOVQ nb+24(FP), CX
	MOVQ out+32(FP), DX
	LEAQ (DI)(BX*1), R8
	LEAQ (R8)(BX*1), R9
	LEAQ (R9)(BX*1), R10
	MOVL $0x03030303, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Z15
	MOVL $0x00010001, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Z14
	VPXORQ Z8, Z8, Z8
	VPXORQ Z9, Z9, Z9
	VPXORQ Z10, Z10, Z10
	VPXORQ Z11, Z11, Z11
	TESTQ CX, CX
	JEQ z4done
z4block:
	VMOVDQU64 (SI), Z1
	VPANDQ Z15, Z1, Z2
	VPMADDUBSW 0(DI), Z2, Z4
	VPMADDUBSW 0(R8), Z2, Z5
	VPMADDUBSW 0(R9), Z2, Z6
	VPMADDUBSW 0(R10), Z2, Z7
	VPSRLW $2, Z1, Z2
	VPANDQ Z15, Z2, Z2
	VPMADDUBSW 64(DI), Z2, Z3
	VPADDW Z3, Z4, Z4
	VPMADDUBSW 64(R8), Z2, Z3
	VPADDW Z3, Z5, Z5
	VPMADDUBSW 64(R9), Z2, Z3
	VPADDW Z3, Z6, Z6
	VPMADDUBSW 64(R10), Z2, Z3
	VPADDW Z3, Z7, Z7
	VPSRLW $4, Z1, Z2
	VPANDQ Z15, Z2, Z2
	VPMADDUBSW 128(DI), Z2, Z3
	VPADDW Z3, Z4, Z4
	VPMADDUBSW 128(R8), Z2, Z3
	VPADDW Z3, Z5, Z5
	VPMADDUBSW 128(R9), Z2, Z3
	VPADDW Z3, Z6, Z6
	VPMADDUBSW 128(R10), Z2, Z3
	VPADDW Z3, Z7, Z7
	VPSRLW $6, Z1, Z2
	VPANDQ Z15, Z2, Z2
	VPMADDUBSW 192(DI), Z2, Z3
	VPADDW Z3, Z4, Z4
	VPMADDUBSW 192(R8), Z2, Z3
	VPADDW Z3, Z5, Z5
	VPMADDUBSW 192(R9), Z2, Z3
	VPADDW Z3, Z6, Z6
	VPMADDUBSW 192(R10), Z2, Z3
	VPADDW Z3, Z7, Z7
	VPMADDWD Z14, Z4, Z4
	VPADDD Z4, Z8, Z8
	VPMADDWD Z14, Z5, Z5
	VPADDD Z5, Z9, Z9
	VPMADDWD Z14, Z6, Z6
	VPADDD Z6, Z10, Z10
	VPMADDWD Z14, Z7, Z7
	VPADDD Z7, Z11, Z11
	ADDQ $64, SI
	ADDQ $256, DI
	ADDQ $256, R8
	ADDQ $256, R9
	ADDQ $256, R10
	DECQ CX
	JNE z4block
z4done:
	VEXTRACTI64X4 $1, Z8, Y1
	VPADDD Y1, Y8, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	MOVL AX, 0(DX)
	VEXTRACTI64X4 $1, Z9, Y1
	VPADDD Y1, Y9, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	MOVL AX, 4(DX)
	VEXTRACTI64X4 $1, Z10, Y1
	VPADDD Y1, Y10, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	MOVL AX, 8(DX)
	VEXTRACTI64X4 $1, Z11, Y1
	VPADDD Y1, Y11, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	MOVL AX, 12(DX)
	VZEROUPPER
	RET

// AVX512-VNNI versions: VPDPBUSD multiplies the unsigned codes by the
// signed activations and accumulates int32 directly.

// func i2DotVNNI(row *byte, qp *int8, nb int, blk int) int32
// One row whose 64-byte blocks lie blk bytes apart (64 plain I2, 256 I2x4).
TEXT ·i2DotVNNI(SB), NOSPLIT, $0-36
	MOVQ row+0(FP), SI
	MOVQ qp+8(FP), DI
	MOVQ nb+16(FP), CX
	MOVQ blk+24(FP), R8
	MOVL $0x03030303, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Z15
	VPXORQ Z13, Z13, Z13
	VPXORQ Z12, Z12, Z12
	TESTQ CX, CX
	JEQ v1done
v1block:
	VMOVDQU64 (SI), Z1
	VPANDQ Z15, Z1, Z2
	VPDPBUSD (DI), Z2, Z13
	VPSRLW $2, Z1, Z2
	VPANDQ Z15, Z2, Z2
	VPDPBUSD 64(DI), Z2, Z12
	VPSRLW $4, Z1, Z2
	VPANDQ Z15, Z2, Z2
	VPDPBUSD 128(DI), Z2, Z13
	VPSRLW $6, Z1, Z2
	VPANDQ Z15, Z2, Z2
	VPDPBUSD 192(DI), Z2, Z12
	ADDQ R8, SI
	ADDQ $256, DI
	DECQ CX
	JNE v1block
v1done:
	VPADDD Z12, Z13, Z13
	VEXTRACTI64X4 $1, Z13, Y1
	VPADDD Y1, Y13, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	VZEROUPPER
	MOVL AX, ret+32(FP)
	RET

// func i2Dot4VNNI(row *byte, qp *int8, k int, nb int, blk int, out *int32)
// One row (blocks blk bytes apart) against four activation rows k apart.
TEXT ·i2Dot4VNNI(SB), NOSPLIT, $0-48
	MOVQ row+0(FP), SI
	MOVQ qp+8(FP), DI
	MOVQ k+16(FP), BX
	MOVQ nb+24(FP), CX
	MOVQ blk+32(FP), R11
	MOVQ out+40(FP), DX
	LEAQ (DI)(BX*1), R8
	LEAQ (R8)(BX*1), R9
	LEAQ (R9)(BX*1), R10
	MOVL $0x03030303, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Z15
	VPXORQ Z8, Z8, Z8
	VPXORQ Z9, Z9, Z9
	VPXORQ Z10, Z10, Z10
	VPXORQ Z11, Z11, Z11
	TESTQ CX, CX
	JEQ v4done
v4block:
	VMOVDQU64 (SI), Z1
	VPANDQ Z15, Z1, Z2
	VPDPBUSD 0(DI), Z2, Z8
	VPDPBUSD 0(R8), Z2, Z9
	VPDPBUSD 0(R9), Z2, Z10
	VPDPBUSD 0(R10), Z2, Z11
	VPSRLW $2, Z1, Z2
	VPANDQ Z15, Z2, Z2
	VPDPBUSD 64(DI), Z2, Z8
	VPDPBUSD 64(R8), Z2, Z9
	VPDPBUSD 64(R9), Z2, Z10
	VPDPBUSD 64(R10), Z2, Z11
	VPSRLW $4, Z1, Z2
	VPANDQ Z15, Z2, Z2
	VPDPBUSD 128(DI), Z2, Z8
	VPDPBUSD 128(R8), Z2, Z9
	VPDPBUSD 128(R9), Z2, Z10
	VPDPBUSD 128(R10), Z2, Z11
	VPSRLW $6, Z1, Z2
	VPANDQ Z15, Z2, Z2
	VPDPBUSD 192(DI), Z2, Z8
	VPDPBUSD 192(R8), Z2, Z9
	VPDPBUSD 192(R9), Z2, Z10
	VPDPBUSD 192(R10), Z2, Z11
	ADDQ R11, SI
	ADDQ $256, DI
	ADDQ $256, R8
	ADDQ $256, R9
	ADDQ $256, R10
	DECQ CX
	JNE v4block
v4done:
	VEXTRACTI64X4 $1, Z8, Y1
	VPADDD Y1, Y8, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	MOVL AX, 0(DX)
	VEXTRACTI64X4 $1, Z9, Y1
	VPADDD Y1, Y9, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	MOVL AX, 4(DX)
	VEXTRACTI64X4 $1, Z10, Y1
	VPADDD Y1, Y10, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	MOVL AX, 8(DX)
	VEXTRACTI64X4 $1, Z11, Y1
	VPADDD Y1, Y11, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	MOVL AX, 12(DX)
	VZEROUPPER
	RET

// func q8DotVNNI(w *int8, xu *byte, n int) int32   (n a multiple of 64)
// Σ w·(x+128) with x+128 as unsigned bytes (VPDPBUSD's unsigned operand);
// the caller subtracts 128·Σw.
TEXT ·q8DotVNNI(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ xu+8(FP), DI
	MOVQ n+16(FP), CX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	SHRQ $7, CX
	JEQ qvtail

qvloop:
	VMOVDQU64 (DI), Z2
	VPDPBUSD (SI), Z2, Z0
	VMOVDQU64 64(DI), Z3
	VPDPBUSD 64(SI), Z3, Z1
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNE qvloop

qvtail:
	MOVQ n+16(FP), CX
	ANDQ $64, CX
	JEQ qvsum
	VMOVDQU64 (DI), Z2
	VPDPBUSD (SI), Z2, Z0

qvsum:
	VPADDD Z1, Z0, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPADDD Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	VZEROUPPER
	MOVL AX, ret+24(FP)
	RET

// func i2RowsScaledVNNI(rows *byte, qp *int8, nb int, n int, total int32, xs float32, scale *float32, out *float32)
// n consecutive plain I2 rows against one activation row (decode), four
// at a time sharing each activation load (I2_ROW_DOTS), then one at a
// time: out[r] = float32(Σ code·q − total) · scale[r] · xs, rounded as the
// Go expression is (convert, then two float32 multiplies in that order).
TEXT ·i2RowsScaledVNNI(SB), NOSPLIT, $0-56
	MOVQ rows+0(FP), SI
	MOVQ qp+8(FP), R11
	MOVQ nb+16(FP), R12
	MOVQ n+24(FP), R13
	MOVQ scale+40(FP), R14
	MOVQ out+48(FP), DX
	TESTQ R13, R13
	JEQ vsend
	TESTQ R12, R12
	JEQ vsend
	I2_MASKS
	MOVQ R12, BX
	SHLQ $6, BX // row stride in bytes
	CMPQ R13, $4
	JLT vsone

vsquad:
	MOVQ SI, R15
	LEAQ (SI)(BX*1), R8
	LEAQ (R8)(BX*1), R9
	LEAQ (R9)(BX*1), R10
	MOVQ R11, DI
	MOVQ R12, CX
	ZERO_Z0_Z15
vsqblock:
	PREFETCHNTA SPFD(R15)
	PREFETCHNTA SPFD+64(R15)
	PREFETCHNTA SPFD+128(R15)
	PREFETCHNTA SPFD+192(R15)
	ADDQ $256, R15
	VMOVDQU64 (DI), Z24
	VMOVDQU64 64(DI), Z25
	VMOVDQU64 128(DI), Z26
	VMOVDQU64 192(DI), Z27
	I2_ROW_DOTS((SI), Z16, Z0, Z1, Z2, Z3)
	I2_ROW_DOTS((R8), Z17, Z4, Z5, Z6, Z7)
	I2_ROW_DOTS((R9), Z18, Z8, Z9, Z10, Z11)
	I2_ROW_DOTS((R10), Z19, Z12, Z13, Z14, Z15)
	ADDQ $64, SI
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, R10
	ADDQ $256, DI
	DECQ CX
	JNE vsqblock
	I2_QUAD_SUMS
	I2_QUAD_SCALE
	ADDQ $16, DX
	ADDQ $16, R14
	MOVQ R10, SI
	SUBQ $4, R13
	CMPQ R13, $4
	JGE vsquad
	TESTQ R13, R13
	JEQ vsend

vsone:
	MOVQ R11, DI
	MOVQ R12, CX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
vsoblock:
	VMOVDQU64 (SI), Z16
	VPANDQ Z28, Z16, Z20
	VPDPBUSD (DI), Z20, Z0
	VPANDQ Z29, Z16, Z21
	VPDPBUSD 64(DI), Z21, Z1
	VPANDQ Z30, Z16, Z22
	VPDPBUSD 128(DI), Z22, Z2
	VPANDQ Z31, Z16, Z23
	VPDPBUSD 192(DI), Z23, Z3
	ADDQ $64, SI
	ADDQ $256, DI
	DECQ CX
	JNE vsoblock
	VPSRAD $2, Z1, Z1
	VPSRAD $4, Z2, Z2
	VPSRAD $6, Z3, Z3
	VPADDD Z1, Z0, Z0
	VPADDD Z3, Z2, Z2
	VPADDD Z2, Z0, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPADDD Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	MOVL total+32(FP), AX
	VPBROADCASTD AX, X2
	VBROADCASTSS xs+36(FP), X3
	VPSUBD X2, X0, X0
	VCVTDQ2PS X0, X0
	VMULSS (R14), X0, X0
	VMULSS X3, X0, X0
	VMOVSS X0, (DX)
	ADDQ $4, DX
	ADDQ $4, R14
	DECQ R13
	JNE vsone
vsend:
	VZEROUPPER
	RET

// func q8RowsVNNI(w *int8, xu *byte, stride int, n64 int, nrows int, out *int32)
// out[r] = Σ w[r·stride+i]·xu[i] over the first n64 bytes (a multiple of
// 64) of each of nrows rows. Rows are taken one at a time, front to back,
// so the weights are read as one sequential stream, which the hardware
// prefetchers follow at full speed: on the 2-core Zen 4 VM, a four-row
// version (sharing each activation load, four streams 2560 bytes apart,
// software prefetch) read the BitNet-2B head at 15 GB/s per core against
// the 30 GB/s a plain read gets, this one at 29–30. The activations stay
// in L1; four accumulators hide VPDPBUSD's latency.
TEXT ·q8RowsVNNI(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ xu+8(FP), R11
	MOVQ stride+16(FP), BX
	MOVQ n64+24(FP), R12
	MOVQ nrows+32(FP), R13
	MOVQ out+40(FP), DX
	SHRQ $6, R12
	TESTQ R13, R13
	JEQ qrend
qrrow:
	MOVQ R12, CX
	XORQ AX, AX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	CMPQ CX, $4
	JLT qrtail
qrloop:
	VMOVDQU64 (R11)(AX*1), Z16
	VMOVDQU64 64(R11)(AX*1), Z17
	VMOVDQU64 128(R11)(AX*1), Z18
	VMOVDQU64 192(R11)(AX*1), Z19
	VPDPBUSD (SI)(AX*1), Z16, Z0
	VPDPBUSD 64(SI)(AX*1), Z17, Z1
	VPDPBUSD 128(SI)(AX*1), Z18, Z2
	VPDPBUSD 192(SI)(AX*1), Z19, Z3
	ADDQ $256, AX
	SUBQ $4, CX
	CMPQ CX, $4
	JGE qrloop
qrtail:
	TESTQ CX, CX
	JEQ qrsum
	VMOVDQU64 (R11)(AX*1), Z16
	VPDPBUSD (SI)(AX*1), Z16, Z0
	ADDQ $64, AX
	DECQ CX
	JMP qrtail
qrsum:
	VPADDD Z1, Z0, Z0
	VPADDD Z3, Z2, Z2
	VPADDD Z2, Z0, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPADDD Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	MOVL AX, (DX)
	ADDQ $4, DX
	ADDQ BX, SI
	DECQ R13
	JNE qrrow
qrend:
	VZEROUPPER
	RET

// func absMaxAVX512(x *float32, n int) float32   (n a multiple of 16)
TEXT ·absMaxAVX512(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z31
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	SHRQ $4, CX
	JEQ amsum
	TESTQ $1, CX
	JEQ amloop2
	VPANDD (SI), Z31, Z2
	VMAXPS Z2, Z0, Z0
	ADDQ $64, SI
	DECQ CX
	JEQ amsum
amloop2:
	VPANDD (SI), Z31, Z2
	VMAXPS Z2, Z0, Z0
	VPANDD 64(SI), Z31, Z3
	VMAXPS Z3, Z1, Z1
	ADDQ $128, SI
	SUBQ $2, CX
	JNE amloop2
amsum:
	VMAXPS Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VMAXPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4E, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xB1, X0, X1
	VMAXPS X1, X0, X0
	VZEROUPPER
	VMOVSS X0, ret+16(FP)
	RET

// func quantBlocksAVX512(x *float32, nb int, inv float32, q *int8, qp *int8, bsum *int32)
// For nb 256-wide blocks: q = round(x·inv) with ties away from zero (as
// math.Round of the float32 product), clamped to ±127, and bsum[b] = Σq.
// The rounding is exact: t = trunc(v), v − t is exact in float32, and t
// moves one away from zero when |v − t| ≥ 0.5. Each 16-byte group is also
// stored to qp in permuteI2 order, so no separate pass is needed.
#define QVEC(xo, qo, po) \
	VMULPS xo(SI), Z31, Z0; \
	VRNDSCALEPS $0x0B, Z0, Z1; \
	VSUBPS Z1, Z0, Z2; \
	VCMPPS $0x1D, Z29, Z2, K1; \
	VCMPPS $0x12, Z28, Z2, K2; \
	VADDPS Z30, Z1, K1, Z1; \
	VSUBPS Z30, Z1, K2, Z1; \
	VMINPS Z27, Z1, Z1; \
	VMAXPS Z26, Z1, Z1; \
	VCVTTPS2DQ Z1, Z3; \
	VPADDD Z3, Z10, Z10; \
	VPMOVSDB Z3, X4; \
	VMOVDQU X4, qo(DI); \
	VMOVDQU X4, po(R8)

TEXT ·quantBlocksAVX512(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	VBROADCASTSS inv+16(FP), Z31
	MOVQ q+24(FP), DI
	MOVQ qp+32(FP), R8
	MOVQ bsum+40(FP), DX
	MOVL $0x3f800000, AX // 1.0
	VPBROADCASTD AX, Z30
	MOVL $0x3f000000, AX // 0.5
	VPBROADCASTD AX, Z29
	MOVL $0xbf000000, AX // -0.5
	VPBROADCASTD AX, Z28
	MOVL $0x42fe0000, AX // 127
	VPBROADCASTD AX, Z27
	MOVL $0xc2fe0000, AX // -127
	VPBROADCASTD AX, Z26
	TESTQ CX, CX
	JEQ qbdone
qbblock:
	VPXORD Z10, Z10, Z10
	QVEC(0, 0, 0)
	QVEC(64, 16, 16)
	QVEC(128, 32, 64)
	QVEC(192, 48, 80)
	QVEC(256, 64, 128)
	QVEC(320, 80, 144)
	QVEC(384, 96, 192)
	QVEC(448, 112, 208)
	QVEC(512, 128, 32)
	QVEC(576, 144, 48)
	QVEC(640, 160, 96)
	QVEC(704, 176, 112)
	QVEC(768, 192, 160)
	QVEC(832, 208, 176)
	QVEC(896, 224, 224)
	QVEC(960, 240, 240)
	VEXTRACTI64X4 $1, Z10, Y11
	VPADDD Y11, Y10, Y10
	VEXTRACTI128 $1, Y10, X11
	VPADDD X11, X10, X10
	VPSHUFD $0x4E, X10, X11
	VPADDD X11, X10, X10
	VPSHUFD $0xB1, X10, X11
	VPADDD X11, X10, X10
	VMOVD X10, AX
	MOVL AX, (DX)
	ADDQ $1024, SI
	ADDQ $256, DI
	ADDQ $256, R8
	ADDQ $4, DX
	DECQ CX
	JNE qbblock
qbdone:
	VZEROUPPER
	RET

// func axpyF32AVX2(a float32, x, y *float32, n int)   (n a multiple of 16)
// y += a·x (attention's weighted sum of values).
TEXT ·axpyF32AVX2(SB), NOSPLIT, $0-32
	VBROADCASTSS a+0(FP), Y15
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	MOVQ n+24(FP), CX
	SHRQ $4, CX
	JEQ axdone
axloop:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VFMADD231PS (SI), Y15, Y0
	VFMADD231PS 32(SI), Y15, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNE axloop
axdone:
	VZEROUPPER
	RET

// SUM4_SCALED reduces four dot products held as register pairs (Z0+Z1,
// Z2+Z3, Z4+Z5, Z6+Z7) to X0's four lanes, times X15: the four share the
// last steps (three VHADDPS for four sums instead of four shuffle chains).
#define SUM4_SCALED \
	VADDPS Z1, Z0, Z0; VADDPS Z3, Z2, Z2; VADDPS Z5, Z4, Z4; VADDPS Z7, Z6, Z6; \
	VEXTRACTF64X4 $1, Z0, Y1; VADDPS Y1, Y0, Y0; \
	VEXTRACTF64X4 $1, Z2, Y3; VADDPS Y3, Y2, Y2; \
	VEXTRACTF64X4 $1, Z4, Y5; VADDPS Y5, Y4, Y4; \
	VEXTRACTF64X4 $1, Z6, Y7; VADDPS Y7, Y6, Y6; \
	VEXTRACTF128 $1, Y0, X1; VADDPS X1, X0, X0; \
	VEXTRACTF128 $1, Y2, X3; VADDPS X3, X2, X2; \
	VEXTRACTF128 $1, Y4, X5; VADDPS X5, X4, X4; \
	VEXTRACTF128 $1, Y6, X7; VADDPS X7, X6, X6; \
	VHADDPS X2, X0, X0; VHADDPS X6, X4, X4; VHADDPS X4, X0, X0; \
	VMULPS X15, X0, X0

// func attnScores128(q *float32, k *float32, stride int, n int, scale float32, out *float32)
// out[p] = (q · k[p·stride : p·stride+128]) · scale for p < n: one head's
// attention scores over n cached positions, q held in registers.
TEXT ·attnScores128(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ k+8(FP), DI
	MOVQ stride+16(FP), BX
	SHLQ $2, BX
	MOVQ n+24(FP), CX
	VBROADCASTSS scale+32(FP), X15
	MOVQ out+40(FP), DX
	VMOVUPS (SI), Z16
	VMOVUPS 64(SI), Z17
	VMOVUPS 128(SI), Z18
	VMOVUPS 192(SI), Z19
	VMOVUPS 256(SI), Z20
	VMOVUPS 320(SI), Z21
	VMOVUPS 384(SI), Z22
	VMOVUPS 448(SI), Z23
	// Four positions per pass: their reductions share the last steps
	// (three VHADDPS for four sums instead of four shuffle chains).
	LEAQ (BX)(BX*2), R11 // 3·stride
asquad:
	CMPQ CX, $4
	JLT astail
	// Prefetch the four rows eight positions ahead, every other line
	// (the adjacent-line prefetcher fetches the rest): rows may be a page
	// or more apart (stride is the caller's).
	LEAQ (DI)(BX*8), R12
	PREFETCHT0 (R12)
	PREFETCHT0 128(R12)
	PREFETCHT0 256(R12)
	PREFETCHT0 384(R12)
	PREFETCHT0 (R12)(BX*1)
	PREFETCHT0 128(R12)(BX*1)
	PREFETCHT0 256(R12)(BX*1)
	PREFETCHT0 384(R12)(BX*1)
	PREFETCHT0 (R12)(BX*2)
	PREFETCHT0 128(R12)(BX*2)
	PREFETCHT0 256(R12)(BX*2)
	PREFETCHT0 384(R12)(BX*2)
	PREFETCHT0 (R12)(R11*1)
	PREFETCHT0 128(R12)(R11*1)
	PREFETCHT0 256(R12)(R11*1)
	PREFETCHT0 384(R12)(R11*1)
	VMULPS (DI), Z16, Z0
	VMULPS 64(DI), Z17, Z1
	VMULPS (DI)(BX*1), Z16, Z2
	VMULPS 64(DI)(BX*1), Z17, Z3
	VMULPS (DI)(BX*2), Z16, Z4
	VMULPS 64(DI)(BX*2), Z17, Z5
	VMULPS (DI)(R11*1), Z16, Z6
	VMULPS 64(DI)(R11*1), Z17, Z7
	VFMADD231PS 128(DI), Z18, Z0
	VFMADD231PS 192(DI), Z19, Z1
	VFMADD231PS 128(DI)(BX*1), Z18, Z2
	VFMADD231PS 192(DI)(BX*1), Z19, Z3
	VFMADD231PS 128(DI)(BX*2), Z18, Z4
	VFMADD231PS 192(DI)(BX*2), Z19, Z5
	VFMADD231PS 128(DI)(R11*1), Z18, Z6
	VFMADD231PS 192(DI)(R11*1), Z19, Z7
	VFMADD231PS 256(DI), Z20, Z0
	VFMADD231PS 320(DI), Z21, Z1
	VFMADD231PS 256(DI)(BX*1), Z20, Z2
	VFMADD231PS 320(DI)(BX*1), Z21, Z3
	VFMADD231PS 256(DI)(BX*2), Z20, Z4
	VFMADD231PS 320(DI)(BX*2), Z21, Z5
	VFMADD231PS 256(DI)(R11*1), Z20, Z6
	VFMADD231PS 320(DI)(R11*1), Z21, Z7
	VFMADD231PS 384(DI), Z22, Z0
	VFMADD231PS 448(DI), Z23, Z1
	VFMADD231PS 384(DI)(BX*1), Z22, Z2
	VFMADD231PS 448(DI)(BX*1), Z23, Z3
	VFMADD231PS 384(DI)(BX*2), Z22, Z4
	VFMADD231PS 448(DI)(BX*2), Z23, Z5
	VFMADD231PS 384(DI)(R11*1), Z22, Z6
	VFMADD231PS 448(DI)(R11*1), Z23, Z7
	SUM4_SCALED
	VMOVUPS X0, (DX)
	LEAQ (DI)(BX*4), DI
	ADDQ $16, DX
	SUBQ $4, CX
	JMP asquad
astail:
	TESTQ CX, CX
	JEQ asdone
asloop:
	VMULPS (DI), Z16, Z0
	VMULPS 64(DI), Z17, Z1
	VFMADD231PS 128(DI), Z18, Z0
	VFMADD231PS 192(DI), Z19, Z1
	VFMADD231PS 256(DI), Z20, Z0
	VFMADD231PS 320(DI), Z21, Z1
	VFMADD231PS 384(DI), Z22, Z0
	VFMADD231PS 448(DI), Z23, Z1
	VADDPS Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0x4E, X0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0xB1, X0, X1
	VADDPS X1, X0, X0
	VMULSS X15, X0, X0
	VMOVSS X0, (DX)
	ADDQ BX, DI
	ADDQ $4, DX
	DECQ CX
	JNE asloop
asdone:
	VZEROUPPER
	RET

// func attnMix128(w *float32, v *float32, stride int, n int, o *float32)
// o[0:128] = Σ_p w[p] · v[p·stride : p·stride+128], o held in registers.
TEXT ·attnMix128(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ v+8(FP), DI
	MOVQ stride+16(FP), BX
	SHLQ $2, BX
	MOVQ n+24(FP), CX
	MOVQ o+32(FP), DX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	TESTQ CX, CX
	JEQ amxdone
amxloop:
	LEAQ (DI)(BX*8), R12
	PREFETCHT0 (R12)
	PREFETCHT0 128(R12)
	PREFETCHT0 256(R12)
	PREFETCHT0 384(R12)
	VBROADCASTSS (SI), Z8
	VFMADD231PS (DI), Z8, Z0
	VFMADD231PS 64(DI), Z8, Z1
	VFMADD231PS 128(DI), Z8, Z2
	VFMADD231PS 192(DI), Z8, Z3
	VFMADD231PS 256(DI), Z8, Z4
	VFMADD231PS 320(DI), Z8, Z5
	VFMADD231PS 384(DI), Z8, Z6
	VFMADD231PS 448(DI), Z8, Z7
	ADDQ $4, SI
	ADDQ BX, DI
	DECQ CX
	JNE amxloop
amxdone:
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	VMOVUPS Z2, 128(DX)
	VMOVUPS Z3, 192(DX)
	VMOVUPS Z4, 256(DX)
	VMOVUPS Z5, 320(DX)
	VMOVUPS Z6, 384(DX)
	VMOVUPS Z7, 448(DX)
	VZEROUPPER
	RET

// func attnScores4x128(q *float32, k *float32, stride int, n int, scale float32, out *float32, ldo int)
// Four query heads (q: 4×128 floats) against n cached keys stride floats
// apart: out[h·ldo + p] = (q_h·k_p)·scale. Each key row is loaded once
// into registers for all four heads (GQA: the heads share the KV head),
// and the four sums reduce together (three VHADDPS for four results).
TEXT ·attnScores4x128(SB), NOSPLIT, $0-56
	MOVQ q+0(FP), SI
	MOVQ k+8(FP), DI
	MOVQ stride+16(FP), BX
	SHLQ $2, BX
	MOVQ n+24(FP), CX
	VBROADCASTSS scale+32(FP), X15
	MOVQ out+40(FP), DX
	MOVQ ldo+48(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	TESTQ CX, CX
	JEQ a4done
a4loop:
	VMOVUPS (DI), Z16
	VMOVUPS 64(DI), Z17
	VMOVUPS 128(DI), Z18
	VMOVUPS 192(DI), Z19
	VMOVUPS 256(DI), Z20
	VMOVUPS 320(DI), Z21
	VMOVUPS 384(DI), Z22
	VMOVUPS 448(DI), Z23
	VMULPS (SI), Z16, Z0
	VMULPS 64(SI), Z17, Z1
	VMULPS 512(SI), Z16, Z2
	VMULPS 576(SI), Z17, Z3
	VMULPS 1024(SI), Z16, Z4
	VMULPS 1088(SI), Z17, Z5
	VMULPS 1536(SI), Z16, Z6
	VMULPS 1600(SI), Z17, Z7
	VFMADD231PS 128(SI), Z18, Z0
	VFMADD231PS 192(SI), Z19, Z1
	VFMADD231PS 640(SI), Z18, Z2
	VFMADD231PS 704(SI), Z19, Z3
	VFMADD231PS 1152(SI), Z18, Z4
	VFMADD231PS 1216(SI), Z19, Z5
	VFMADD231PS 1664(SI), Z18, Z6
	VFMADD231PS 1728(SI), Z19, Z7
	VFMADD231PS 256(SI), Z20, Z0
	VFMADD231PS 320(SI), Z21, Z1
	VFMADD231PS 768(SI), Z20, Z2
	VFMADD231PS 832(SI), Z21, Z3
	VFMADD231PS 1280(SI), Z20, Z4
	VFMADD231PS 1344(SI), Z21, Z5
	VFMADD231PS 1792(SI), Z20, Z6
	VFMADD231PS 1856(SI), Z21, Z7
	VFMADD231PS 384(SI), Z22, Z0
	VFMADD231PS 448(SI), Z23, Z1
	VFMADD231PS 896(SI), Z22, Z2
	VFMADD231PS 960(SI), Z23, Z3
	VFMADD231PS 1408(SI), Z22, Z4
	VFMADD231PS 1472(SI), Z23, Z5
	VFMADD231PS 1920(SI), Z22, Z6
	VFMADD231PS 1984(SI), Z23, Z7
	SUM4_SCALED
	VMOVSS X0, (DX)
	VEXTRACTPS $1, X0, (DX)(R8*1)
	VEXTRACTPS $2, X0, (DX)(R8*2)
	VEXTRACTPS $3, X0, (DX)(R9*1)
	ADDQ BX, DI
	ADDQ $4, DX
	DECQ CX
	JNE a4loop
a4done:
	VZEROUPPER
	RET

// func attnMix4x128(w *float32, ldw int, v *float32, stride int, n int, o *float32)
// o[h·128 : h·128+128] = Σ_p w[h·ldw + p] · v[p·stride : p·stride+128] for
// four heads h. Each value row is loaded once for all four heads; the
// 4×128 outputs take 32 registers, so dims 0–63 and 64–127 are two passes.
TEXT ·attnMix4x128(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ ldw+8(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	MOVQ v+16(FP), DI
	MOVQ stride+24(FP), BX
	SHLQ $2, BX
	MOVQ n+32(FP), CX
	MOVQ o+40(FP), DX
	XORQ R10, R10
m4half:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	MOVQ SI, R11
	LEAQ (DI)(R10*1), R12
	MOVQ CX, R13
	TESTQ R13, R13
	JEQ m4store
m4loop:
	VMOVUPS (R12), Z16
	VMOVUPS 64(R12), Z17
	VMOVUPS 128(R12), Z18
	VMOVUPS 192(R12), Z19
	VBROADCASTSS (R11), Z20
	VBROADCASTSS (R11)(R8*1), Z21
	VBROADCASTSS (R11)(R8*2), Z22
	VBROADCASTSS (R11)(R9*1), Z23
	VFMADD231PS Z16, Z20, Z0
	VFMADD231PS Z17, Z20, Z1
	VFMADD231PS Z18, Z20, Z2
	VFMADD231PS Z19, Z20, Z3
	VFMADD231PS Z16, Z21, Z4
	VFMADD231PS Z17, Z21, Z5
	VFMADD231PS Z18, Z21, Z6
	VFMADD231PS Z19, Z21, Z7
	VFMADD231PS Z16, Z22, Z8
	VFMADD231PS Z17, Z22, Z9
	VFMADD231PS Z18, Z22, Z10
	VFMADD231PS Z19, Z22, Z11
	VFMADD231PS Z16, Z23, Z12
	VFMADD231PS Z17, Z23, Z13
	VFMADD231PS Z18, Z23, Z14
	VFMADD231PS Z19, Z23, Z15
	ADDQ $4, R11
	ADDQ BX, R12
	DECQ R13
	JNE m4loop
m4store:
	LEAQ (DX)(R10*1), R14
	VMOVUPS Z0, (R14)
	VMOVUPS Z1, 64(R14)
	VMOVUPS Z2, 128(R14)
	VMOVUPS Z3, 192(R14)
	VMOVUPS Z4, 512(R14)
	VMOVUPS Z5, 576(R14)
	VMOVUPS Z6, 640(R14)
	VMOVUPS Z7, 704(R14)
	VMOVUPS Z8, 1024(R14)
	VMOVUPS Z9, 1088(R14)
	VMOVUPS Z10, 1152(R14)
	VMOVUPS Z11, 1216(R14)
	VMOVUPS Z12, 1536(R14)
	VMOVUPS Z13, 1600(R14)
	VMOVUPS Z14, 1664(R14)
	VMOVUPS Z15, 1728(R14)
	ADDQ $256, R10
	CMPQ R10, $512
	JLT m4half
	VZEROUPPER
	RET

// func relu2MulAVX512(x *float32, y *float32, n int)   (n a positive multiple of 16)
// x[i] = max(x[i], 0)²·y[i]. VMAXPS with 0 first returns x when x is NaN
// or ±0, so the result matches the portable loop bit for bit.
TEXT ·relu2MulAVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	VPXORD Z1, Z1, Z1
r2loop:
	VMAXPS (DI), Z1, Z0
	VMULPS Z0, Z0, Z0
	VMULPS (SI), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ $64, DI
	ADDQ $64, SI
	DECQ CX
	JNE r2loop
	VZEROUPPER
	RET

// func maxAVX512(x *float32, n int) float32   (n a positive multiple of 16)
TEXT ·maxAVX512(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VMOVUPS (SI), Z0
	ADDQ $64, SI
	SHRQ $4, CX
	DECQ CX
	JEQ mxsum
mxloop:
	VMAXPS (SI), Z0, Z0
	ADDQ $64, SI
	DECQ CX
	JNE mxloop
mxsum:
	VEXTRACTF64X4 $1, Z0, Y1
	VMAXPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4E, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xB1, X0, X1
	VMAXPS X1, X0, X0
	VZEROUPPER
	VMOVSS X0, ret+16(FP)
	RET

// func expSubSumAVX512(x *float32, n int, mx float32) float32   (n a multiple of 16)
// x[i] = exp(x[i] − mx) in place, returning Σ x[i]: softmax's numerators.
// exp as Cephes' expf: n = round(x·log2 e), r = x − n·ln 2 (in two
// parts), e^r by its degree-7 polynomial (≈1 ulp), times 2^n (VSCALEFPS).
// Arguments below −87.3 (e^x under float32's smallest normal) are clamped.
TEXT ·expSubSumAVX512(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS mx+16(FP), Z31
	MOVL $0xc2aeac4f, AX // -87.33654
	VPBROADCASTD AX, Z30
	MOVL $0x3fb8aa3b, AX // log2(e)
	VPBROADCASTD AX, Z29
	MOVL $0x3f318000, AX // ln 2, high part (0.693359375)
	VPBROADCASTD AX, Z28
	MOVL $0xb95e8083, AX // ln 2, low part (-2.12194440e-4)
	VPBROADCASTD AX, Z27
	MOVL $0x39506967, AX // 1.9875691500e-4
	VPBROADCASTD AX, Z26
	MOVL $0x3ab743ce, AX // 1.3981999507e-3
	VPBROADCASTD AX, Z25
	MOVL $0x3c088908, AX // 8.3334519073e-3
	VPBROADCASTD AX, Z24
	MOVL $0x3d2aa9c1, AX // 4.1665795894e-2
	VPBROADCASTD AX, Z23
	MOVL $0x3e2aaaaa, AX // 1.6666665459e-1
	VPBROADCASTD AX, Z22
	MOVL $0x3f000000, AX // 0.5
	VPBROADCASTD AX, Z21
	MOVL $0x3f800000, AX // 1
	VPBROADCASTD AX, Z20
	VPXORD Z0, Z0, Z0
	SHRQ $4, CX
	JEQ exdone
exloop:
	VMOVUPS (SI), Z1
	VSUBPS Z31, Z1, Z1
	VMAXPS Z30, Z1, Z1
	VMULPS Z29, Z1, Z2
	VRNDSCALEPS $0, Z2, Z2
	VFNMADD231PS Z28, Z2, Z1
	VFNMADD231PS Z27, Z2, Z1
	VMOVAPS Z26, Z3
	VFMADD213PS Z25, Z1, Z3
	VFMADD213PS Z24, Z1, Z3
	VFMADD213PS Z23, Z1, Z3
	VFMADD213PS Z22, Z1, Z3
	VFMADD213PS Z21, Z1, Z3
	VMULPS Z1, Z1, Z4
	VFMADD213PS Z1, Z4, Z3
	VADDPS Z20, Z3, Z3
	VSCALEFPS Z2, Z3, Z3
	VMOVUPS Z3, (SI)
	VADDPS Z3, Z0, Z0
	ADDQ $64, SI
	DECQ CX
	JNE exloop
exdone:
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0x4E, X0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0xB1, X0, X1
	VADDPS X1, X0, X0
	VZEROUPPER
	VMOVSS X0, ret+24(FP)
	RET

// func sumSquaresAVX512(x *float32, n int) float64   (n a multiple of 16)
// Σ x² in float64 (as rmsnorm's portable loop, in a different order).
TEXT ·sumSquaresAVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VXORPD Z0, Z0, Z0
	VXORPD Z1, Z1, Z1
	SHRQ $4, CX
	JEQ ssdone
ssloop:
	VCVTPS2PD (SI), Z2
	VCVTPS2PD 32(SI), Z3
	VFMADD231PD Z2, Z2, Z0
	VFMADD231PD Z3, Z3, Z1
	ADDQ $64, SI
	DECQ CX
	JNE ssloop
ssdone:
	VADDPD Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPD Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VPERMILPD $1, X0, X1
	VADDSD X1, X0, X0
	VZEROUPPER
	VMOVSD X0, ret+16(FP)
	RET

// func scaleMulAVX512(dst, x, w *float32, n int, inv float32)   (n a multiple of 16)
// dst[i] = x[i]·inv·w[i], rounded as the Go expression (two multiplies).
TEXT ·scaleMulAVX512(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSS inv+32(FP), Z31
	SHRQ $4, CX
	JEQ smdone
smloop:
	VMULPS (SI), Z31, Z0
	VMULPS (DX), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, DI
	DECQ CX
	JNE smloop
smdone:
	VZEROUPPER
	RET

// func i2x4RowsScaledVNNI(groups *byte, qp *int8, nb int, ngroups int, total int32, xs float32, scale *float32, out *float32)
// i2RowsScaledVNNI for I2x4 matrices (ngroups·4 rows): the weights are
// one sequential stream, read through a single pointer.
TEXT ·i2x4RowsScaledVNNI(SB), NOSPLIT, $0-56
	MOVQ groups+0(FP), SI
	MOVQ qp+8(FP), R11
	MOVQ nb+16(FP), R12
	MOVQ ngroups+24(FP), R13
	MOVQ scale+40(FP), R14
	MOVQ out+48(FP), DX
	TESTQ R13, R13
	JEQ xsend
	TESTQ R12, R12
	JEQ xsend
	I2_MASKS
xsgroup:
	MOVQ R11, DI
	MOVQ R12, CX
	ZERO_Z0_Z15
xsblock:
	VMOVDQU64 (DI), Z24
	VMOVDQU64 64(DI), Z25
	VMOVDQU64 128(DI), Z26
	VMOVDQU64 192(DI), Z27
	I2_ROW_DOTS((SI), Z16, Z0, Z1, Z2, Z3)
	I2_ROW_DOTS(64(SI), Z17, Z4, Z5, Z6, Z7)
	I2_ROW_DOTS(128(SI), Z18, Z8, Z9, Z10, Z11)
	I2_ROW_DOTS(192(SI), Z19, Z12, Z13, Z14, Z15)
	ADDQ $256, SI
	ADDQ $256, DI
	DECQ CX
	JNE xsblock
	I2_QUAD_SUMS
	I2_QUAD_SCALE
	ADDQ $16, DX
	ADDQ $16, R14
	DECQ R13
	JNE xsgroup
xsend:
	VZEROUPPER
	RET

