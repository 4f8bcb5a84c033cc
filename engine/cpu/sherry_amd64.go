//go:build !purego

package cpu

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

//go:noescape
func sherryPlanesVBMI(dst, src *int8, nu int, idx *[64]byte)

//go:noescape
func sherryRowsVBMI(rows *byte, planes *int8, nu, stride, n int, total int32, xs float32, scale *float32, out unsafe.Pointer, c *[8][64]byte)

//go:noescape
func sherryRows4VBMI(rows *byte, planes *int8, kp, nu, stride, n int, out *int32, c *[8][64]byte)

//go:noescape
func sherryPlanesAVX2(dst, src *int8, nu int, c *[12][32]byte)

//go:noescape
func sherryRowsAVX2(rows *byte, planes *int8, nu, stride, n int, total int32, xs float32, scale *float32, out unsafe.Pointer, c *[12][32]byte)

//go:noescape
func sherryRows4AVX2(rows *byte, planes *int8, kp, nu, stride, n int, out *int32, c *[12][32]byte)

// sherryVBMIConsts are the AVX-512 kernels' vectors (sherry_amd64.s):
// the spread index (qword m gets group m's five bytes), the multishift
// control (byte i of a qword takes bits 5i…), the lookup table (the 32
// codes' I2-style bytes, twice: VPERMB reads 6 index bits), the
// transpose index of sherryPlanesVBMI (lane p of a 64-byte quarter gets
// its plane p), and the four lane tables (w+1 of lane p, twice).
var sherryVBMIConsts = func() (c [8][64]byte) {
	for m := range 8 {
		for j := range 8 {
			c[0][8*m+j] = byte(5*m + j)
			c[1][8*m+j] = byte(5 * j)
		}
	}
	for i := range 64 {
		c[2][i] = sherryI2Byte[i&31]
	}
	for p := range 4 {
		for i := range 16 {
			c[3][16*p+i] = byte(4*i + p)
		}
		for i := range 64 {
			c[4+p][i] = byte(sherryWeights[i&31][p] + 1)
		}
	}
	return
}()

// sherryAVX2Consts are the AVX2 kernels' vectors (sherry_amd64.s): the
// gathers of the spanning codes S_d = 1, 3, 4, 6 (both of a lane's groups,
// each with its next byte) and the fitting codes N_d = 0, 2, 5, 7 (into
// bytes 1 and 3), their shift counts t, the blend mask (bytes 1 and 3),
// the lookup's T_lo and T_hi XOR T_lo, sherryPlanesAVX2's in-lane
// transpose, lane merge and order σ, and the bytes 31 and 16.
var sherryAVX2Consts = func() (c [12][32]byte) {
	spans, fits := [4]int{1, 3, 4, 6}, [4]int{0, 2, 5, 7}
	for lane := range 2 {
		for d := range 4 {
			o := 16*lane + 4*d
			for j, g := range [2]int{0, 1} { // the lane's two groups
				base := 5*(2*lane+g) - 4*lane // lane 1 holds the unit's bytes 4…19
				rs, rf := base+5*spans[d]/8, base+5*fits[d]/8
				c[0][o+2*j], c[0][o+2*j+1] = byte(rs), byte(rs+1)
				c[1][o+2*j], c[1][o+2*j+1] = 0x80, byte(rf)
			}
			c[2][o] = byte(5 * spans[d] % 8)
			c[3][o] = byte(5 * fits[d] % 8)
			c[4][o+1], c[4][o+3] = 0x80, 0x80
			for j := range 4 { // σ: byte 4d+j of the lane holds code 8·(j/2) + (S_d or N_d)
				code := 8 * (j / 2)
				if j%2 == 0 {
					code += spans[d]
				} else {
					code += fits[d]
				}
				c[9][o+j] = byte(code)
			}
		}
		for i := range 16 {
			c[5][16*lane+i] = sherryI2Byte[i]
			c[6][16*lane+i] = sherryI2Byte[16+i] ^ sherryI2Byte[i]
		}
		for p := range 4 {
			for i := range 4 {
				c[7][16*lane+4*p+i] = byte(4*i + p)
			}
		}
	}
	for i, d := range [8]byte{0, 4, 1, 5, 2, 6, 3, 7} {
		c[8][4*i] = d
	}
	for i := range 32 {
		c[10][i], c[11][i] = 31, 16
	}
	return
}()

// useSherry puts the Sherry kernels f allows into k.
func useSherry(k *kernels, f cpuFeatures) {
	if s := sherrySIMDFor(f); s != nil {
		sk := &k.tern[typeSherry]
		sk.rows, sk.rows4 = s.rowsKernel, s.rows4Kernel
		k.sherryNative = s.unit == 256 // the VBMI set; AVX2's decodes slower than I2 (5.0 ns a unit against 2.2)
		if k.sherryNative {
			useSherryLUT(k) // sherry_lut_amd64.go
		}
	}
}

// sherrySIMDFor is the Sherry kernel set for features f: AVX-512 VBMI
// with VNNI, else AVX2 (nil without AVX2).
func sherrySIMDFor(f cpuFeatures) *sherrySIMD {
	if f.avx512 && f.vnni && cpu.X86.HasAVX512VBMI {
		c := &sherryVBMIConsts
		return &sherrySIMD{unit: 256,
			planes: func(dst, src *int8, nu int) { sherryPlanesVBMI(dst, src, nu, &c[3]) },
			rows: func(rows *byte, planes *int8, nu, stride, n int, total int32, xs float32, scale *float32, out unsafe.Pointer) {
				sherryRowsVBMI(rows, planes, nu, stride, n, total, xs, scale, out, c)
			},
			rows4: func(rows *byte, planes *int8, kp, nu, stride, n int, out *int32) {
				sherryRows4VBMI(rows, planes, kp, nu, stride, n, out, c)
			},
		}
	}
	if !f.avx2 {
		return nil
	}
	c := &sherryAVX2Consts
	return &sherrySIMD{unit: 128, order: (*[16]byte)(c[9][:16]),
		planes: func(dst, src *int8, nu int) { sherryPlanesAVX2(dst, src, nu, c) },
		rows: func(rows *byte, planes *int8, nu, stride, n int, total int32, xs float32, scale *float32, out unsafe.Pointer) {
			sherryRowsAVX2(rows, planes, nu, stride, n, total, xs, scale, out, c)
		},
		rows4: func(rows *byte, planes *int8, kp, nu, stride, n int, out *int32) {
			sherryRows4AVX2(rows, planes, kp, nu, stride, n, out, c)
		},
	}
}
