// Shared by quant_arm64.s and quant_tile_arm64.s (the block types' one-
// and four-token kernels): instruction encodings, the two DOT forms, and
// the unpacking both kinds of kernel use.

// Instructions Go's assembler has no mnemonic for (field layouts as in
// kernels_arm64.s; d, n, m are register numbers). The kernel tests catch
// a wrong field: every kernel is compared with the portable one.

// SDOT Vd.4S, Vn.16B, Vm.16B (FEAT_DotProd)
#define SDOT(d, n, m) WORD $(0x4E809400 | ((m)<<16) | ((n)<<5) | (d))
// SMULL Vd.8H, Vn.8B, Vm.8B
#define SMULL(d, n, m) WORD $(0x0E20C000 | ((m)<<16) | ((n)<<5) | (d))
// SMLAL2 Vd.8H, Vn.16B, Vm.16B
#define SMLAL2(d, n, m) WORD $(0x4E208000 | ((m)<<16) | ((n)<<5) | (d))
// SADDLP Vd.4S, Vn.8H: 0 1 0 01110 01 10000 0 0010 10 Rn Rd
#define SADDLP(d, n) WORD $(0x4E602800 | ((n)<<5) | (d))
// SADALP Vd.4S, Vn.8H
#define SADALP(d, n) WORD $(0x4E606800 | ((n)<<5) | (d))
// SMULL Vd.4S, Vn.4H, Vm.4H: 0 0 0 01110 01 1 Rm 110000 Rn Rd
#define SMULL4S(d, n, m) WORD $(0x0E60C000 | ((m)<<16) | ((n)<<5) | (d))
// SMLAL Vd.4S, Vn.4H, Vm.4H: 0 0 0 01110 01 1 Rm 100000 Rn Rd
#define SMLAL4S(d, n, m) WORD $(0x0E608000 | ((m)<<16) | ((n)<<5) | (d))
// SMLAL2 Vd.4S, Vn.8H, Vm.8H: 0 1 0 01110 01 1 Rm 100000 Rn Rd
#define SMLAL24S(d, n, m) WORD $(0x4E608000 | ((m)<<16) | ((n)<<5) | (d))
// MUL Vd.4S, Vn.4S, Vm.4S: 0 1 0 01110 10 1 Rm 100111 Rn Rd
#define MUL4S(d, n, m) WORD $(0x4EA09C00 | ((m)<<16) | ((n)<<5) | (d))
// MLA Vd.4S, Vn.4S, Vm.4S: 0 1 0 01110 10 1 Rm 100101 Rn Rd
#define MLA4S(d, n, m) WORD $(0x4EA09400 | ((m)<<16) | ((n)<<5) | (d))
// SSHLL Vd.8H, Vn.8B, #0 (SXTL): 0 0 0 011110 0001 000 101001 Rn Rd
#define SXTL8H(d, n) WORD $(0x0F08A400 | ((n)<<5) | (d))
// SSHLL2 Vd.8H, Vn.16B, #0 (SXTL2)
#define SXTL28H(d, n) WORD $(0x4F08A400 | ((n)<<5) | (d))
// SSHLL Vd.4S, Vn.4H, #sh: 0 0 0 011110 0010 sh(3) 101001 Rn Rd
#define SSHLL4S(d, n, sh) WORD $(0x0F10A400 | ((sh)<<16) | ((n)<<5) | (d))
// SSHLL2 Vd.4S, Vn.8H, #sh
#define SSHLL24S(d, n, sh) WORD $(0x4F10A400 | ((sh)<<16) | ((n)<<5) | (d))
// SCVTF Vd.4S, Vn.4S
#define SCVTF(d, n) WORD $(0x4E21D800 | ((n)<<5) | (d))
// FMUL Vd.4S, Vn.4S, Vm.4S
#define FMUL(d, n, m) WORD $(0x6E20DC00 | ((m)<<16) | ((n)<<5) | (d))
// FADDP Vd.4S, Vn.4S, Vm.4S
#define FADDP(d, n, m) WORD $(0x6E20D400 | ((m)<<16) | ((n)<<5) | (d))
// FCVTL Vd.4S, Vn.4H
#define FCVTL(d, n) WORD $(0x0E217800 | ((n)<<5) | (d))
// MLS Vd.4S, Vn.4S, Vm.4S: 0 1 1 01110 10 1 Rm 100101 Rn Rd
#define MLS4S(d, n, m) WORD $(0x6EA09400 | ((m)<<16) | ((n)<<5) | (d))
// MLA Vd.4S, Vn.4S, Vm.S[i]: 0 1 1 01111 10 L M:Rm 0000 H 0 Rn Rd, i = H:L
#define MLAE(d, n, m, i) WORD $(0x6F800000 | (((i)&1)<<21) | ((m)<<16) | (((i)>>1)<<11) | ((n)<<5) | (d))
// MOVI Vd.2D, #0: 0 1 1 0111100000 000 1110 01 00000 Rd
#define MOVI0(d) WORD $(0x6F00E400 | (d))

