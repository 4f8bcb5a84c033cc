//go:build !purego

#include "textflag.h"
#include "hsum_amd64.h"

// AVX2+FMA versions of the glue kernels (the small passes between the
// products: activation quantization, rmsnorm, softmax, BitNet's gate and
// one head of attention) for CPUs without AVX-512. Only VEX-encoded
// instructions: a legacy-SSE one on an X register costs an SSE/AVX state
// transition (~120 ns per call on the Zen 3 VM); TestKernelsUseOnlyVEX
// checks this file.

// glueconst: VPERMD's dword order after the two in-lane packs of
// quantBlocksAVX2, then expSubSumAVX2's coefficients read from memory.

DATA glueconst<>+0(SB)/4, $0
DATA glueconst<>+4(SB)/4, $4
DATA glueconst<>+8(SB)/4, $1
DATA glueconst<>+12(SB)/4, $5
DATA glueconst<>+16(SB)/4, $2
DATA glueconst<>+20(SB)/4, $6
DATA glueconst<>+24(SB)/4, $3
DATA glueconst<>+28(SB)/4, $7
DATA glueconst<>+32(SB)/4, $0x3d2aa9c1
DATA glueconst<>+36(SB)/4, $0x3d2aa9c1
DATA glueconst<>+40(SB)/4, $0x3d2aa9c1
DATA glueconst<>+44(SB)/4, $0x3d2aa9c1
DATA glueconst<>+48(SB)/4, $0x3d2aa9c1
DATA glueconst<>+52(SB)/4, $0x3d2aa9c1
DATA glueconst<>+56(SB)/4, $0x3d2aa9c1
DATA glueconst<>+60(SB)/4, $0x3d2aa9c1
DATA glueconst<>+64(SB)/4, $0x3e2aaaaa
DATA glueconst<>+68(SB)/4, $0x3e2aaaaa
DATA glueconst<>+72(SB)/4, $0x3e2aaaaa
DATA glueconst<>+76(SB)/4, $0x3e2aaaaa
DATA glueconst<>+80(SB)/4, $0x3e2aaaaa
DATA glueconst<>+84(SB)/4, $0x3e2aaaaa
DATA glueconst<>+88(SB)/4, $0x3e2aaaaa
DATA glueconst<>+92(SB)/4, $0x3e2aaaaa
DATA glueconst<>+96(SB)/4, $0x3f000000
DATA glueconst<>+100(SB)/4, $0x3f000000
DATA glueconst<>+104(SB)/4, $0x3f000000
DATA glueconst<>+108(SB)/4, $0x3f000000
DATA glueconst<>+112(SB)/4, $0x3f000000
DATA glueconst<>+116(SB)/4, $0x3f000000
DATA glueconst<>+120(SB)/4, $0x3f000000
DATA glueconst<>+124(SB)/4, $0x3f000000
GLOBL glueconst<>(SB), RODATA|NOPTR, $128

// func absMaxAVX2(x *float32, n int) float32   (n a positive multiple of 8)
TEXT ·absMaxAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVL $0x7fffffff, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	SHRQ $3, CX
am4:
	CMPQ CX, $4
	JLT am1
	VANDPS (SI), Y15, Y4
	VMAXPS Y4, Y0, Y0
	VANDPS 32(SI), Y15, Y5
	VMAXPS Y5, Y1, Y1
	VANDPS 64(SI), Y15, Y6
	VMAXPS Y6, Y2, Y2
	VANDPS 96(SI), Y15, Y7
	VMAXPS Y7, Y3, Y3
	ADDQ $128, SI
	SUBQ $4, CX
	JMP am4
am1:
	TESTQ CX, CX
	JEQ amsum
	VANDPS (SI), Y15, Y4
	VMAXPS Y4, Y0, Y0
	ADDQ $32, SI
	DECQ CX
	JMP am1
amsum:
	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4E, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xB1, X0, X1
	VMAXPS X1, X0, X0
	VZEROUPPER
	VMOVSS X0, ret+16(FP)
	RET

// func maxAVX2(x *float32, n int) float32   (n a positive multiple of 8)
TEXT ·maxAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VMOVUPS (SI), Y0
	VMOVAPS Y0, Y1
	VMOVAPS Y0, Y2
	VMOVAPS Y0, Y3
	SHRQ $3, CX
