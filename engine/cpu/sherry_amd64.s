//go:build !purego

#include "textflag.h"

// Sherry kernels (see sherry_kernels.go): each decodes a row's 5-bit codes
// to I2-style bytes in registers (w+1 of lane p in bits 2p…2p+1, one
// byte per code) and multiplies field p with plane p of the activations,
// which the caller has put in plane order (sherryPlanes). The products sum
// Σ code·q; the caller's wrapper subtracts Σq.

// ---------------------------------------------------------------------
// AVX-512 VBMI + VNNI. A unit is 256 weights: 40 bytes, 64 codes. A
// masked load takes the 40 bytes (no read past the row's end), VPERMB
// spreads group m's five bytes into qword m, VPMULTISHIFTQB pulls code i
// of the qword into its byte i (bits 5–7 are the next code's: the lookup
// VPERMB reads 6 index bits, and its 64-entry table repeats the 32
// codes), and a VPERMB lookup gives the I2-style bytes. Then, as the I2
// kernels do, field p masked in place (0x03<<2p) feeds VPDPBUSD with
// plane p into accumulator a_p, which holds 4^p·Σ code·q.
//
// Registers: Z0–Z15 accumulators (row or token r: Z(4r)…Z(4r+3)), Z16–Z19
// the field masks, Z20–Z23 the planes of the current unit, Z24 the
// multishift control, Z25 the spread index, Z26 the lookup table, Z27 the
// decoded bytes, Z28–Z31 the masked fields; K1 the 40-byte load mask.

// SH_DECODE loads the unit at src and leaves its 64 I2-style bytes in Z27.
// The masked load reads the unit's 40 bytes only; SH_DECODE_NEXT spreads
// straight from memory (a 64-byte read: VPDPBUSD and VPMULTISHIFTQB share
// a pipe, and the separate load cost ~10% of the kernel), for rows that
// are followed by another row of the call.
#define SH_DECODE(src) \
	VMOVDQU8.Z src, K1, Z27; \
	VPERMB Z27, Z25, Z27; \
	VPMULTISHIFTQB Z27, Z24, Z27; \
	VPERMB Z26, Z27, Z27

#define SH_DECODE_NEXT(src) \
	VPERMB src, Z25, Z27; \
	VPMULTISHIFTQB Z27, Z24, Z27; \
	VPERMB Z26, Z27, Z27

// SH_FIELDS multiplies the decoded unit (Z27) with the planes p0…p3 (any
// operands VPDPBUSD takes) into a0…a3.
#define SH_FIELDS(p0, p1, p2, p3, a0, a1, a2, a3) \
	VPANDQ Z16, Z27, Z28; \
	VPDPBUSD p0, Z28, a0; \
	VPANDQ Z17, Z27, Z29; \
	VPDPBUSD p1, Z29, a1; \
	VPANDQ Z18, Z27, Z30; \
	VPDPBUSD p2, Z30, a2; \
	VPANDQ Z19, Z27, Z31; \
	VPDPBUSD p3, Z31, a3

// SH_ROW is one row's unit at src against the planes in Z20–Z23 (a row
// that another row of the call follows).
#define SH_ROW(src, a0, a1, a2, a3) \
	SH_DECODE_NEXT(src); \
	SH_FIELDS(Z20, Z21, Z22, Z23, a0, a1, a2, a3)

// SH_QUAD_SUMS turns the accumulators of four rows (or tokens) into their
// Σ code·q in X0's four lanes: A0 + A1>>2 + A2>>4 + A3>>6 (exact), then
// four horizontal sums at once.
#define SH_QUAD_SUMS \
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

// SH_SETUP loads the constants c (AX: spread index, multishift control,
// lookup table), the field masks and the load mask.
#define SH_SETUP \
	VMOVDQU64 0(AX), Z25; \
	VMOVDQU64 64(AX), Z24; \
	VMOVDQU64 128(AX), Z26; \
	MOVQ $0xffffffffff, AX; \
	KMOVQ AX, K1; \
	MOVL $0x03030303, AX; VPBROADCASTD AX, Z16; \
	MOVL $0x0c0c0c0c, AX; VPBROADCASTD AX, Z17; \
	MOVL $0x30303030, AX; VPBROADCASTD AX, Z18; \
	MOVL $0xc0c0c0c0, AX; VPBROADCASTD AX, Z19

