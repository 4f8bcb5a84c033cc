//go:build !purego

#include "textflag.h"

// B3 kernels (base3.go, base3_simd.go). The decode kernels take nc whole
// 320-weight chunks against the activations at q, then, when tail is not
// nil, one more chunk against tail: the caller's zero-padded copy of the
// last K mod 320 activations, so that the planes a short last chunk does
// not have multiply zeros whatever their digits are.

// ---------------------------------------------------------------------
// AVX-512 VNNI. With c_0 the chunk's byte and c_{n+1} = 3·c_n mod 256,
// plane n's digit is t_n = (3·c_n − c_{n+1})/256 exactly, so per row
// A = Σ c_n·x_n and B = Σ c_{n+1}·x_n (VPDPBUSD: unsigned bytes c times
// signed activations) give Σ t·x = (3A − B)/256 — lane by lane, as each
// lane's terms are whole multiples of 256. Two byte adds make 3c; no
// digit is ever extracted. The int32 lanes hold 3A ≤ 3·4·255·127·K/64,
// far from overflow at any K a model has.

// B3V_STEP: one plane (activations xr) of one row: t = 3c; a += c·x;
// b += t·x. t becomes the next plane's c.
#define B3V_STEP(xr, c, t, a, b) \
	VPADDB c, c, t; \
	VPADDB c, t, t; \
	VPDPBUSD xr, c, a; \
	VPDPBUSD xr, t, b

// B3V_ROW: the five planes of one row's chunk at src (activations in
// Z8–Z12), c and t taking turns.
#define B3V_ROW(src, c, t, a, b) \
	VMOVDQU64 src, c; \
	B3V_STEP(Z8, c, t, a, b); \
	B3V_STEP(Z9, t, c, a, b); \
	B3V_STEP(Z10, c, t, a, b); \
	B3V_STEP(Z11, t, c, a, b); \
	B3V_STEP(Z12, c, t, a, b)

// B3V_X loads a chunk's five activation planes from DI.
#define B3V_X \
	VMOVDQU64 (DI), Z8; \
	VMOVDQU64 64(DI), Z9; \
	VMOVDQU64 128(DI), Z10; \
	VMOVDQU64 192(DI), Z11; \
	VMOVDQU64 256(DI), Z12

// B3V_GROUP: one chunk of a group of four rows at SI.
#define B3V_GROUP \
	B3V_X; \
	B3V_ROW((SI), Z16, Z17, Z0, Z4); \
	B3V_ROW(64(SI), Z18, Z19, Z1, Z5); \
	B3V_ROW(128(SI), Z20, Z21, Z2, Z6); \
	B3V_ROW(192(SI), Z22, Z23, Z3, Z7)

// B3V_SUM: row sum (3A − B) >> 8 per lane into a.
#define B3V_SUM(a, b) \
	VPADDD a, a, Z24; \
	VPADDD a, Z24, Z24; \
	VPSUBD b, Z24, Z24; \
	VPSRAD $8, Z24, a

// func b3x4RowsVNNI(groups *byte, q *int8, nc int, tail *int8, ngroups int, total int32, xs float32, scale *float32, out *float32)
// ngroups groups of four B3 rows against one activation row (decode):
// out[r] = float32(Σ code·q − total) · scale[r] · xs, rounded as the Go
// expression is (convert, then two float32 multiplies in that order).
// The four rows of a group share each activation load; the weights are
// one sequential stream.
TEXT ·b3x4RowsVNNI(SB), NOSPLIT, $0-64
	MOVQ groups+0(FP), SI
	MOVQ q+8(FP), R11
	MOVQ nc+16(FP), R12
	MOVQ tail+24(FP), R10
	MOVQ ngroups+32(FP), R13
	MOVQ scale+48(FP), R14
	MOVQ out+56(FP), DX
	TESTQ R13, R13
	JEQ b3vend

b3vgroup:
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	VPXORQ Z6, Z6, Z6
	VPXORQ Z7, Z7, Z7
	MOVQ R11, DI
	MOVQ R12, CX
	TESTQ CX, CX
	JEQ b3vtail

b3vchunk:
	B3V_GROUP
	ADDQ $256, SI
	ADDQ $320, DI
	DECQ CX
	JNE b3vchunk

b3vtail:
	TESTQ R10, R10
	JEQ b3vsums
	MOVQ R10, DI
	B3V_GROUP
	ADDQ $256, SI

b3vsums:
	B3V_SUM(Z0, Z4)
	B3V_SUM(Z1, Z5)
	B3V_SUM(Z2, Z6)
	B3V_SUM(Z3, Z7)
	VEXTRACTI64X4 $1, Z0, Y4
	VPADDD Y4, Y0, Y0
	VEXTRACTI64X4 $1, Z1, Y5
	VPADDD Y5, Y1, Y1
	VEXTRACTI64X4 $1, Z2, Y6
	VPADDD Y6, Y2, Y2
	VEXTRACTI64X4 $1, Z3, Y7
	VPADDD Y7, Y3, Y3
	VPHADDD Y1, Y0, Y0
	VPHADDD Y3, Y2, Y2
	VPHADDD Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	MOVL total+40(FP), AX
	VMOVD AX, X2
	VPBROADCASTD X2, X2
	VBROADCASTSS xs+44(FP), X3
	VPSUBD X2, X0, X0
	VCVTDQ2PS X0, X0
	VMULPS (R14), X0, X0
	VMULPS X3, X0, X0
	VMOVUPS X0, (DX)
	ADDQ $16, DX
	ADDQ $16, R14
	DECQ R13
	JNE b3vgroup