mx4:
	CMPQ CX, $4
	JLT mx1
	VMAXPS (SI), Y0, Y0
	VMAXPS 32(SI), Y1, Y1
	VMAXPS 64(SI), Y2, Y2
	VMAXPS 96(SI), Y3, Y3
	ADDQ $128, SI
	SUBQ $4, CX
	JMP mx4
mx1:
	TESTQ CX, CX
	JEQ mxsum
	VMAXPS (SI), Y0, Y0
	ADDQ $32, SI
	DECQ CX
	JMP mx1
mxsum:
	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4E, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xB1, X0, X1
	VMAXPS X1, X0, X0
	VZEROUPPER
	VMOVSS X0, ret+16(FP)
	RET

// func relu2MulAVX2(x *float32, y *float32, n int)   (n a positive multiple of 8)
// x[i] = max(x[i], 0)²·y[i]. VMAXPS with 0 first returns x when x is NaN
// or ±0, so the result matches the portable loop bit for bit.
TEXT ·relu2MulAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	VXORPS Y15, Y15, Y15
r2two:
	CMPQ CX, $2
	JLT r2one
	VMAXPS (DI), Y15, Y0
	VMAXPS 32(DI), Y15, Y1
	VMULPS Y0, Y0, Y0
	VMULPS Y1, Y1, Y1
	VMULPS (SI), Y0, Y0
	VMULPS 32(SI), Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $64, DI
	ADDQ $64, SI
	SUBQ $2, CX
	JMP r2two
r2one:
	TESTQ CX, CX
	JEQ r2done
	VMAXPS (DI), Y15, Y0
	VMULPS Y0, Y0, Y0
	VMULPS (SI), Y0, Y0
	VMOVUPS Y0, (DI)
r2done:
	VZEROUPPER
	RET

// func sumSquaresAVX2(x *float32, n int) float64   (n a multiple of 8)
// Σ x² in float64 (each square exact; the sums in another order than
// the portable loop).
TEXT ·sumSquaresAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	SHRQ $3, CX
sstwo:
	CMPQ CX, $2
	JLT ssone
	VCVTPS2PD (SI), Y4
	VCVTPS2PD 16(SI), Y5
	VCVTPS2PD 32(SI), Y6
	VCVTPS2PD 48(SI), Y7
	VFMADD231PD Y4, Y4, Y0
	VFMADD231PD Y5, Y5, Y1
	VFMADD231PD Y6, Y6, Y2
	VFMADD231PD Y7, Y7, Y3
	ADDQ $64, SI
	SUBQ $2, CX
	JMP sstwo
ssone:
	TESTQ CX, CX
	JEQ sssum
	VCVTPS2PD (SI), Y4
	VCVTPS2PD 16(SI), Y5
	VFMADD231PD Y4, Y4, Y0
	VFMADD231PD Y5, Y5, Y1
sssum:
	VADDPD Y1, Y0, Y0
	VADDPD Y3, Y2, Y2
	VADDPD Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VPERMILPD $1, X0, X1
	VADDSD X1, X0, X0
	VZEROUPPER
	VMOVSD X0, ret+16(FP)
	RET