// The two DOT forms. DOT32: acc (int32 ×4) = the products of the 32 codes
// in wa, wb with the activations in xa, xb, summed in some grouping; t1,
// t2 are scratch for the NEON form. DOT16: the same for 16.
#define DOT32_SDOT(acc, wa, wb, xa, xb, t1, t2) \
	MOVI0(acc); \
	SDOT(acc, wa, xa); \
	SDOT(acc, wb, xb)

#define DOT32_NEON(acc, wa, wb, xa, xb, t1, t2) \
	SMULL(t1, wa, xa); \
	SMULL(t2, wb, xb); \
	SMLAL2(t1, wa, xa); \
	SMLAL2(t2, wb, xb); \
	SADDLP(acc, t1); \
	SADALP(acc, t2)

#define DOT16_SDOT(acc, w, x, t) \
	MOVI0(acc); \
	SDOT(acc, w, x)

#define DOT16_NEON(acc, w, x, t) \
	SMULL(t, w, x); \
	SMLAL2(t, w, x); \
	SADDLP(acc, t)

// block_q4_K and block_q5_K start with d, dmin and the scales: K45_HEAD
// puts d|dmin in R5 and the eight 6-bit scales (R6, a byte each) and
// mins (R7) as ggml's get_scale_min_k4 reads them: scales 0–3 = u0 &
// 0x3f…, 4–7 = u2 & 0x0f… | (u0>>6 & 3…)<<4; mins 0–3 = u1 & 0x3f…,
// 4–7 = u2>>4 & 0x0f… | (u1>>6 & 3…)<<4.
#define K45_HEAD \
	MOVWU.P 4(R0), R5; \
	MOVWU.P 4(R0), R6; \
	MOVWU.P 4(R0), R7; \
	MOVWU.P 4(R0), R8; \
	LSRW $6, R6, R9; \
	ANDW $0x03030303, R9, R9; \
	ANDW $0x0f0f0f0f, R8, R16; \
	ORRW R9<<4, R16, R16; \
	LSRW $6, R7, R9; \
	ANDW $0x03030303, R9, R9; \
	LSRW $4, R8, R17; \
	ANDW $0x0f0f0f0f, R17, R17; \
	ORRW R9<<4, R17, R17; \
	ANDW $0x3f3f3f3f, R6, R6; \
	ANDW $0x3f3f3f3f, R7, R7; \
	ORR R16<<32, R6, R6; \
	ORR R17<<32, R7, R7

// block_q8_0: d, qs[32]: d into lane j of V24, the codes into A, B.
#define BLK_Q80(j, A, B, T0, T1, T2) \
	VLD1.P 2(R0), V24.H[j]; \
	VLD1.P 32(R0), [A.B16, B.B16]