b3vend:
	VZEROUPPER
	RET

// func b3DotVNNI(row *byte, q *int8, nc int, tail *int8) int32
// Σ code·q over one B3 row whose chunks lie 256 bytes apart (row(r) of a
// group).
TEXT ·b3DotVNNI(SB), NOSPLIT, $0-36
	MOVQ row+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ nc+16(FP), CX
	MOVQ tail+24(FP), R10
	VPXORQ Z0, Z0, Z0
	VPXORQ Z4, Z4, Z4
	TESTQ CX, CX
	JEQ b3dvtail

b3dvchunk:
	B3V_X
	B3V_ROW((SI), Z16, Z17, Z0, Z4)
	ADDQ $256, SI
	ADDQ $320, DI
	DECQ CX
	JNE b3dvchunk

b3dvtail:
	TESTQ R10, R10
	JEQ b3dvsum
	MOVQ R10, DI
	B3V_X
	B3V_ROW((SI), Z16, Z17, Z0, Z4)

b3dvsum:
	B3V_SUM(Z0, Z4)
	VEXTRACTI64X4 $1, Z0, Y1
	VPADDD Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	MOVL AX, ret+32(FP)
	VZEROUPPER
	RET

// ---------------------------------------------------------------------
// Prefill, AVX-512 VNNI: four rows times four tokens. Here the digits are
// extracted, once per row and plane for the four tokens, so that each
// token takes one VPDPBUSD instead of two: t = ⌊3c/256⌋ is the top two
// bits of ⌊3c/4⌋, which two byte averages give exactly once c is lowered
// by one (saturating): with u = c ∸ 1, (u + ⌊(u+1)/2⌋ + 1) >> 1
// (TestB3TritArithmetic checks all 256 bytes). Masked with 0xC0 that is
// 64·t, so the sums shift down by 6 at the end. 16 accumulators (Z16–Z31: row r, token t in
// Z(16+4r+t)); Z0–Z3 the tokens' plane; Z4–Z7 the rows' c; Z13 = 0x01
// bytes, Z14 = 0, Z15 = 0xC0 bytes.

// B3P_ROW: plane digits of one row (c) against the four tokens.
#define B3P_ROW(c, u, h, a0, a1, a2, a3) \
	VPSUBUSB Z13, c, u; \
	VPAVGB Z14, u, h; \
	VPAVGB h, u, u; \
	VPANDQ Z15, u, u; \
	VPDPBUSD Z0, u, a0; \
	VPDPBUSD Z1, u, a1; \
	VPDPBUSD Z2, u, a2; \
	VPDPBUSD Z3, u, a3

// B3P_PLANE: one plane at DI of four tokens BX bytes apart (R9 = 3·BX);
// DI moves on to the next plane.
#define B3P_PLANE \
	VMOVDQU64 (DI), Z0; \
	VMOVDQU64 (DI)(BX*1), Z1; \
	VMOVDQU64 (DI)(BX*2), Z2; \
	VMOVDQU64 (DI)(R9*1), Z3; \
	ADDQ $64, DI; \
	B3P_ROW(Z4, Z8, Z9, Z16, Z17, Z18, Z19); \
	B3P_ROW(Z5, Z10, Z11, Z20, Z21, Z22, Z23); \
	B3P_ROW(Z6, Z8, Z9, Z24, Z25, Z26, Z27); \
	B3P_ROW(Z7, Z10, Z11, Z28, Z29, Z30, Z31)

// B3P_NEXT: c ← 3c for the four rows.
#define B3P_NEXT \
	VPADDB Z4, Z4, Z12; \
	VPADDB Z4, Z12, Z4; \
	VPADDB Z5, Z5, Z12; \
	VPADDB Z5, Z12, Z5; \
	VPADDB Z6, Z6, Z12; \
	VPADDB Z6, Z12, Z6; \
	VPADDB Z7, Z7, Z12; \
	VPADDB Z7, Z12, Z7

// B3P_C loads the four rows' chunk at SI, which moves on to the next.
#define B3P_C \
	VMOVDQU64 (SI), Z4; \
	VMOVDQU64 64(SI), Z5; \
	VMOVDQU64 128(SI), Z6; \
	VMOVDQU64 192(SI), Z7; \
	ADDQ $256, SI