// func scaleMulAVX2(dst, x, w *float32, n int, inv float32)   (n a multiple of 8)
// dst[i] = x[i]·inv·w[i], rounded as the Go expression (two multiplies);
// dst may be x.
TEXT ·scaleMulAVX2(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSS inv+32(FP), Y15
	SHRQ $3, CX
smtwo:
	CMPQ CX, $2
	JLT smone
	VMULPS (SI), Y15, Y0
	VMULPS 32(SI), Y15, Y1
	VMULPS (DX), Y0, Y0
	VMULPS 32(DX), Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, DI
	SUBQ $2, CX
	JMP smtwo
smone:
	TESTQ CX, CX
	JEQ smdone
	VMULPS (SI), Y15, Y0
	VMULPS (DX), Y0, Y0
	VMOVUPS Y0, (DI)
smdone:
	VZEROUPPER
	RET

// func quantBlocksAVX2(x *float32, nb int, inv float32, q *int8, bsum *int32)
// quantBlocksAVX512 in 8 lanes: for nb 256-wide blocks, q = round(x·inv)
// with ties away from zero (as math.Round of the float32 product),
// clamped to ±127, and bsum[b] = Σq. The rounding is exact: t = trunc(v),
// v − t is exact in float32, and t moves one away from zero when
// |v − t| ≥ 0.5 (the compare masks ANDed with 1.0). 32 values at a time
// are packed to bytes: two in-lane signed packs, then VPERMD puts the
// dwords back in order.
#define QV8(off, t, v, d) \
	VMULPS off(SI), Y15, v; \
	VROUNDPS $0x0B, v, t; \
	VSUBPS t, v, d; \
	VCMPPS $0x1D, Y13, d, v; \
	VANDPS Y14, v, v; \
	VADDPS v, t, t; \
	VCMPPS $0x12, Y12, d, d; \
	VANDPS Y14, d, d; \
	VSUBPS d, t, t; \
	VMINPS Y11, t, t; \
	VMAXPS Y10, t, t; \
	VCVTTPS2DQ t, t; \
	VPADDD t, Y8, Y8

TEXT ·quantBlocksAVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	VBROADCASTSS inv+16(FP), Y15
	MOVQ q+24(FP), DI
	MOVQ bsum+32(FP), DX
	MOVL $0x3f800000, AX // 1.0
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x3f000000, AX // 0.5
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVL $0xbf000000, AX // -0.5
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	MOVL $0x42fe0000, AX // 127
	VMOVD AX, X11
	VPBROADCASTD X11, Y11
	MOVL $0xc2fe0000, AX // -127
	VMOVD AX, X10
	VPBROADCASTD X10, Y10
	VMOVDQU glueconst<>+0(SB), Y9
	TESTQ CX, CX
	JEQ qbdone
qbblock:
	VPXOR Y8, Y8, Y8
	MOVQ $8, R9
qbgroup:
	QV8(0, Y0, Y4, Y5)
	QV8(32, Y1, Y6, Y7)
	QV8(64, Y2, Y4, Y5)
	QV8(96, Y3, Y6, Y7)
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD Y0, Y9, Y0
	VMOVDQU Y0, (DI)
	ADDQ $128, SI
	ADDQ $32, DI
	DECQ R9
	JNE qbgroup
	VEXTRACTI128 $1, Y8, X4
	VPADDD X4, X8, X8
	VPSHUFD $0x4E, X8, X4
	VPADDD X4, X8, X8
	VPSHUFD $0xB1, X8, X4
	VPADDD X4, X8, X8
	VMOVD X8, AX
	MOVL AX, (DX)
	ADDQ $4, DX
	DECQ CX
	JNE qbblock
qbdone:
	VZEROUPPER
	RET

// EXPF_CONSTS and EXPF_Y0 are Cephes' float32 expf in 8 lanes, shared by
// expSubSumAVX2 and siluMulAVX2. EXPF_CONSTS loads the constants into
// Y5, Y6 and Y8–Y14 (Y14/Y13 the clamp −87.33654 and 88, Y12 log2 e,
// Y11/Y10 ln 2 in two parts, Y9, Y6, Y5 the first coefficients, Y8 1.0
// and the exponent bias) using AX; EXPF_Y0 sets Y2 = e^Y0 for Y0 already
// clamped, using Y0, Y1 and Y3 (n = round(x·log2 e), r = x − n·ln 2, e^r
// by its degree-7 polynomial, times 2^n built in the exponent field).
#define EXPF_CONSTS \
	MOVL $0xc2aeac4f, AX; \
	VMOVD AX, X14; \
	VPBROADCASTD X14, Y14; \
	MOVL $0x42b00000, AX; \
	VMOVD AX, X13; \
	VPBROADCASTD X13, Y13; \
	MOVL $0x3fb8aa3b, AX; \
	VMOVD AX, X12; \
	VPBROADCASTD X12, Y12; \
	MOVL $0x3f318000, AX; \
	VMOVD AX, X11; \
	VPBROADCASTD X11, Y11; \
	MOVL $0xb95e8083, AX; \
	VMOVD AX, X10; \
	VPBROADCASTD X10, Y10; \
	MOVL $0x39506967, AX; \
	VMOVD AX, X9; \
	VPBROADCASTD X9, Y9; \
	MOVL $0x3f800000, AX; \
	VMOVD AX, X8; \
	VPBROADCASTD X8, Y8; \
	MOVL $0x3ab743ce, AX; \
	VMOVD AX, X6; \
	VPBROADCASTD X6, Y6; \
	MOVL $0x3c088908, AX; \
	VMOVD AX, X5; \
	VPBROADCASTD X5, Y5

#define EXPF_Y0 \
	VMULPS Y12, Y0, Y1; \
	VROUNDPS $0x08, Y1, Y1; \
	VFNMADD231PS Y11, Y1, Y0; \
	VFNMADD231PS Y10, Y1, Y0; \
	VMOVAPS Y9, Y2; \
	VFMADD213PS Y6, Y0, Y2; \
	VFMADD213PS Y5, Y0, Y2; \
	VFMADD213PS glueconst<>+32(SB), Y0, Y2; \
	VFMADD213PS glueconst<>+64(SB), Y0, Y2; \
	VFMADD213PS glueconst<>+96(SB), Y0, Y2; \
	VMULPS Y0, Y0, Y3; \
	VFMADD213PS Y0, Y3, Y2; \
	VADDPS Y8, Y2, Y2; \
	VCVTPS2DQ Y1, Y1; \
	VPSLLD $23, Y1, Y1; \
	VPADDD Y8, Y1, Y1; \
	VMULPS Y1, Y2, Y2

// func expSubSumAVX2(x *float32, n int, mx float32) float32   (n a multiple of 8)
// x[i] = exp(x[i] − mx) in place, returning Σ x[i]: expSubSumAVX512 in 8
// lanes. exp as Cephes' expf: n = round(x·log2 e), r = x − n·ln 2 (in two
// parts), e^r by its degree-7 polynomial (≈1 ulp), times 2^n built in the
// exponent field ((n+127)<<23, the same product VSCALEFPS gives).
// Arguments are clamped to [−87.34, 88] so that 2^n stays a normal float.
TEXT ·expSubSumAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS mx+16(FP), Y15
	EXPF_CONSTS
	VXORPS Y7, Y7, Y7
	SHRQ $3, CX
	JEQ exdone
exloop:
	VMOVUPS (SI), Y0
	VSUBPS Y15, Y0, Y0
	VMAXPS Y14, Y0, Y0
	VMINPS Y13, Y0, Y0
	EXPF_Y0
	VMOVUPS Y2, (SI)
	VADDPS Y2, Y7, Y7
	ADDQ $32, SI
	DECQ CX
	JNE exloop
exdone:
	VEXTRACTF128 $1, Y7, X1
	VADDPS X1, X7, X0
	VPERMILPS $0x4E, X0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0xB1, X0, X1
	VADDPS X1, X0, X0
	VZEROUPPER
	VMOVSS X0, ret+24(FP)
	RET

// func attnScores128AVX2(q *float32, k *float32, stride int, n int, scale float32, out *float32)
// out[p] = (q · k[p·stride : p·stride+128]) · scale for p < n. Dims 0–63
// of q stay in Y8–Y15, dims 64–127 are read from memory (16 registers
// cannot hold q and the sums). Four positions per pass: their reductions
// share the last steps (three VHADDPS for four sums). No software
// prefetch: the rows are contiguous (stride = headDim) as attention
// calls it, and BenchmarkAttention2048 ran faster without it on the Zen 3
// VM (the hardware prefetchers suffice).
TEXT ·attnScores128AVX2(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ k+8(FP), DI
	MOVQ stride+16(FP), BX
	SHLQ $2, BX
	MOVQ n+24(FP), CX
	MOVQ out+40(FP), DX
	VMOVUPS 0(SI), Y8
	VMOVUPS 32(SI), Y9
	VMOVUPS 64(SI), Y10
	VMOVUPS 96(SI), Y11
	VMOVUPS 128(SI), Y12
	VMOVUPS 160(SI), Y13
	VMOVUPS 192(SI), Y14
	VMOVUPS 224(SI), Y15
	LEAQ (BX)(BX*2), R11 // 3·stride
asquad:
	CMPQ CX, $4
	JLT astail
	VMULPS 0(DI), Y8, Y0
	VMULPS 0(DI)(BX*1), Y8, Y1
	VMULPS 0(DI)(BX*2), Y8, Y2
	VMULPS 0(DI)(R11*1), Y8, Y3
	VFMADD231PS 32(DI), Y9, Y0
	VFMADD231PS 32(DI)(BX*1), Y9, Y1
	VFMADD231PS 32(DI)(BX*2), Y9, Y2
	VFMADD231PS 32(DI)(R11*1), Y9, Y3
	VFMADD231PS 64(DI), Y10, Y0
	VFMADD231PS 64(DI)(BX*1), Y10, Y1
	VFMADD231PS 64(DI)(BX*2), Y10, Y2
	VFMADD231PS 64(DI)(R11*1), Y10, Y3
	VFMADD231PS 96(DI), Y11, Y0
	VFMADD231PS 96(DI)(BX*1), Y11, Y1
	VFMADD231PS 96(DI)(BX*2), Y11, Y2
	VFMADD231PS 96(DI)(R11*1), Y11, Y3
	VFMADD231PS 128(DI), Y12, Y0
	VFMADD231PS 128(DI)(BX*1), Y12, Y1
	VFMADD231PS 128(DI)(BX*2), Y12, Y2
	VFMADD231PS 128(DI)(R11*1), Y12, Y3
	VFMADD231PS 160(DI), Y13, Y0
	VFMADD231PS 160(DI)(BX*1), Y13, Y1
	VFMADD231PS 160(DI)(BX*2), Y13, Y2
	VFMADD231PS 160(DI)(R11*1), Y13, Y3
	VFMADD231PS 192(DI), Y14, Y0
	VFMADD231PS 192(DI)(BX*1), Y14, Y1
	VFMADD231PS 192(DI)(BX*2), Y14, Y2
	VFMADD231PS 192(DI)(R11*1), Y14, Y3
	VFMADD231PS 224(DI), Y15, Y0
	VFMADD231PS 224(DI)(BX*1), Y15, Y1
	VFMADD231PS 224(DI)(BX*2), Y15, Y2
	VFMADD231PS 224(DI)(R11*1), Y15, Y3
	VMOVUPS 256(DI), Y4
	VMOVUPS 256(DI)(BX*1), Y5
	VMOVUPS 256(DI)(BX*2), Y6
	VMOVUPS 256(DI)(R11*1), Y7
	VFMADD231PS 256(SI), Y4, Y0
	VFMADD231PS 256(SI), Y5, Y1
	VFMADD231PS 256(SI), Y6, Y2
	VFMADD231PS 256(SI), Y7, Y3
	VMOVUPS 288(DI), Y4
	VMOVUPS 288(DI)(BX*1), Y5
	VMOVUPS 288(DI)(BX*2), Y6
	VMOVUPS 288(DI)(R11*1), Y7
	VFMADD231PS 288(SI), Y4, Y0
	VFMADD231PS 288(SI), Y5, Y1
	VFMADD231PS 288(SI), Y6, Y2
	VFMADD231PS 288(SI), Y7, Y3
	VMOVUPS 320(DI), Y4
	VMOVUPS 320(DI)(BX*1), Y5
	VMOVUPS 320(DI)(BX*2), Y6
	VMOVUPS 320(DI)(R11*1), Y7
	VFMADD231PS 320(SI), Y4, Y0
	VFMADD231PS 320(SI), Y5, Y1
	VFMADD231PS 320(SI), Y6, Y2
	VFMADD231PS 320(SI), Y7, Y3
	VMOVUPS 352(DI), Y4
	VMOVUPS 352(DI)(BX*1), Y5
	VMOVUPS 352(DI)(BX*2), Y6
	VMOVUPS 352(DI)(R11*1), Y7
	VFMADD231PS 352(SI), Y4, Y0
	VFMADD231PS 352(SI), Y5, Y1
	VFMADD231PS 352(SI), Y6, Y2
	VFMADD231PS 352(SI), Y7, Y3
	VMOVUPS 384(DI), Y4
	VMOVUPS 384(DI)(BX*1), Y5
	VMOVUPS 384(DI)(BX*2), Y6
	VMOVUPS 384(DI)(R11*1), Y7
	VFMADD231PS 384(SI), Y4, Y0
	VFMADD231PS 384(SI), Y5, Y1
	VFMADD231PS 384(SI), Y6, Y2
	VFMADD231PS 384(SI), Y7, Y3
	VMOVUPS 416(DI), Y4
	VMOVUPS 416(DI)(BX*1), Y5
	VMOVUPS 416(DI)(BX*2), Y6
	VMOVUPS 416(DI)(R11*1), Y7
	VFMADD231PS 416(SI), Y4, Y0
	VFMADD231PS 416(SI), Y5, Y1
	VFMADD231PS 416(SI), Y6, Y2
	VFMADD231PS 416(SI), Y7, Y3
	VMOVUPS 448(DI), Y4
	VMOVUPS 448(DI)(BX*1), Y5
	VMOVUPS 448(DI)(BX*2), Y6
	VMOVUPS 448(DI)(R11*1), Y7
	VFMADD231PS 448(SI), Y4, Y0
	VFMADD231PS 448(SI), Y5, Y1
	VFMADD231PS 448(SI), Y6, Y2
	VFMADD231PS 448(SI), Y7, Y3
	VMOVUPS 480(DI), Y4
	VMOVUPS 480(DI)(BX*1), Y5
	VMOVUPS 480(DI)(BX*2), Y6
	VMOVUPS 480(DI)(R11*1), Y7
	VFMADD231PS 480(SI), Y4, Y0
	VFMADD231PS 480(SI), Y5, Y1
	VFMADD231PS 480(SI), Y6, Y2
	VFMADD231PS 480(SI), Y7, Y3
	VHADDPS Y1, Y0, Y0
	VHADDPS Y3, Y2, Y2
	VHADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VBROADCASTSS scale+32(FP), X1
	VMULPS X1, X0, X0
	VMOVUPS X0, (DX)
	LEAQ (DI)(BX*4), DI
	ADDQ $16, DX
	SUBQ $4, CX
	JMP asquad
astail:
	TESTQ CX, CX
	JEQ asdone
asloop:
	VMULPS (DI), Y8, Y0
	VMULPS 32(DI), Y9, Y1
	VFMADD231PS 64(DI), Y10, Y0
	VFMADD231PS 96(DI), Y11, Y1
	VFMADD231PS 128(DI), Y12, Y0
	VFMADD231PS 160(DI), Y13, Y1
	VFMADD231PS 192(DI), Y14, Y0
	VFMADD231PS 224(DI), Y15, Y1
	VMOVUPS 256(DI), Y4
	VFMADD231PS 256(SI), Y4, Y0
	VMOVUPS 288(DI), Y5
	VFMADD231PS 288(SI), Y5, Y1
	VMOVUPS 320(DI), Y6
	VFMADD231PS 320(SI), Y6, Y0
	VMOVUPS 352(DI), Y7
	VFMADD231PS 352(SI), Y7, Y1
	VMOVUPS 384(DI), Y4
	VFMADD231PS 384(SI), Y4, Y0
	VMOVUPS 416(DI), Y5
	VFMADD231PS 416(SI), Y5, Y1
	VMOVUPS 448(DI), Y6
	VFMADD231PS 448(SI), Y6, Y0
	VMOVUPS 480(DI), Y7
	VFMADD231PS 480(SI), Y7, Y1
	VADDPS Y1, Y0, Y0
	HSUM_Y0
	VMOVSS scale+32(FP), X1
	VMULSS X1, X0, X0
	VMOVSS X0, (DX)
	ADDQ BX, DI
	ADDQ $4, DX
	DECQ CX
	JNE asloop
asdone:
	VZEROUPPER
	RET

// func attnMix128AVX2(w *float32, v *float32, stride int, n int, o *float32)
// o[0:128] = Σ_p w[p] · v[p·stride : p·stride+128]: two passes over the
// positions, dims 0–63 then 64–127, each with its sums in Y0–Y7.
TEXT ·attnMix128AVX2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ v+8(FP), DI
	MOVQ stride+16(FP), BX
	SHLQ $2, BX
	MOVQ n+24(FP), CX
	MOVQ o+32(FP), DX
	XORQ R10, R10
mxhalf:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ SI, R11
	LEAQ (DI)(R10*1), R12
	MOVQ CX, R13
	TESTQ R13, R13
	JEQ mxstore
mxloop:
	VBROADCASTSS (R11), Y8
	VFMADD231PS 0(R12), Y8, Y0
	VFMADD231PS 32(R12), Y8, Y1
	VFMADD231PS 64(R12), Y8, Y2
	VFMADD231PS 96(R12), Y8, Y3
	VFMADD231PS 128(R12), Y8, Y4
	VFMADD231PS 160(R12), Y8, Y5
	VFMADD231PS 192(R12), Y8, Y6
	VFMADD231PS 224(R12), Y8, Y7
	ADDQ $4, R11
	ADDQ BX, R12
	DECQ R13
	JNE mxloop
mxstore:
	LEAQ (DX)(R10*1), R14
	VMOVUPS Y0, 0(R14)
	VMOVUPS Y1, 32(R14)
	VMOVUPS Y2, 64(R14)
	VMOVUPS Y3, 96(R14)
	VMOVUPS Y4, 128(R14)
	VMOVUPS Y5, 160(R14)
	VMOVUPS Y6, 192(R14)
	VMOVUPS Y7, 224(R14)
	ADDQ $256, R10
	CMPQ R10, $512
	JLT mxhalf
	VZEROUPPER
	RET

// func attnScores4x128AVX2(q *float32, k *float32, stride int, n int, scale float32, out *float32, ldo int)
// Four query heads (q: 4×128 floats) against n cached keys stride floats
// apart: out[h·ldo + p] = (q_h·k_p)·scale. Each 8-float piece of a key
// row is loaded once for the four heads (GQA: they share the KV head),
// whose q are read from memory; two sums per head (Y0–Y3, Y4–Y7), and
// the four reduce together.
TEXT ·attnScores4x128AVX2(SB), NOSPLIT, $0-56
	MOVQ q+0(FP), SI
	LEAQ 512(SI), R9
	LEAQ 1024(SI), R10
	LEAQ 1536(SI), R11
	MOVQ k+8(FP), DI
	MOVQ stride+16(FP), BX
	SHLQ $2, BX
	MOVQ n+24(FP), CX
	VBROADCASTSS scale+32(FP), X15
	MOVQ out+40(FP), DX
	MOVQ ldo+48(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R12
	TESTQ CX, CX
	JEQ a4done
a4loop:
	VMOVUPS 0(DI), Y8
	VMULPS 0(SI), Y8, Y0
	VMULPS 0(R9), Y8, Y1
	VMULPS 0(R10), Y8, Y2
	VMULPS 0(R11), Y8, Y3
	VMOVUPS 32(DI), Y9
	VMULPS 32(SI), Y9, Y4
	VMULPS 32(R9), Y9, Y5
	VMULPS 32(R10), Y9, Y6
	VMULPS 32(R11), Y9, Y7
	VMOVUPS 64(DI), Y10
	VFMADD231PS 64(SI), Y10, Y0
	VFMADD231PS 64(R9), Y10, Y1
	VFMADD231PS 64(R10), Y10, Y2
	VFMADD231PS 64(R11), Y10, Y3
	VMOVUPS 96(DI), Y11
	VFMADD231PS 96(SI), Y11, Y4
	VFMADD231PS 96(R9), Y11, Y5
	VFMADD231PS 96(R10), Y11, Y6
	VFMADD231PS 96(R11), Y11, Y7
	VMOVUPS 128(DI), Y8
	VFMADD231PS 128(SI), Y8, Y0
	VFMADD231PS 128(R9), Y8, Y1
	VFMADD231PS 128(R10), Y8, Y2
	VFMADD231PS 128(R11), Y8, Y3
	VMOVUPS 160(DI), Y9
	VFMADD231PS 160(SI), Y9, Y4
	VFMADD231PS 160(R9), Y9, Y5
	VFMADD231PS 160(R10), Y9, Y6
	VFMADD231PS 160(R11), Y9, Y7
	VMOVUPS 192(DI), Y10
	VFMADD231PS 192(SI), Y10, Y0
	VFMADD231PS 192(R9), Y10, Y1
	VFMADD231PS 192(R10), Y10, Y2
	VFMADD231PS 192(R11), Y10, Y3
	VMOVUPS 224(DI), Y11
	VFMADD231PS 224(SI), Y11, Y4
	VFMADD231PS 224(R9), Y11, Y5
	VFMADD231PS 224(R10), Y11, Y6
	VFMADD231PS 224(R11), Y11, Y7
	VMOVUPS 256(DI), Y8
	VFMADD231PS 256(SI), Y8, Y0
	VFMADD231PS 256(R9), Y8, Y1
	VFMADD231PS 256(R10), Y8, Y2
	VFMADD231PS 256(R11), Y8, Y3
	VMOVUPS 288(DI), Y9
	VFMADD231PS 288(SI), Y9, Y4
	VFMADD231PS 288(R9), Y9, Y5
	VFMADD231PS 288(R10), Y9, Y6
	VFMADD231PS 288(R11), Y9, Y7
	VMOVUPS 320(DI), Y10
	VFMADD231PS 320(SI), Y10, Y0
	VFMADD231PS 320(R9), Y10, Y1
	VFMADD231PS 320(R10), Y10, Y2
	VFMADD231PS 320(R11), Y10, Y3
	VMOVUPS 352(DI), Y11
	VFMADD231PS 352(SI), Y11, Y4
	VFMADD231PS 352(R9), Y11, Y5
	VFMADD231PS 352(R10), Y11, Y6
	VFMADD231PS 352(R11), Y11, Y7
	VMOVUPS 384(DI), Y8
	VFMADD231PS 384(SI), Y8, Y0
	VFMADD231PS 384(R9), Y8, Y1
	VFMADD231PS 384(R10), Y8, Y2
	VFMADD231PS 384(R11), Y8, Y3
	VMOVUPS 416(DI), Y9
	VFMADD231PS 416(SI), Y9, Y4
	VFMADD231PS 416(R9), Y9, Y5
	VFMADD231PS 416(R10), Y9, Y6
	VFMADD231PS 416(R11), Y9, Y7
	VMOVUPS 448(DI), Y10
	VFMADD231PS 448(SI), Y10, Y0
	VFMADD231PS 448(R9), Y10, Y1
	VFMADD231PS 448(R10), Y10, Y2
	VFMADD231PS 448(R11), Y10, Y3
	VMOVUPS 480(DI), Y11
	VFMADD231PS 480(SI), Y11, Y4
	VFMADD231PS 480(R9), Y11, Y5
	VFMADD231PS 480(R10), Y11, Y6
	VFMADD231PS 480(R11), Y11, Y7
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y2, Y2
	VADDPS Y7, Y3, Y3
	VHADDPS Y1, Y0, Y0
	VHADDPS Y3, Y2, Y2
	VHADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMULPS X15, X0, X0
	VMOVSS X0, (DX)
	VEXTRACTPS $1, X0, (DX)(R8*1)
	VEXTRACTPS $2, X0, (DX)(R8*2)
	VEXTRACTPS $3, X0, (DX)(R12*1)
	ADDQ BX, DI
	ADDQ $4, DX
	DECQ CX
	JNE a4loop
a4done:
	VZEROUPPER
	RET

// func attnMix4x128AVX2(w *float32, ldw int, v *float32, stride int, n int, o *float32)
// o[h·128 : h·128+128] = Σ_p w[h·ldw + p] · v[p·stride : p·stride+128] for
// four heads h. Eight passes over the positions, 16 dims each: the two
// value pieces are loaded once for the four heads (sums in Y0–Y7), so
// each value line is read once in all.
TEXT ·attnMix4x128AVX2(SB), NOSPLIT, $0-48
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
m4pass:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ SI, R11
	LEAQ (DI)(R10*1), R12
	MOVQ CX, R13
	TESTQ R13, R13
	JEQ m4store
m4loop:
	VMOVUPS (R12), Y8
	VMOVUPS 32(R12), Y9
	VBROADCASTSS (R11), Y10
	VBROADCASTSS (R11)(R8*1), Y11
	VBROADCASTSS (R11)(R8*2), Y12
	VBROADCASTSS (R11)(R9*1), Y13
	VFMADD231PS Y8, Y10, Y0
	VFMADD231PS Y9, Y10, Y1
	VFMADD231PS Y8, Y11, Y2
	VFMADD231PS Y9, Y11, Y3
	VFMADD231PS Y8, Y12, Y4
	VFMADD231PS Y9, Y12, Y5
	VFMADD231PS Y8, Y13, Y6
	VFMADD231PS Y9, Y13, Y7
	ADDQ $4, R11
	ADDQ BX, R12
	DECQ R13
	JNE m4loop
m4store:
	LEAQ (DX)(R10*1), R14
	VMOVUPS Y0, (R14)
	VMOVUPS Y1, 32(R14)
	VMOVUPS Y2, 512(R14)
	VMOVUPS Y3, 544(R14)
	VMOVUPS Y4, 1024(R14)
	VMOVUPS Y5, 1056(R14)
	VMOVUPS Y6, 1536(R14)
	VMOVUPS Y7, 1568(R14)
	ADDQ $64, R10
	CMPQ R10, $512
	JLT m4pass
	VZEROUPPER
	RET

// func siluMulAVX2(x *float32, y *float32, n int)   (n a multiple of 8)
// x[i] = x[i]/(1 + e^−x[i]) · y[i] (SwiGLU's gate): the portable silu's
// operations in its order, with the exp of EXPF_Y0 (≈1 ulp) instead of
// float64 exp. −x is clamped to [−87.34, 88] as in expSubSumAVX2; past
// the clamp the quotient is x or ±0 to float32 precision either way.
TEXT ·siluMulAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ n+16(FP), CX
	EXPF_CONSTS
	SHRQ $3, CX
	JEQ sidone
siloop:
	VMOVUPS (SI), Y4
	VXORPS Y0, Y0, Y0
	VSUBPS Y4, Y0, Y0
	VMAXPS Y14, Y0, Y0
	VMINPS Y13, Y0, Y0
	EXPF_Y0
	VADDPS Y8, Y2, Y2
	VDIVPS Y2, Y4, Y4
	VMULPS (DI), Y4, Y4
	VMOVUPS Y4, (SI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNE siloop
sidone:
	VZEROUPPER
	RET
