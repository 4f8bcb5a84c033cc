//go:build !purego

package cpu

import "unsafe"

//go:noescape
func sherryPlanesNEON(dst, src *int8, nu int)

//go:noescape
func sherryRowsNEON(rows *byte, planes *int8, nu, stride, n int, total int32, xs float32, scale *float32, out unsafe.Pointer, c *[8][16]byte)

//go:noescape
func sherryRows4NEON(rows *byte, planes *int8, kp, nu, stride, n int, out *int32, c *[8][16]byte)

// sherryNEONConsts are the NEON kernels' vectors (sherry_arm64.s): for
// each half of a unit (codes 0–15 from the unit's bytes 0…15, codes 16–31
// from its bytes 4…19) the index of the byte holding code c's bit t =
// 5c mod 8 and of the byte after it, then the shifts −t and 8−t, then the
// lookup table (the 32 codes' I2-style bytes).
var sherryNEONConsts = func() (c [8][16]byte) {
	for half := range 2 {
		for i := range 16 {
			code := 16*half + i
			r := 5 * code / 8
			c[2*half][i] = byte(r - 4*half)
			c[2*half+1][i] = byte(r + 1 - 4*half) // 16 (past the table: 0) only where t ≤ 3
		}
	}
	for i := range 16 {
		t := 5 * i % 8
		c[4][i] = byte(int8(-t))
		c[5][i] = byte(8 - t)
	}
	copy(c[6][:], sherryI2Byte[:16])
	copy(c[7][:], sherryI2Byte[16:])
	return
}()

// sherryMaxUnitsNEON bounds the row length the NEON kernel takes: its
// A16 accumulator lanes hold 16·Σ of up to 32·127 a lane and unit, exact
// while they cannot wrap (8192 units: K ≤ 1M). Longer rows (none in a real
// model) take the portable kernel.
const sherryMaxUnitsNEON = 8192

// useSherry puts the Sherry kernels into k where it has SDOT.
func useSherry(k *kernels, f cpuFeatures) {
	if s := sherrySIMDFor(f); s != nil {
		sk := &k.tern[typeSherry]
		sk.rows, sk.rows4 = s.rowsKernel, s.rows4Kernel
	}
}

// sherrySIMDFor is the Sherry kernel set for features f (nil without SDOT).
func sherrySIMDFor(f cpuFeatures) *sherrySIMD {
	if !f.neon || !f.dotProd {
		return nil
	}
	c := &sherryNEONConsts
	return &sherrySIMD{unit: 128, maxUnits: sherryMaxUnitsNEON,
		planes: sherryPlanesNEON,
		rows: func(rows *byte, planes *int8, nu, stride, n int, total int32, xs float32, scale *float32, out unsafe.Pointer) {
			sherryRowsNEON(rows, planes, nu, stride, n, total, xs, scale, out, c)
		},
		rows4: func(rows *byte, planes *int8, kp, nu, stride, n int, out *int32) {
			sherryRows4NEON(rows, planes, kp, nu, stride, n, out, c)
		},
	}
}