// func b3x4Dot4x4VNNI(group *byte, q *int8, k int, nc int, lastp int, out *int32)
// One group of four B3 rows times four tokens' activations k bytes apart:
// out[4r+t] = Σ code·q for row r and token t (the caller subtracts the
// token's Σq). nc whole chunks, then a last one of lastp planes (lastp
// may be 0).
TEXT ·b3x4Dot4x4VNNI(SB), NOSPLIT, $0-48
	MOVQ group+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ k+16(FP), BX
	MOVQ nc+24(FP), CX
	MOVQ lastp+32(FP), R10
	MOVQ out+40(FP), DX
	LEAQ (BX)(BX*2), R9
	MOVL $0x01010101, AX
	VPBROADCASTD AX, Z13
	VPXORQ Z14, Z14, Z14
	MOVL $0xc0c0c0c0, AX
	VPBROADCASTD AX, Z15
	VPXORQ Z16, Z16, Z16
	VPXORQ Z17, Z17, Z17
	VPXORQ Z18, Z18, Z18
	VPXORQ Z19, Z19, Z19
	VPXORQ Z20, Z20, Z20
	VPXORQ Z21, Z21, Z21
	VPXORQ Z22, Z22, Z22
	VPXORQ Z23, Z23, Z23
	VPXORQ Z24, Z24, Z24
	VPXORQ Z25, Z25, Z25
	VPXORQ Z26, Z26, Z26
	VPXORQ Z27, Z27, Z27
	VPXORQ Z28, Z28, Z28
	VPXORQ Z29, Z29, Z29
	VPXORQ Z30, Z30, Z30
	VPXORQ Z31, Z31, Z31
	TESTQ CX, CX
	JEQ b3ptail

b3pchunk:
	B3P_C
	B3P_PLANE
	B3P_NEXT
	B3P_PLANE
	B3P_NEXT
	B3P_PLANE
	B3P_NEXT
	B3P_PLANE
	B3P_NEXT
	B3P_PLANE
	DECQ CX
	JNE b3pchunk

b3ptail:
	TESTQ R10, R10
	JEQ b3psums
	B3P_C

b3pplane:
	B3P_PLANE
	B3P_NEXT
	DECQ R10
	JNE b3pplane

b3psums:
	// As i2x4Dot4x4VNNI's epilogue: 512 → 256 bits into Y0–Y15, two
	// rounds of horizontal adds, one 128-bit fold; then ÷64 (exact).
	VEXTRACTI64X4 $1, Z16, Y0
	VPADDD Y0, Y16, Y0
	VEXTRACTI64X4 $1, Z17, Y1
	VPADDD Y1, Y17, Y1
	VEXTRACTI64X4 $1, Z18, Y2
	VPADDD Y2, Y18, Y2
	VEXTRACTI64X4 $1, Z19, Y3
	VPADDD Y3, Y19, Y3
	VEXTRACTI64X4 $1, Z20, Y4
	VPADDD Y4, Y20, Y4
	VEXTRACTI64X4 $1, Z21, Y5
	VPADDD Y5, Y21, Y5
	VEXTRACTI64X4 $1, Z22, Y6
	VPADDD Y6, Y22, Y6
	VEXTRACTI64X4 $1, Z23, Y7
	VPADDD Y7, Y23, Y7
	VEXTRACTI64X4 $1, Z24, Y8
	VPADDD Y8, Y24, Y8
	VEXTRACTI64X4 $1, Z25, Y9
	VPADDD Y9, Y25, Y9
	VEXTRACTI64X4 $1, Z26, Y10
	VPADDD Y10, Y26, Y10
	VEXTRACTI64X4 $1, Z27, Y11
	VPADDD Y11, Y27, Y11
	VEXTRACTI64X4 $1, Z28, Y12
	VPADDD Y12, Y28, Y12
	VEXTRACTI64X4 $1, Z29, Y13
	VPADDD Y13, Y29, Y13
	VEXTRACTI64X4 $1, Z30, Y14
	VPADDD Y14, Y30, Y14
	VEXTRACTI64X4 $1, Z31, Y15
	VPADDD Y15, Y31, Y15
	VPHADDD Y1, Y0, Y0
	VPHADDD Y3, Y2, Y2
	VPHADDD Y5, Y4, Y4
	VPHADDD Y7, Y6, Y6
	VPHADDD Y9, Y8, Y8
	VPHADDD Y11, Y10, Y10
	VPHADDD Y13, Y12, Y12
	VPHADDD Y15, Y14, Y14
	VPHADDD Y2, Y0, Y0
	VPHADDD Y6, Y4, Y4
	VPHADDD Y10, Y8, Y8
	VPHADDD Y14, Y12, Y12
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSRAD $6, X0, X0
	VMOVDQU X0, 0(DX)
	VEXTRACTI128 $1, Y4, X5
	VPADDD X5, X4, X4
	VPSRAD $6, X4, X4
	VMOVDQU X4, 16(DX)
	VEXTRACTI128 $1, Y8, X9
	VPADDD X9, X8, X8
	VPSRAD $6, X8, X8
	VMOVDQU X8, 32(DX)
	VEXTRACTI128 $1, Y12, X13
	VPADDD X13, X12, X12
	VPSRAD $6, X12, X12
	VMOVDQU X12, 48(DX)
	VZEROUPPER
	RET