#define SH_ZERO16 \
	VPXORQ Z0, Z0, Z0; VPXORQ Z1, Z1, Z1; VPXORQ Z2, Z2, Z2; VPXORQ Z3, Z3, Z3; \
	VPXORQ Z4, Z4, Z4; VPXORQ Z5, Z5, Z5; VPXORQ Z6, Z6, Z6; VPXORQ Z7, Z7, Z7; \
	VPXORQ Z8, Z8, Z8; VPXORQ Z9, Z9, Z9; VPXORQ Z10, Z10, Z10; VPXORQ Z11, Z11, Z11; \
	VPXORQ Z12, Z12, Z12; VPXORQ Z13, Z13, Z13; VPXORQ Z14, Z14, Z14; VPXORQ Z15, Z15, Z15

// func sherryPlanesVBMI(dst, src *int8, nu int, idx *[64]byte)
// Plane order for nu 256-weight units: VPERMB puts each 64-byte quarter's
// plane p in its 128-bit lane p, then VSHUFI64X2 gathers lane p of the
// four quarters into plane p.
TEXT ·sherryPlanesVBMI(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nu+16(FP), CX
	MOVQ idx+24(FP), AX
	VMOVDQU64 (AX), Z8
	TESTQ CX, CX
	JEQ spvdone

spvloop:
	VPERMB (SI), Z8, Z0
	VPERMB 64(SI), Z8, Z1
	VPERMB 128(SI), Z8, Z2
	VPERMB 192(SI), Z8, Z3
	VSHUFI64X2 $0x44, Z1, Z0, Z4
	VSHUFI64X2 $0xEE, Z1, Z0, Z5
	VSHUFI64X2 $0x44, Z3, Z2, Z6
	VSHUFI64X2 $0xEE, Z3, Z2, Z7
	VSHUFI64X2 $0x88, Z6, Z4, Z0
	VSHUFI64X2 $0xDD, Z6, Z4, Z1
	VSHUFI64X2 $0x88, Z7, Z5, Z2
	VSHUFI64X2 $0xDD, Z7, Z5, Z3
	VMOVDQU64 Z0, (DI)
	VMOVDQU64 Z1, 64(DI)
	VMOVDQU64 Z2, 128(DI)
	VMOVDQU64 Z3, 192(DI)
	ADDQ $256, SI
	ADDQ $256, DI
	DECQ CX
	JNE spvloop

spvdone:
	VZEROUPPER
	RET

// func sherryRowsVBMI(rows *byte, planes *int8, nu, stride, n int, total int32, xs float32, scale *float32, out unsafe.Pointer, c *[4][64]byte)
// n rows stride bytes apart, nu units each, against one token's planes:
// four rows at a time sharing each plane load (rows i, i+n/4, i+n/2,
// i+3n/4), then the n mod 4 last one at a time; the rows that may be the
// call's last read with masked loads. With
// scale nil out is []int32 and gets Σ code·q; else out is []float32 and
// gets float32(Σ − total)·scale[r]·xs, rounded as the Go expression is.
TEXT ·sherryRowsVBMI(SB), NOSPLIT, $0-72
	MOVQ rows+0(FP), R15
	MOVQ planes+8(FP), R11
	MOVQ nu+16(FP), R12
	MOVQ stride+24(FP), BX
	MOVQ n+32(FP), R13
	MOVQ scale+48(FP), R14
	MOVQ out+56(FP), DX
	MOVQ c+64(FP), AX
	SH_SETUP
	TESTQ R13, R13
	JEQ srvend
	CMPQ R13, $4
	JLT srvone
	// Four streams: rows i, i+q, i+2q, i+3q (q = n/4) share each plane
	// load, each stream walking its rows front to back, so every stream
	// is sequential over the whole call. Rows i…i+3 walked together are
	// four streams interleaved a few hundred bytes apart in the same
	// pages, which the hardware prefetcher does not follow: from memory
	// that read 12.6 GB/s on one Zen 4 core, 24.6 on two (19.4 from L3);
	// software prefetch eight rows ahead made it 16.0 and 32.5, and
	// products of BitNet-2B's shapes 22–26 GB/s on two cores, 20 for the
	// down projection, against 25–30 split (no prefetch needed: with it
	// the same). R15 the quads left, R13 q·4 (the streams' distance in
	// out and scale), AX a temporary.
	SHRQ $2, R13
	MOVQ R13, AX
	IMULQ BX, AX
	MOVQ R15, SI
	LEAQ (SI)(AX*1), R8
	LEAQ (R8)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	MOVQ R13, R15
	SHLQ $2, R13

srvquad:
	MOVQ R11, DI
	MOVQ R12, CX
	SH_ZERO16
	CMPQ R15, $1
	JEQ srvqlast

srvqunit:
	VMOVDQU64 (DI), Z20
	VMOVDQU64 64(DI), Z21
	VMOVDQU64 128(DI), Z22
	VMOVDQU64 192(DI), Z23
	SH_ROW((SI), Z0, Z1, Z2, Z3)
	SH_ROW((R8), Z4, Z5, Z6, Z7)
	SH_ROW((R9), Z8, Z9, Z10, Z11)
	SH_ROW((R10), Z12, Z13, Z14, Z15)
	ADDQ $40, SI
	ADDQ $40, R8
	ADDQ $40, R9
	ADDQ $40, R10
	ADDQ $256, DI
	DECQ CX
	JNE srvqunit
	JMP srvqsums

srvqlast: // the last quad: the fourth stream's row may be the call's last, read with masked loads
	VMOVDQU64 (DI), Z20
	VMOVDQU64 64(DI), Z21
	VMOVDQU64 128(DI), Z22
	VMOVDQU64 192(DI), Z23
	SH_ROW((SI), Z0, Z1, Z2, Z3)
	SH_ROW((R8), Z4, Z5, Z6, Z7)
	SH_ROW((R9), Z8, Z9, Z10, Z11)
	SH_DECODE((R10))
	SH_FIELDS(Z20, Z21, Z22, Z23, Z12, Z13, Z14, Z15)
	ADDQ $40, SI
	ADDQ $40, R8
	ADDQ $40, R9
	ADDQ $40, R10
	ADDQ $256, DI
	DECQ CX
	JNE srvqlast

srvqsums:
	// Each stream on to its next row: past the bytes a tail of fewer
	// than 256 weights holds (stride − 40·nu; the caller adds those).
	IMUL3Q $40, R12, AX
	NEGQ AX
	ADDQ BX, AX
	ADDQ AX, SI
	ADDQ AX, R8
	ADDQ AX, R9
	ADDQ AX, R10
	SH_QUAD_SUMS
	TESTQ R14, R14
	JEQ srvqints0
	MOVL total+40(FP), AX
	VPBROADCASTD AX, X2
	VBROADCASTSS xs+44(FP), X3
	LEAQ (R13)(R13*2), AX
	VMOVSS (R14), X4
	VINSERTPS $0x10, (R14)(R13*1), X4, X4
	VINSERTPS $0x20, (R14)(R13*2), X4, X4
	VINSERTPS $0x30, (R14)(AX*1), X4, X4
	VPSUBD X2, X0, X0
	VCVTDQ2PS X0, X0
	VMULPS X4, X0, X0
	VMULPS X3, X0, X0
	ADDQ $4, R14
	JMP srvqints

srvqints0:
	LEAQ (R13)(R13*2), AX

srvqints:
	VMOVSS X0, (DX)
	VEXTRACTPS $1, X0, (DX)(R13*1)
	VEXTRACTPS $2, X0, (DX)(R13*2)
	VEXTRACTPS $3, X0, (DX)(AX*1)
	ADDQ $4, DX
	DECQ R15
	JNE srvquad
	// The rows after the 4q: the fourth stream ends where they start;
	// their outputs and scales follow the fourth stream's.
	MOVQ R10, R15
	ADDQ AX, DX
	TESTQ R14, R14
	JEQ srvqleft
	ADDQ AX, R14

srvqleft:
	MOVQ n+32(FP), R13
	ANDQ $3, R13
	JEQ srvend

srvone:
	MOVQ R15, SI
	ADDQ BX, R15
	MOVQ R11, DI
	MOVQ R12, CX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3

srvounit:
	SH_DECODE((SI))
	SH_FIELDS((DI), 64(DI), 128(DI), 192(DI), Z0, Z1, Z2, Z3)
	ADDQ $40, SI
	ADDQ $256, DI
	DECQ CX
	JNE srvounit
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
	TESTQ R14, R14
	JEQ srvoints
	MOVL total+40(FP), AX
	VPBROADCASTD AX, X2
	VPSUBD X2, X0, X0
	VCVTDQ2PS X0, X0
	VMULSS (R14), X0, X0
	VMULSS xs+44(FP), X0, X0
	ADDQ $4, R14

srvoints:
	VMOVD X0, (DX)
	ADDQ $4, DX
	DECQ R13
	JNE srvone

srvend:
	VZEROUPPER
	RET

// SH_LANES looks the codes in z (from VPMULTISHIFTQB) up in the four lane
// tables (Z16–Z19: w+1 of lane p, 0…2), into f0…f3: two rows' fields then
// share one accumulator per token.
#define SH_LANES(z, f0, f1, f2, f3) \
	VPERMB Z16, z, f0; \
	VPERMB Z17, z, f1; \
	VPERMB Z18, z, f2; \
	VPERMB Z19, z, f3

// SH_PLANE4 multiplies plane p of the four tokens (loaded from off(DI),
// off(R8), … into Z28–Z31) with field fa of row a into Z0–Z3 and fb of
// row b into Z4–Z7.
#define SH_PLANE4(off, fa, fb) \
	VMOVDQU64 off(DI), Z28; \
	VMOVDQU64 off(R8), Z29; \
	VMOVDQU64 off(R9), Z30; \
	VMOVDQU64 off(R10), Z31; \
	VPDPBUSD Z28, fa, Z0; \
	VPDPBUSD Z29, fa, Z1; \
	VPDPBUSD Z30, fa, Z2; \
	VPDPBUSD Z31, fa, Z3; \
	VPDPBUSD Z28, fb, Z4; \
	VPDPBUSD Z29, fb, Z5; \
	VPDPBUSD Z30, fb, Z6; \
	VPDPBUSD Z31, fb, Z7

// SH_SUM4 leaves the sums of z0…z3's lanes in x0's four lanes (y0…y3 are
// their low halves; uses y1…y3 as scratch).
#define SH_SUM4(z0, z1, z2, z3, y0, y1, y2, y3, x0, x1) \
	VEXTRACTI64X4 $1, z0, Y12; VPADDD Y12, y0, y0; \
	VEXTRACTI64X4 $1, z1, Y13; VPADDD Y13, y1, y1; \
	VEXTRACTI64X4 $1, z2, Y14; VPADDD Y14, y2, y2; \
	VEXTRACTI64X4 $1, z3, Y15; VPADDD Y15, y3, y3; \
	VPHADDD y1, y0, y0; VPHADDD y3, y2, y2; VPHADDD y2, y0, y0; \
	VEXTRACTI128 $1, y0, x1; VPADDD x1, x0, x0

// func sherryRows4VBMI(rows *byte, planes *int8, kp, nu, stride, n int, out *int32, c *[8][64]byte)
// Prefill: n rows against four tokens' planes kp bytes apart:
// out[4r+t] = Σ code·q. Two rows at a time while a row follows them
// (each plane load feeds eight VPDPBUSD; the codes are looked up in four
// lane tables, w+1 unscaled, so a row and token need one accumulator:
// four VPERMB cost less than the I2-style byte's masks and shifts), then
// one at a
// time with masked loads (the fields masked in place, 16 accumulators).
TEXT ·sherryRows4VBMI(SB), NOSPLIT, $0-64
	MOVQ rows+0(FP), R15
	MOVQ planes+8(FP), R11
	MOVQ kp+16(FP), R14
	MOVQ nu+24(FP), R12
	MOVQ stride+32(FP), BX
	MOVQ n+40(FP), R13
	MOVQ out+48(FP), DX
	MOVQ c+56(FP), AX
	SH_SETUP
	TESTQ R13, R13
	JEQ sr4end
	CMPQ R13, $3
	JLT sr4row
	MOVQ c+56(FP), AX // the lane tables in place of the masks
	VMOVDQU64 256(AX), Z16
	VMOVDQU64 320(AX), Z17
	VMOVDQU64 384(AX), Z18
	VMOVDQU64 448(AX), Z19

sr4pair:
	MOVQ R15, SI
	LEAQ (SI)(BX*1), AX
	LEAQ (AX)(BX*1), R15
	MOVQ R11, DI
	LEAQ (DI)(R14*1), R8
	LEAQ (R8)(R14*1), R9
	LEAQ (R9)(R14*1), R10
	MOVQ R12, CX
	VPXORQ Z0, Z0, Z0; VPXORQ Z1, Z1, Z1; VPXORQ Z2, Z2, Z2; VPXORQ Z3, Z3, Z3
	VPXORQ Z4, Z4, Z4; VPXORQ Z5, Z5, Z5; VPXORQ Z6, Z6, Z6; VPXORQ Z7, Z7, Z7

sr4punit:
	VPERMB (SI), Z25, Z20
	VPMULTISHIFTQB Z20, Z24, Z20
	VPERMB (AX), Z25, Z21
	VPMULTISHIFTQB Z21, Z24, Z21
	SH_LANES(Z20, Z8, Z9, Z10, Z11)
	SH_LANES(Z21, Z12, Z13, Z14, Z15)
	SH_PLANE4(0, Z8, Z12)
	SH_PLANE4(64, Z9, Z13)
	SH_PLANE4(128, Z10, Z14)
	SH_PLANE4(192, Z11, Z15)
	ADDQ $40, SI
	ADDQ $40, AX
	ADDQ $256, DI
	ADDQ $256, R8
	ADDQ $256, R9
	ADDQ $256, R10
	DECQ CX
	JNE sr4punit
	SH_SUM4(Z0, Z1, Z2, Z3, Y0, Y1, Y2, Y3, X0, X1)
	SH_SUM4(Z4, Z5, Z6, Z7, Y4, Y5, Y6, Y7, X4, X5)
	VMOVDQU X0, (DX)
	VMOVDQU X4, 16(DX)
	ADDQ $32, DX
	SUBQ $2, R13
	CMPQ R13, $3
	JGE sr4pair
	MOVQ c+56(FP), AX
	SH_SETUP // the masks again

sr4row:
	MOVQ R15, SI
	ADDQ BX, R15
	MOVQ R11, DI
	LEAQ (DI)(R14*1), R8
	LEAQ (R8)(R14*1), R9
	LEAQ (R9)(R14*1), R10
	MOVQ R12, CX
	SH_ZERO16

sr4unit:
	SH_DECODE((SI))
	SH_FIELDS((DI), 64(DI), 128(DI), 192(DI), Z0, Z1, Z2, Z3)
	SH_FIELDS((R8), 64(R8), 128(R8), 192(R8), Z4, Z5, Z6, Z7)
	SH_FIELDS((R9), 64(R9), 128(R9), 192(R9), Z8, Z9, Z10, Z11)
	SH_FIELDS((R10), 64(R10), 128(R10), 192(R10), Z12, Z13, Z14, Z15)
	ADDQ $40, SI
	ADDQ $256, DI
	ADDQ $256, R8
	ADDQ $256, R9
	ADDQ $256, R10
	DECQ CX
	JNE sr4unit
	SH_QUAD_SUMS
	VMOVDQU X0, (DX)
	ADDQ $16, DX
	DECQ R13
	JNE sr4row

sr4end:
	VZEROUPPER
	RET

// ---------------------------------------------------------------------
// AVX2. A unit is 128 weights: 20 bytes, 32 codes. Two 16-byte loads (at
// +0 and +4) give lane 0 groups 0–1 and lane 1 groups 2–3. Code i of a
// group lies at bit t = 5i mod 8 of the group's byte 5i/8; codes 0, 2, 5,
// 7 (t ≤ 3) fit in that byte, codes 1, 3, 4, 6 (t ≥ 4) run into the next.
// VPSHUFB gathers, per dword d and lane, the spanning code S_d of both
// groups with their next bytes (bytes 0–1, 2–3) and the fitting code N_d
// of both (bytes 1 and 3); VPSRLVD by t shifts each code to bit 0 of its
// byte, a blend takes bytes 0, 2 from the first and 1, 3 from the second,
// and AND 31 clears the rest. So byte 4d+j of lane L holds code
// 8·(2L+j/2) + (S_d or N_d as j is even or odd): sherryPlanesAVX2 puts the
// activations in that order. The lookup is T_lo[c] XOR T'[c−16] (two
// VPSHUFBs: c−16 < 0 reads 0; T' = T_hi XOR T_lo). The fields then go as
// in I2_HALF_AVX2: 0 and 2 (masked with 0x03, field 2 after a 4-bit
// shift) into the int16 sums A1, 1 and 3 (masked with 0x0c: 4·code) into
// A4a and A4b, widened every 16 units (A1 ≤ 16·1016, each A4 ≤ 16·2032,
// A1 + A4a/4 + A4b/4 ≤ 32512). No multiply but VPMADDUBSW's.
//
// Registers: R9 the constants c (the gathers, shift counts and the bytes
// 31 and 16 are memory operands), Y15 the blend mask, Y14 T_lo, Y13 T',
// Y12 0x03, Y11 0x0c, Y10 int16 ones.

// SH2_DECODE leaves the unit at (SI)'s 32 I2-style bytes in Y5 (uses Y4,
// Y6).
#define SH2_DECODE \
	VMOVDQU (SI), X4; \
	VINSERTI128 $1, 4(SI), Y4, Y4; \
	VPSHUFB 0(R9), Y4, Y5; \
	VPSHUFB 32(R9), Y4, Y6; \
	VPSRLVD 64(R9), Y5, Y5; \
	VPSRLVD 96(R9), Y6, Y6; \
	VPBLENDVB Y15, Y6, Y5, Y5; \
	VPAND 320(R9), Y5, Y5; \
	VPSUBB 352(R9), Y5, Y6; \
	VPSHUFB Y5, Y14, Y5; \
	VPSHUFB Y6, Y13, Y6; \
	VPXOR Y6, Y5, Y5

// SH2_ROW leaves Σ code·q of the row at SI (R12 units, advancing SI past
// them) against the planes at R11 in Y3's eight int32 lanes (uses AX, CX,
// DI, Y0–Y7).
#define SH2_ROW(chunk, fit, unit) \
	MOVQ R11, DI; \
	MOVQ R12, CX; \
	VPXOR Y3, Y3, Y3; \
chunk: \
	MOVQ CX, AX; \
	CMPQ AX, $16; \
	JLE fit; \
	MOVQ $16, AX; \
fit: \
	SUBQ AX, CX; \
	VPXOR Y0, Y0, Y0; \
	VPXOR Y1, Y1, Y1; \
	VPXOR Y2, Y2, Y2; \
unit: \
	SH2_DECODE; \
	VPAND Y12, Y5, Y4; \
	VPMADDUBSW (DI), Y4, Y4; \
	VPADDW Y4, Y0, Y0; \
	VPAND Y11, Y5, Y6; \
	VPMADDUBSW 32(DI), Y6, Y6; \
	VPADDW Y6, Y1, Y1; \
	VPSRLW $4, Y5, Y5; \
	VPAND Y12, Y5, Y4; \
	VPMADDUBSW 64(DI), Y4, Y4; \
	VPADDW Y4, Y0, Y0; \
	VPAND Y11, Y5, Y6; \
	VPMADDUBSW 96(DI), Y6, Y6; \
	VPADDW Y6, Y2, Y2; \
	ADDQ $20, SI; \
	ADDQ $128, DI; \
	DECQ AX; \
	JNE unit; \
	VPSRAW $2, Y1, Y1; \
	VPSRAW $2, Y2, Y2; \
	VPADDW Y1, Y0, Y0; \
	VPADDW Y2, Y0, Y0; \
	VPMADDWD Y10, Y0, Y0; \
	VPADDD Y0, Y3, Y3; \
	TESTQ CX, CX; \
	JNE chunk

// SH2_SETUP loads the constants c (AX; kept in R9) and the masks.
#define SH2_SETUP \
	MOVQ AX, R9; \
	VMOVDQU 128(AX), Y15; \
	VMOVDQU 160(AX), Y14; \
	VMOVDQU 192(AX), Y13; \
	MOVL $0x03030303, AX; \
	VMOVD AX, X12; \
	VPBROADCASTD X12, Y12; \
	MOVL $0x0c0c0c0c, AX; \
	VMOVD AX, X11; \
	VPBROADCASTD X11, Y11; \
	MOVL $0x00010001, AX; \
	VMOVD AX, X10; \
	VPBROADCASTD X10, Y10

// func sherryPlanesAVX2(dst, src *int8, nu int, c *[12][32]byte)
// Plane order for nu 128-weight units, in the decoder's code order σ:
// VPSHUFB gathers plane p of each lane's four codes into its dword p,
// VPERMD the two lanes' dword p into qword p, a 4×4 qword transpose the
// four vectors' qword p into plane p (codes in order), and a last VPSHUFB
// puts each lane's codes in order σ.
TEXT ·sherryPlanesAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nu+16(FP), CX
	MOVQ c+24(FP), AX
	VMOVDQU 224(AX), Y8
	VMOVDQU 256(AX), Y9
	VMOVDQU 288(AX), Y10
	TESTQ CX, CX
	JEQ sp2done

sp2loop:
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1
	VMOVDQU 64(SI), Y2
	VMOVDQU 96(SI), Y3
	VPSHUFB Y8, Y0, Y0
	VPSHUFB Y8, Y1, Y1
	VPSHUFB Y8, Y2, Y2
	VPSHUFB Y8, Y3, Y3
	VPERMD Y0, Y9, Y0
	VPERMD Y1, Y9, Y1
	VPERMD Y2, Y9, Y2
	VPERMD Y3, Y9, Y3
	VPUNPCKLQDQ Y1, Y0, Y4
	VPUNPCKHQDQ Y1, Y0, Y5
	VPUNPCKLQDQ Y3, Y2, Y6
	VPUNPCKHQDQ Y3, Y2, Y7
	VPERM2I128 $0x20, Y6, Y4, Y0
	VPERM2I128 $0x20, Y7, Y5, Y1
	VPERM2I128 $0x31, Y6, Y4, Y2
	VPERM2I128 $0x31, Y7, Y5, Y3
	VPSHUFB Y10, Y0, Y0
	VPSHUFB Y10, Y1, Y1
	VPSHUFB Y10, Y2, Y2
	VPSHUFB Y10, Y3, Y3
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y2, 64(DI)
	VMOVDQU Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNE sp2loop

sp2done:
	VZEROUPPER
	RET

// func sherryRowsAVX2(rows *byte, planes *int8, nu, stride, n int, total int32, xs float32, scale *float32, out unsafe.Pointer, c *[12][32]byte)
// As sherryRowsVBMI, one row at a time (one sequential stream); four
// rows' lane sums wait on the stack and are reduced and scaled together.
TEXT ·sherryRowsAVX2(SB), NOSPLIT, $128-72
	MOVQ rows+0(FP), R15
	MOVQ planes+8(FP), R11
	MOVQ nu+16(FP), R12
	MOVQ stride+24(FP), BX
	MOVQ n+32(FP), R13
	MOVQ scale+48(FP), R14
	MOVQ out+56(FP), DX
	MOVQ c+64(FP), AX
	SH2_SETUP
	TESTQ R13, R13
	JEQ sr2end
	CMPQ R13, $4
	JLT sr2one

sr2quad:
	MOVQ $0, R8

sr2quadrow:
	MOVQ R15, SI
	ADDQ BX, R15
	SH2_ROW(sr2qchunk, sr2qfit, sr2qunit)
	VMOVDQU Y3, 0(SP)(R8*1)
	ADDQ $32, R8
	CMPQ R8, $128
	JNE sr2quadrow
	VMOVDQU 0(SP), Y0
	VPHADDD 32(SP), Y0, Y0
	VMOVDQU 64(SP), Y1
	VPHADDD 96(SP), Y1, Y1
	VPHADDD Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	TESTQ R14, R14
	JEQ sr2qints
	MOVL total+40(FP), AX
	VMOVD AX, X1
	VPBROADCASTD X1, X1
	VBROADCASTSS xs+44(FP), X2
	VPSUBD X1, X0, X0
	VCVTDQ2PS X0, X0
	VMULPS (R14), X0, X0
	VMULPS X2, X0, X0
	ADDQ $16, R14

sr2qints:
	VMOVDQU X0, (DX)
	ADDQ $16, DX
	SUBQ $4, R13
	CMPQ R13, $4
	JGE sr2quad
	TESTQ R13, R13
	JEQ sr2end

sr2one:
	MOVQ R15, SI
	ADDQ BX, R15
	SH2_ROW(sr2ochunk, sr2ofit, sr2ounit)
	VEXTRACTI128 $1, Y3, X0
	VPADDD X3, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	TESTQ R14, R14
	JEQ sr2oints
	MOVL total+40(FP), AX
	VMOVD AX, X1
	VPSUBD X1, X0, X0
	VCVTDQ2PS X0, X0
	VMULSS (R14), X0, X0
	VMULSS xs+44(FP), X0, X0
	ADDQ $4, R14

sr2oints:
	VMOVD X0, (DX)
	ADDQ $4, DX
	DECQ R13
	JNE sr2one

sr2end:
	VZEROUPPER
	RET

// SH2_TOKEN multiplies the four fields (Y4, Y6, Y7, Y5: each code's w+1
// for lane 0…3) with one token's planes at m, 32+m, … (memory operands
// base(index)) into its int16 sum acc (uses Y8).
#define SH2_TOKEN(m0, m1, m2, m3, acc) \
	VPMADDUBSW m0, Y4, Y8; \
	VPADDW Y8, acc, acc; \
	VPMADDUBSW m1, Y6, Y8; \
	VPADDW Y8, acc, acc; \
	VPMADDUBSW m2, Y7, Y8; \
	VPADDW Y8, acc, acc; \
	VPMADDUBSW m3, Y5, Y8; \
	VPADDW Y8, acc, acc

// SH2_WIDEN adds the int16 sum acc into the int32 lanes at off(SP) and
// clears it (Y10: int16 ones).
#define SH2_WIDEN(acc, off) \
	VPMADDWD Y10, acc, acc; \
	VPADDD off(SP), acc, acc; \
	VMOVDQU acc, off(SP); \
	VPXOR acc, acc, acc

// func sherryRows4AVX2(rows *byte, planes *int8, kp, nu, stride, n int, out *int32, c *[12][32]byte)
// As sherryRows4VBMI. Each unit is decoded once and its fields shifted
// down (each w+1 ∈ 0..2), so one int16 sum per token takes all four
// (≤ 4·508 a unit, widened every 16 units into int32 lanes on the stack).
// Registers as above (Y12 the mask 0x03, Y10 int16 ones); Y0–Y3 the
// tokens' sums, Y4–Y8 the fields and a product.
TEXT ·sherryRows4AVX2(SB), NOSPLIT, $128-64
	MOVQ rows+0(FP), R15
	MOVQ planes+8(FP), R11
	MOVQ kp+16(FP), R14
	MOVQ nu+24(FP), R12
	MOVQ stride+32(FP), BX
	MOVQ n+40(FP), R13
	MOVQ out+48(FP), DX
	MOVQ c+56(FP), AX
	SH2_SETUP
	TESTQ R13, R13
	JEQ s42end

s42row:
	MOVQ R15, SI
	ADDQ BX, R15
	MOVQ R11, DI // tokens 0…3 at DI, R8, DI+2kp, R8+2kp
	LEAQ (DI)(R14*1), R8
	MOVQ R12, CX
	VPXOR Y0, Y0, Y0
	VMOVDQU Y0, 0(SP)
	VMOVDQU Y0, 32(SP)
	VMOVDQU Y0, 64(SP)
	VMOVDQU Y0, 96(SP)
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3

s42chunk:
	MOVQ CX, AX
	CMPQ AX, $16
	JLE s42fit
	MOVQ $16, AX

s42fit:
	SUBQ AX, CX

s42unit:
	SH2_DECODE
	VPAND Y12, Y5, Y4
	VPSRLW $2, Y5, Y6
	VPAND Y12, Y6, Y6
	VPSRLW $4, Y5, Y7
	VPAND Y12, Y7, Y7
	VPSRLW $6, Y5, Y5
	VPAND Y12, Y5, Y5
	SH2_TOKEN((DI), 32(DI), 64(DI), 96(DI), Y0)
	SH2_TOKEN((R8), 32(R8), 64(R8), 96(R8), Y1)
	SH2_TOKEN((DI)(R14*2), 32(DI)(R14*2), 64(DI)(R14*2), 96(DI)(R14*2), Y2)
	SH2_TOKEN((R8)(R14*2), 32(R8)(R14*2), 64(R8)(R14*2), 96(R8)(R14*2), Y3)
	ADDQ $20, SI
	ADDQ $128, DI
	ADDQ $128, R8
	DECQ AX
	JNE s42unit
	SH2_WIDEN(Y0, 0)
	SH2_WIDEN(Y1, 32)
	SH2_WIDEN(Y2, 64)
	SH2_WIDEN(Y3, 96)
	TESTQ CX, CX
	JNE s42chunk
	VMOVDQU 0(SP), Y0
	VPHADDD 32(SP), Y0, Y0
	VMOVDQU 64(SP), Y1
	VPHADDD 96(SP), Y1, Y1
	VPHADDD Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VMOVDQU X0, (DX)
	ADDQ $16, DX
	DECQ R13
	JNE s42row

s42end:
	VZEROUPPER
	RET
