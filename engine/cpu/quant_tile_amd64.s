//go:build !purego

#include "textflag.h"

// AVX2 prefill kernels of the GGUF block types: the rows kernels of
// quant_amd64.s for four activation rows (tokens) at once. Each weight
// block is loaded and unpacked (nibbles, top bits, sub-block scales)
// once into registers and multiplied with the four tokens' activations,
// which lie K bytes apart (d: nb floats apart, sums: nb·16 int16). The
// arithmetic per token is the one-token kernel's: VPMADDUBSW on unsigned
// codes and int8 activations, VPMADDWD by the sub-block scales (ones for
// Q8_0), one float FMA per block times d_w·d_x. Register plan (all four
// kernels): Y0–Y3 the tokens' float sums of the current row; the token
// pointers DI (tokens 0, 1: (DI), (DI)(R8*1)) and R9 (tokens 2, 3), R8 the
// activation stride; DX the scales of token 0, R10 their stride; R14 the
// row's output for token 0 (ldo floats per token after it).

// Scale broadcasts for VPSHUFB, as in quant_amd64.s (file-local copies):
// tileQ4KShuf mask j (32 bytes) is int16 scale j eight times (both
// lanes); tileQ6KShuf mask p (16 bytes) is byte 2p eight times, then
// byte 2p+1.
DATA tileQ4KShuf<>+0(SB)/8, $0x0100010001000100
DATA tileQ4KShuf<>+8(SB)/8, $0x0100010001000100
DATA tileQ4KShuf<>+16(SB)/8, $0x0100010001000100
DATA tileQ4KShuf<>+24(SB)/8, $0x0100010001000100
DATA tileQ4KShuf<>+32(SB)/8, $0x0302030203020302
DATA tileQ4KShuf<>+40(SB)/8, $0x0302030203020302
DATA tileQ4KShuf<>+48(SB)/8, $0x0302030203020302
DATA tileQ4KShuf<>+56(SB)/8, $0x0302030203020302
DATA tileQ4KShuf<>+64(SB)/8, $0x0504050405040504
DATA tileQ4KShuf<>+72(SB)/8, $0x0504050405040504
DATA tileQ4KShuf<>+80(SB)/8, $0x0504050405040504
DATA tileQ4KShuf<>+88(SB)/8, $0x0504050405040504
DATA tileQ4KShuf<>+96(SB)/8, $0x0706070607060706
DATA tileQ4KShuf<>+104(SB)/8, $0x0706070607060706
DATA tileQ4KShuf<>+112(SB)/8, $0x0706070607060706
DATA tileQ4KShuf<>+120(SB)/8, $0x0706070607060706
DATA tileQ4KShuf<>+128(SB)/8, $0x0908090809080908
DATA tileQ4KShuf<>+136(SB)/8, $0x0908090809080908
DATA tileQ4KShuf<>+144(SB)/8, $0x0908090809080908
DATA tileQ4KShuf<>+152(SB)/8, $0x0908090809080908
DATA tileQ4KShuf<>+160(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA tileQ4KShuf<>+168(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA tileQ4KShuf<>+176(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA tileQ4KShuf<>+184(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA tileQ4KShuf<>+192(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA tileQ4KShuf<>+200(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA tileQ4KShuf<>+208(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA tileQ4KShuf<>+216(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA tileQ4KShuf<>+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA tileQ4KShuf<>+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA tileQ4KShuf<>+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA tileQ4KShuf<>+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL tileQ4KShuf<>(SB), RODATA|NOPTR, $256

DATA tileQ6KShuf<>+0(SB)/8, $0x0000000000000000
DATA tileQ6KShuf<>+8(SB)/8, $0x0101010101010101
DATA tileQ6KShuf<>+16(SB)/8, $0x0202020202020202
DATA tileQ6KShuf<>+24(SB)/8, $0x0303030303030303
DATA tileQ6KShuf<>+32(SB)/8, $0x0404040404040404
DATA tileQ6KShuf<>+40(SB)/8, $0x0505050505050505
DATA tileQ6KShuf<>+48(SB)/8, $0x0606060606060606
DATA tileQ6KShuf<>+56(SB)/8, $0x0707070707070707
DATA tileQ6KShuf<>+64(SB)/8, $0x0808080808080808
DATA tileQ6KShuf<>+72(SB)/8, $0x0909090909090909
DATA tileQ6KShuf<>+80(SB)/8, $0x0a0a0a0a0a0a0a0a
DATA tileQ6KShuf<>+88(SB)/8, $0x0b0b0b0b0b0b0b0b
DATA tileQ6KShuf<>+96(SB)/8, $0x0c0c0c0c0c0c0c0c
DATA tileQ6KShuf<>+104(SB)/8, $0x0d0d0d0d0d0d0d0d
DATA tileQ6KShuf<>+112(SB)/8, $0x0e0e0e0e0e0e0e0e
DATA tileQ6KShuf<>+120(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL tileQ6KShuf<>(SB), RODATA|NOPTR, $128

DATA tileMask30<>+0(SB)/8, $0x3030303030303030
DATA tileMask30<>+8(SB)/8, $0x3030303030303030
DATA tileMask30<>+16(SB)/8, $0x3030303030303030
DATA tileMask30<>+24(SB)/8, $0x3030303030303030
GLOBL tileMask30<>(SB), RODATA|NOPTR, $32

DATA tileMask01<>+0(SB)/8, $0x0101010101010101
DATA tileMask01<>+8(SB)/8, $0x0101010101010101
DATA tileMask01<>+16(SB)/8, $0x0101010101010101
DATA tileMask01<>+24(SB)/8, $0x0101010101010101
GLOBL tileMask01<>(SB), RODATA|NOPTR, $32

// TILE_STORE4: the four float sums Y0–Y3 reduced to one float each and
// stored for tokens 0–3 of the row at R14 (ldo floats apart, ldo read
// from the frame at ldoarg). Uses AX, R11, Y1, Y2.
#define TILE_STORE4(ldoarg) \
	VHADDPS Y1, Y0, Y0; \
	VHADDPS Y3, Y2, Y2; \
	VHADDPS Y2, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS X1, X0, X0; \
	MOVQ ldoarg, AX; \
	SHLQ $2, AX; \
	VMOVSS X0, (R14); \
	VEXTRACTPS $1, X0, (R14)(AX*1); \
	VEXTRACTPS $2, X0, (R14)(AX*2); \
	LEAQ (R14)(AX*2), R11; \
	VEXTRACTPS $3, X0, (R11)(AX*1); \
	ADDQ $4, R14

#define TILE_ZERO_SUMS \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3

// Q8_0, one token: x' = x with w's signs (VPSIGNB), |w|·x' (Y9 holds |w|,
// Y8 w, Y10 d_w broadcast, Y15 int16 ones), times d_w·d_x.
#define TQ80_TOK(xa, dxa, facc) \
	VMOVDQU xa, Y11; \
	VPSIGNB Y8, Y11, Y11; \
	VPMADDUBSW Y11, Y9, Y11; \
	VPMADDWD Y15, Y11, Y11; \
	VCVTDQ2PS Y11, Y11; \
	VBROADCASTSS dxa, Y12; \
	VMULPS Y10, Y12, Y12; \
	VFMADD231PS Y12, Y11, facc

// func rows4Q8_0AVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32, ldo int)
// bsum is not read (Q8_0 has no offsets); R11 points at token 2's scales.
TEXT ·rows4Q8_0AVX2(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), SI
	MOVQ nb+32(FP), R8
	MOVQ R8, R10
	SHLQ $2, R10
	SHLQ $5, R8
	MOVQ out+48(FP), R14
	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15

t4q80row:
	MOVQ q+8(FP), DI
	LEAQ (DI)(R8*2), R9
	MOVQ d+16(FP), DX
	LEAQ (DX)(R10*2), R11
	MOVQ nb+32(FP), CX
	TILE_ZERO_SUMS

t4q80loop:
	VMOVDQU 2(SI), Y8
	VPABSB Y8, Y9
	VCVTPH2PS (SI), X10
	VBROADCASTSS X10, Y10
	TQ80_TOK((DI), (DX), Y0)
	TQ80_TOK((DI)(R8*1), (DX)(R10*1), Y1)
	TQ80_TOK((R9), (R11), Y2)
	TQ80_TOK((R9)(R8*1), (R11)(R10*1), Y3)
	ADDQ $34, SI
	ADDQ $32, DI
	ADDQ $32, R9
	ADDQ $4, DX
	ADDQ $4, R11
	DECQ CX
	JNE t4q80loop
	TILE_STORE4(ldo+56(FP))
	DECQ nrows+40(FP)
	JNE t4q80row
	VZEROUPPER
	RET

// func rows4Q4_0AVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32, ldo int)
// rows4Q8_0AVX2 on Q4_0 blocks (d, qs[16]): the codes unpacked (low
// nibbles elements 0–15, high 16–31) less 8 into Y8 once a block (Y13:
// 0x0f bytes, Y14: 8s).
TEXT ·rows4Q4_0AVX2(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), SI
	MOVQ nb+32(FP), R8
	MOVQ R8, R10
	SHLQ $2, R10
	SHLQ $5, R8
	MOVQ out+48(FP), R14
	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVL $0x08080808, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14

t4q40row:
	MOVQ q+8(FP), DI
	LEAQ (DI)(R8*2), R9
	MOVQ d+16(FP), DX
	LEAQ (DX)(R10*2), R11
	MOVQ nb+32(FP), CX
	TILE_ZERO_SUMS

t4q40loop:
	VMOVDQU 2(SI), X8
	VPSRLW $4, X8, X9
	VINSERTI128 $1, X9, Y8, Y8
	VPAND Y13, Y8, Y8
	VPSUBB Y14, Y8, Y8
	VPABSB Y8, Y9
	VCVTPH2PS (SI), X10
	VBROADCASTSS X10, Y10
	TQ80_TOK((DI), (DX), Y0)
	TQ80_TOK((DI)(R8*1), (DX)(R10*1), Y1)
	TQ80_TOK((R9), (R11), Y2)
	TQ80_TOK((R9)(R8*1), (R11)(R10*1), Y3)
	ADDQ $18, SI
	ADDQ $32, DI
	ADDQ $32, R9
	ADDQ $4, DX
	ADDQ $4, R11
	DECQ CX
	JNE t4q40loop
	TILE_STORE4(ldo+56(FP))
	DECQ nrows+40(FP)
	JNE t4q40row
	VZEROUPPER
	RET

// Q4_K. TQ4K_SCALES unpacks the eight 6-bit scales into Y12 (int16, both
// lanes) and leaves the eight mins' bytes in BX (quant_amd64.s's
// K45_SCALES with three registers: AX, BX, R11).
#define TQ4K_SCALES \
	MOVL 12(SI), AX; \
	MOVL AX, BX; \
	ANDL $0x0f0f0f0f, AX; \
	MOVL 4(SI), R11; \
	SHRL $6, R11; \
	ANDL $0x03030303, R11; \
	SHLL $4, R11; \
	ORL R11, AX; \
	MOVL 4(SI), R11; \
	ANDL $0x3f3f3f3f, R11; \
	SHLQ $32, AX; \
	ORQ R11, AX; \
	SHRL $4, BX; \
	ANDL $0x0f0f0f0f, BX; \
	MOVL 8(SI), R11; \
	SHRL $6, R11; \
	ANDL $0x03030303, R11; \
	SHLL $4, R11; \
	ORL R11, BX; \
	MOVL 8(SI), R11; \
	ANDL $0x3f3f3f3f, R11; \
	SHLQ $32, BX; \
	ORQ R11, BX; \
	VMOVQ AX, X12; \
	VPMOVZXBW X12, X12; \
	VINSERTI128 $1, X12, Y12, Y12

// One token's share of a chunk: codes Y8 (sub-block 2c) and Y9 (2c+1)
// times the activations at xa and xb, times the scales Y10 and Y11,
// into the int32 sums acc.
#define TQ4K_TOK(xa, xb, acc) \
	VPMADDUBSW xa, Y8, Y13; \
	VPMADDWD Y10, Y13, Y13; \
	VPADDD Y13, acc, acc; \
	VPMADDUBSW xb, Y9, Y14; \
	VPMADDWD Y11, Y14, Y14; \
	VPADDD Y14, acc, acc

// Chunk c (64 elements): its nibbles and scales once, then the tokens.
#define TQ4K_CHUNK(c) \
	VMOVDQU (16+32*c)(SI), Y8; \
	VPSRLW $4, Y8, Y9; \
	VPAND Y15, Y8, Y8; \
	VPAND Y15, Y9, Y9; \
	VPSHUFB tileQ4KShuf<>+(64*c)(SB), Y12, Y10; \
	VPSHUFB tileQ4KShuf<>+(64*c+32)(SB), Y12, Y11; \
	TQ4K_TOK((64*c)(DI), (64*c+32)(DI), Y4); \
	TQ4K_TOK((64*c)(DI)(R8*1), (64*c+32)(DI)(R8*1), Y5); \
	TQ4K_TOK((64*c)(R9), (64*c+32)(R9), Y6); \
	TQ4K_TOK((64*c)(R9)(R8*1), (64*c+32)(R9)(R8*1), Y7)

// One token's end of a super-block: the integer sum iacc times d·d_x
// into facc, less dmin·d_x times Σ_j m_j·(Σx over sub-block j) (the
// sixteen sums at sa paired; X9 holds the mins); iacc cleared. Y10 and
// Y11 hold d and dmin broadcast.
#define TQ4K_TOKEND(dxa, sa, facc, iacc, ix) \
	VBROADCASTSS dxa, Y13; \
	VMULPS Y10, Y13, Y14; \
	VCVTDQ2PS iacc, iacc; \
	VFMADD231PS Y14, iacc, facc; \
	VMULPS Y11, Y13, Y13; \
	VMOVDQU sa, Y14; \
	VEXTRACTI128 $1, Y14, ix; \
	VPHADDW ix, X14, X14; \
	VPMADDWD X9, X14, X14; \
	VCVTDQ2PS X14, X14; \
	VFNMADD231PS Y13, Y14, facc; \
	VPXOR iacc, iacc, iacc

// R12 points at token 0's sums, R13 is their stride.
#define TQ4K_END \
	VCVTPH2PS (SI), X10; \
	VMOVSHDUP X10, X11; \
	VBROADCASTSS X10, Y10; \
	VBROADCASTSS X11, Y11; \
	VMOVQ BX, X9; \
	VPMOVZXBW X9, X9; \
	TQ4K_TOKEND((DX), (R12), Y0, Y4, X4); \
	TQ4K_TOKEND((DX)(R10*1), (R12)(R13*1), Y1, Y5, X5); \
	TQ4K_TOKEND((DX)(R10*2), (R12)(R13*2), Y2, Y6, X6); \
	LEAQ (DX)(R10*2), AX; \
	LEAQ (R12)(R13*2), R11; \
	TQ4K_TOKEND((AX)(R10*1), (R11)(R13*1), Y3, Y7, X7)

// func rows4Q4KAVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32, ldo int)
TEXT ·rows4Q4KAVX2(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), SI
	MOVQ nb+32(FP), R8
	MOVQ R8, R10
	SHLQ $2, R10
	MOVQ R8, R13
	SHLQ $5, R13
	SHLQ $8, R8
	MOVQ out+48(FP), R14
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15

t4q4krow:
	MOVQ q+8(FP), DI
	LEAQ (DI)(R8*2), R9
	MOVQ d+16(FP), DX
	MOVQ bsum+24(FP), R12
	MOVQ nb+32(FP), CX
	TILE_ZERO_SUMS
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7

t4q4kloop:
	TQ4K_SCALES
	TQ4K_CHUNK(0)
	TQ4K_CHUNK(1)
	TQ4K_CHUNK(2)
	TQ4K_CHUNK(3)
	TQ4K_END
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $256, R9
	ADDQ $4, DX
	ADDQ $32, R12
	DECQ CX
	JNE t4q4kloop
	TILE_STORE4(ldo+56(FP))
	DECQ nrows+40(FP)
	JNE t4q4krow
	VZEROUPPER
	RET

// Q5_K: Q4_K's layout with qh[32] at 16 and the nibbles at 48. Chunk c's
// fifth bits are bits 2c (low nibbles) and 2c+1 (high) of the qh bytes,
// moved to bit 4 (Y13, Y14 are free until the tokens' products).
#define TQ5K_CHUNK(c) \
	VMOVDQU (48+32*c)(SI), Y8; \
	VPSRLW $4, Y8, Y9; \
	VPAND Y15, Y8, Y8; \
	VPAND Y15, Y9, Y9; \
	VMOVDQU 16(SI), Y13; \
	VPSRLW $(2*c), Y13, Y14; \
	VPAND tileMask01<>(SB), Y14, Y14; \
	VPSLLW $4, Y14, Y14; \
	VPOR Y14, Y8, Y8; \
	VPSRLW $(2*c+1), Y13, Y14; \
	VPAND tileMask01<>(SB), Y14, Y14; \
	VPSLLW $4, Y14, Y14; \
	VPOR Y14, Y9, Y9; \
	VPSHUFB tileQ4KShuf<>+(64*c)(SB), Y12, Y10; \
	VPSHUFB tileQ4KShuf<>+(64*c+32)(SB), Y12, Y11; \
	TQ4K_TOK((64*c)(DI), (64*c+32)(DI), Y4); \
	TQ4K_TOK((64*c)(DI)(R8*1), (64*c+32)(DI)(R8*1), Y5); \
	TQ4K_TOK((64*c)(R9), (64*c+32)(R9), Y6); \
	TQ4K_TOK((64*c)(R9)(R8*1), (64*c+32)(R9)(R8*1), Y7)

// func rows4Q5KAVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32, ldo int)
// rows4Q4KAVX2 with five-bit codes (0…31: the int16 pair sums stay below
// 2·31·127).
TEXT ·rows4Q5KAVX2(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), SI
	MOVQ nb+32(FP), R8
	MOVQ R8, R10
	SHLQ $2, R10
	MOVQ R8, R13
	SHLQ $5, R13
	SHLQ $8, R8
	MOVQ out+48(FP), R14
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15

t4q5krow:
	MOVQ q+8(FP), DI
	LEAQ (DI)(R8*2), R9
	MOVQ d+16(FP), DX
	MOVQ bsum+24(FP), R12
	MOVQ nb+32(FP), CX
	TILE_ZERO_SUMS
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7

t4q5kloop:
	TQ4K_SCALES
	TQ5K_CHUNK(0)
	TQ5K_CHUNK(1)
	TQ5K_CHUNK(2)
	TQ5K_CHUNK(3)
	TQ4K_END
	ADDQ $176, SI
	ADDQ $256, DI
	ADDQ $256, R9
	ADDQ $4, DX
	ADDQ $32, R12
	DECQ CX
	JNE t4q5kloop
	TILE_STORE4(ldo+56(FP))
	DECQ nrows+40(FP)
	JNE t4q5krow
	VZEROUPPER
	RET

// Q6_K. The codes are 0…63 here; the −32 offset starts each token's
// integer sum at −32·Σ_j sc_j·(Σx over sub-block j) (one VPMADDWD of
// −32·sc with the token's sixteen sums; |32·sc| ≤ 4096). Y11 holds the
// half's qh bytes, Y12 its ql bytes, X14 the sixteen int8 scales.
#define TQ6K_TOK(xa, acc) \
	VPMADDUBSW xa, Y8, Y9; \
	VPMADDWD Y10, Y9, Y9; \
	VPADDD Y9, acc, acc

// Group s (p = 4h + s) of a half: its low bits already in Y8, the top two
// bits (qh bits 2s, 2s+1) already moved to bits 4–5 of Y13 (word shifts
// of Y11: the bits kept never cross a byte), its two sub-blocks' scales
// to Y10.
#define TQ6K_GROUP(xoff, p) \
	VPAND tileMask30<>(SB), Y13, Y13; \
	VPOR Y13, Y8, Y8; \
	VPSHUFB tileQ6KShuf<>+(16*p)(SB), X14, X10; \
	VPMOVSXBW X10, Y10; \
	TQ6K_TOK((xoff)(DI), Y4); \
	TQ6K_TOK((xoff)(DI)(R8*1), Y5); \
	TQ6K_TOK((xoff)(R9), Y6); \
	TQ6K_TOK((xoff)(R9)(R8*1), Y7)

// Half h: ql[64h + l] holds elements 128h + l (low nibble, group 0) and
// 128h + 64 + l (high, group 2); ql[64h + 32 + l] groups 1 and 3.
#define TQ6K_HALF(h) \
	VMOVDQU (128+32*h)(SI), Y11; \
	VMOVDQU (64*h)(SI), Y12; \
	VPAND Y15, Y12, Y8; \
	VPSLLW $4, Y11, Y13; \
	TQ6K_GROUP((128*h), (4*h)); \
	VPSRLW $4, Y12, Y8; \
	VPAND Y15, Y8, Y8; \
	VMOVDQA Y11, Y13; \
	TQ6K_GROUP((128*h+64), (4*h+2)); \
	VMOVDQU (64*h+32)(SI), Y12; \
	VPAND Y15, Y12, Y8; \
	VPSLLW $2, Y11, Y13; \
	TQ6K_GROUP((128*h+32), (4*h+1)); \
	VPSRLW $4, Y12, Y8; \
	VPAND Y15, Y8, Y8; \
	VPSRLW $2, Y11, Y13; \
	TQ6K_GROUP((128*h+96), (4*h+3))

#define TQ6K_START \
	VMOVDQU 192(SI), X14; \
	VPMOVSXBW X14, Y8; \
	VPSLLW $5, Y8, Y8; \
	VPXOR Y9, Y9, Y9; \
	VPSUBW Y8, Y9, Y8; \
	VPMADDWD (R12), Y8, Y4; \
	VPMADDWD (R12)(R13*1), Y8, Y5; \
	VPMADDWD (R12)(R13*2), Y8, Y6; \
	LEAQ (R12)(R13*2), AX; \
	VPMADDWD (AX)(R13*1), Y8, Y7

#define TQ6K_TOKEND(dxa, facc, iacc) \
	VBROADCASTSS dxa, Y9; \
	VMULPS Y10, Y9, Y9; \
	VCVTDQ2PS iacc, iacc; \
	VFMADD231PS Y9, iacc, facc

#define TQ6K_END \
	MOVWLZX 208(SI), AX; \
	VMOVD AX, X10; \
	VCVTPH2PS X10, X10; \
	VBROADCASTSS X10, Y10; \
	TQ6K_TOKEND((DX), Y0, Y4); \
	TQ6K_TOKEND((DX)(R10*1), Y1, Y5); \
	TQ6K_TOKEND((DX)(R10*2), Y2, Y6); \
	LEAQ (DX)(R10*2), AX; \
	TQ6K_TOKEND((AX)(R10*1), Y3, Y7)

// func rows4Q6KAVX2(w *byte, q *int8, d *float32, bsum *int16, nb int, nrows int, out *float32, ldo int)
TEXT ·rows4Q6KAVX2(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), SI
	MOVQ nb+32(FP), R8
	MOVQ R8, R10
	SHLQ $2, R10
	MOVQ R8, R13
	SHLQ $5, R13
	SHLQ $8, R8
	MOVQ out+48(FP), R14
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15

t4q6krow:
	MOVQ q+8(FP), DI
	LEAQ (DI)(R8*2), R9
	MOVQ d+16(FP), DX
	MOVQ bsum+24(FP), R12
	MOVQ nb+32(FP), CX
	TILE_ZERO_SUMS

t4q6kloop:
	TQ6K_START
	TQ6K_HALF(0)
	TQ6K_HALF(1)
	TQ6K_END
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $256, R9
	ADDQ $4, DX
	ADDQ $32, R12
	DECQ CX
	JNE t4q6kloop
	TILE_STORE4(ldo+56(FP))
	DECQ nrows+40(FP)
	JNE t4q6krow
	VZEROUPPER
	RET
