package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/half"
)

// The reference formulas below are written a second time, independently
// of dequant.go: in ggml's loop form (pointers walking the code bytes,
// the K-quants' scales unpacked with 32-bit masks as ggml's dot products
// do), where dequant.go computes each element from its index.

// halfFields are the byte offsets of each type's fp16 scales.
var halfFields = map[Type][]int{
	TypeQ8_0: {0}, TypeQ4_0: {0}, TypeQ4_1: {0, 2}, TypeQ5_0: {0}, TypeQ5_1: {0, 2}, TypeIQ4_NL: {0},
	TypeQ2_K: {80, 82}, TypeQ3_K: {108}, TypeQ4_K: {0, 2}, TypeQ5_K: {0, 2}, TypeQ6_K: {208},
}

var refDequant = map[Type]func(b []byte, y []float32){
	TypeQ8_0: func(b []byte, y []float32) {
		d := refF16(b)
		for j := range 32 {
			y[j] = float32(int8(b[2+j])) * d
		}
	},
	TypeQ4_0: func(b []byte, y []float32) {
		d := refF16(b)
		for j := range 16 {
			y[j] = float32(int(b[2+j]&0x0F)-8) * d
			y[j+16] = float32(int(b[2+j]>>4)-8) * d
		}
	},
	TypeQ4_1: func(b []byte, y []float32) {
		d, m := refF16(b), refF16(b[2:])
		for j := range 16 {
			y[j] = float32(float32(b[4+j]&0x0F)*d) + m
			y[j+16] = float32(float32(b[4+j]>>4)*d) + m
		}
	},
	TypeQ5_0: func(b []byte, y []float32) {
		d := refF16(b)
		qh := binary.LittleEndian.Uint32(b[2:])
		for j := range 16 {
			xh0 := byte(qh>>j<<4) & 0x10
			xh1 := byte(qh>>(j+12)) & 0x10
			y[j] = float32(int32(b[6+j]&0x0F|xh0)-16) * d
			y[j+16] = float32(int32(b[6+j]>>4|xh1)-16) * d
		}
	},
	TypeQ5_1: func(b []byte, y []float32) {
		d, m := refF16(b), refF16(b[2:])
		qh := binary.LittleEndian.Uint32(b[4:])
		for j := range 16 {
			xh0 := byte(qh>>j<<4) & 0x10
			xh1 := byte(qh>>(j+12)) & 0x10
			y[j] = float32(float32(b[8+j]&0x0F|xh0)*d) + m
			y[j+16] = float32(float32(b[8+j]>>4|xh1)*d) + m
		}
	},
	TypeIQ4_NL: func(b []byte, y []float32) {
		table := []int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}
		d := refF16(b)
		for j := range 16 {
			y[j] = d * float32(table[b[2+j]&0xf])
			y[j+16] = d * float32(table[b[2+j]>>4])
		}
	},
	TypeQ2_K: func(b []byte, y []float32) {
		scales, q := b[:16], b[16:80]
		d, dmin := refF16(b[80:]), refF16(b[82:])
		is, o := 0, 0
		for n := 0; n < 256; n += 128 {
			for shift := 0; shift < 8; shift += 2 {
				for half := range 2 {
					sc := scales[is]
					is++
					dl, ml := d*float32(sc&0xF), dmin*float32(sc>>4)
					for l := range 16 {
						y[o] = float32(dl*float32((q[l+16*half]>>shift)&3)) - ml
						o++
					}
				}
			}
			q = q[32:]
		}
	},
	TypeQ3_K: func(b []byte, y []float32) {
		hm, q := b[:32], b[32:96]
		d := refF16(b[108:])
		const kmask1, kmask2 = 0x03030303, 0x0f0f0f0f
		var aux [4]uint32
		for i := range 3 {
			aux[i] = binary.LittleEndian.Uint32(b[96+4*i:])
		}
		tmp := aux[2]
		aux[2] = aux[0]>>4&kmask2 | (tmp>>4&kmask1)<<4
		aux[3] = aux[1]>>4&kmask2 | (tmp>>6&kmask1)<<4
		aux[0] = aux[0]&kmask2 | (tmp&kmask1)<<4
		aux[1] = aux[1]&kmask2 | (tmp>>2&kmask1)<<4
		var scales [16]int8
		for i := range 16 {
			scales[i] = int8(aux[i/4] >> (8 * (i % 4)))
		}
		is, o := 0, 0
		m := byte(1)
		for n := 0; n < 256; n += 128 {
			for shift := 0; shift < 8; shift += 2 {
				for half := range 2 {
					dl := d * float32(int(scales[is])-32)
					is++
					for l := 16 * half; l < 16*half+16; l++ {
						v := int(q[l] >> shift & 3)
						if hm[l]&m == 0 {
							v -= 4
						}
						y[o] = dl * float32(v)
						o++
					}
				}
				m <<= 1
			}
			q = q[32:]
		}
	},
	TypeQ4_K: func(b []byte, y []float32) { refQ45K(b, y, false) },
	TypeQ5_K: func(b []byte, y []float32) { refQ45K(b, y, true) },
	TypeQ6_K: func(b []byte, y []float32) {
		ql, qh, sc := b[:128], b[128:192], b[192:208]
		d := refF16(b[208:])
		for n := 0; n < 256; n += 128 {
			for l := range 32 {
				is := l / 16
				q1 := int(ql[l]&0xF|(qh[l]>>0&3)<<4) - 32
				q2 := int(ql[l+32]&0xF|(qh[l]>>2&3)<<4) - 32
				q3 := int(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				q4 := int(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
				y[n+l] = d * float32(int8(sc[is])) * float32(q1)
				y[n+l+32] = d * float32(int8(sc[is+2])) * float32(q2)
				y[n+l+64] = d * float32(int8(sc[is+4])) * float32(q3)
				y[n+l+96] = d * float32(int8(sc[is+6])) * float32(q4)
			}
			ql, qh, sc = ql[64:], qh[32:], sc[8:]
		}
	},
}

func refF16(b []byte) float32 { return half.F16ToF32(uint16(b[0]) | uint16(b[1])<<8) }

// refQ45K unpacks the eight 6-bit scales and mins with ggml's 32-bit
// masks (utmp), then walks the 64-element chunks.
func refQ45K(b []byte, y []float32, five bool) {
	d, dmin := refF16(b), refF16(b[2:])
	const kmask1, kmask2, kmask3 = 0x3f3f3f3f, 0x0f0f0f0f, 0x03030303
	var u [4]uint32
	for i := range 3 {
		u[i] = binary.LittleEndian.Uint32(b[4+4*i:])
	}
	u[3] = u[2]>>4&kmask2 | (u[1]>>6&kmask3)<<4
	uaux := u[1] & kmask1
	u[1] = u[2]&kmask2 | (u[0]>>6&kmask3)<<4
	u[2] = uaux
	u[0] &= kmask1
	byteOf := func(i int) float32 { return float32(byte(u[i/4] >> (8 * (i % 4)))) }
	ql, qh := b[16:144], []byte(nil)
	if five {
		qh, ql = b[16:48], b[48:176]
	}
	u1, u2 := byte(1), byte(2)
	o := 0
	for j := 0; j < 256; j += 64 {
		is := j / 32
		d1, m1 := d*byteOf(is), dmin*byteOf(8+is)
		d2, m2 := d*byteOf(is+1), dmin*byteOf(8+is+1)
		for l := range 32 {
			v := ql[l] & 0xF
			if five && qh[l]&u1 != 0 {
				v += 16
			}
			y[o] = float32(d1*float32(v)) - m1
			o++
		}
		for l := range 32 {
			v := ql[l] >> 4
			if five && qh[l]&u2 != 0 {
				v += 16
			}
			y[o] = float32(d2*float32(v)) - m2
			o++
		}
		ql = ql[32:]
		u1, u2 = u1<<2, u2<<2
	}
}

// randomBlocks is n blocks of t with random codes and fp16 scales of
// both signs in a sane range (no NaN or infinity).
func randomBlocks(rng *rand.Rand, t Type, n int) []byte {
	ts := int(t.TypeSize())
	b := make([]byte, n*ts)
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	for blk := range n {
		for _, at := range halfFields[t] {
			binary.LittleEndian.PutUint16(b[blk*ts+at:], half.F32ToF16(float32(rng.NormFloat64()*0.05)))
		}
	}
	return b
}

func TestDequantizeMatchesReferenceFormulas(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 1))
	for typ, ref := range refDequant {
		t.Run(typ.String(), func(t *testing.T) {
			if !typ.Dequantizable() {
				t.Fatalf("%s is not dequantizable", typ)
			}
			const n = 40
			src := randomBlocks(rng, typ, n)
			bs := int(typ.BlockSize())
			got := make([]float32, n*bs)
			if err := Dequantize(typ, src, got); err != nil {
				t.Fatal(err)
			}
			want := make([]float32, bs)
			for blk := range n {
				ref(src[blk*int(typ.TypeSize()):], want)
				for i, w := range want {
					if g := got[blk*bs+i]; math.Float32bits(g) != math.Float32bits(w) {
						t.Fatalf("block %d element %d: %v, reference %v", blk, i, g, w)
					}
				}
			}
		})
	}
}

// TestDequantizeSignAndMinConventions pins each type's convention with a
// hand-built block: which codes are negative, whether the min is added or
// subtracted, which bit is the high bit.
func TestDequantizeSignAndMinConventions(t *testing.T) {
	one, two := half.F32ToF16(1), half.F32ToF16(2)
	block := func(typ Type, set func(b []byte)) []byte {
		b := make([]byte, typ.TypeSize())
		set(b)
		return b
	}
	put := func(b []byte, at int, h uint16) { binary.LittleEndian.PutUint16(b[at:], h) }
	for _, c := range []struct {
		name string
		typ  Type
		blk  []byte
		want map[int]float32 // element → value
	}{
		{"Q8_0 signed byte", TypeQ8_0, block(TypeQ8_0, func(b []byte) { put(b, 0, two); b[2], b[3] = 0x81, 0x7f }),
			map[int]float32{0: -254, 1: 254, 2: 0}},
		{"Q4_0 offset 8, low nibble first", TypeQ4_0, block(TypeQ4_0, func(b []byte) { put(b, 0, one); b[2] = 0xf0 }),
			map[int]float32{0: -8, 16: 7, 1: -8}},
		{"Q4_1 min added", TypeQ4_1, block(TypeQ4_1, func(b []byte) { put(b, 0, two); put(b, 2, half.F32ToF16(-3)); b[4] = 0x51 }),
			map[int]float32{0: -1, 16: 7, 1: -3}},
		{"Q5_0 fifth bit from qh, offset 16", TypeQ5_0, block(TypeQ5_0, func(b []byte) { put(b, 0, one); b[2] = 1; b[5] = 0x80 }),
			map[int]float32{0: 0, 31: 0, 1: -16, 16: -16}},
		{"Q5_1 min added", TypeQ5_1, block(TypeQ5_1, func(b []byte) { put(b, 0, one); put(b, 2, one); b[4] = 1; b[8] = 0x0f }),
			map[int]float32{0: 32, 16: 1, 1: 1}},
		{"IQ4_NL codebook", TypeIQ4_NL, block(TypeIQ4_NL, func(b []byte) { put(b, 0, one); b[2] = 0xf0 }),
			map[int]float32{0: -127, 16: 113, 1: -127}},
		{"Q2_K min subtracted", TypeQ2_K, block(TypeQ2_K, func(b []byte) {
			b[0], b[15] = 0x21, 0x13 // sub-block 0: scale 1, min 2; sub-block 15: scale 3, min 1
			b[16] = 0b11 << 6        // element 96: code 3
			b[16+63] = 0b10 << 6     // element 255 (half 1, s 3, l 31): code 2
			put(b, 80, one)
			put(b, 82, one)
		}), map[int]float32{0: -2, 96: 0, 255: 5, 240: -1}},
		{"Q3_K hmask clear subtracts 4", TypeQ3_K, block(TypeQ3_K, func(b []byte) {
			b[0] = 0b10 // hmask: element 32 (bit 1 of byte 0) keeps its code
			b[32] = 0b1111
			b[96] = 0x1 | 0x3<<4 // scales 0 and 8: low nibbles 1 and 3
			b[104] = 0x2         // scale 0's top bits 2 → 33 − 32 = 1; scale 8 = 3 − 32
			put(b, 108, one)
			// Element 32 is in sub-block 2, whose scale is 0 − 32.
		}), map[int]float32{0: -1, 32: 3 * -32, 1: -4, 128: -4 * -29}},
		{"Q4_K min subtracted, upper scales split", TypeQ4_K, block(TypeQ4_K, func(b []byte) {
			put(b, 0, one)
			put(b, 2, two)
			b[4], b[8] = 3, 1 // sub-block 0: scale 3, min 1
			b[4+8] = 0x25     // sub-block 4: low nibbles scale 5, min 2
			b[4+0] |= 1 << 6  // sub-block 4 scale's top bits: +16
			b[4+4] |= 2 << 6  // sub-block 4 min's top bits: +32
			b[16] = 0xf1      // element 0 code 1, element 32 code 15
			b[16+64] = 0x02   // element 128 (chunk 2, sub-block 4) code 2
		}), map[int]float32{0: 3 - 2, 32: -2 * 0, 1: -2, 128: 21*2 - 2*34}},
		{"Q6_K offset 32, signed scale", TypeQ6_K, block(TypeQ6_K, func(b []byte) {
			b[192], b[193] = 0xfe, 3 // sub-blocks 0, 1: scales −2, 3
			b[0] = 0x0f              // element 0 low bits 15, element 64 low bits 0
			b[128] = 0b11            // element 0 top bits 3 → 63
			b[16] = 0x01             // element 16 (sub-block 1) low bits 1
			put(b, 208, one)
		}), map[int]float32{0: -2 * 31, 64: 0, 16: 3 * -31, 1: -2 * -32}},
	} {
		t.Run(c.name, func(t *testing.T) {
			y := make([]float32, c.typ.BlockSize())
			if err := Dequantize(c.typ, c.blk, y); err != nil {
				t.Fatal(err)
			}
			for i, w := range c.want {
				if y[i] != w {
					t.Errorf("element %d: %v, want %v", i, y[i], w)
				}
			}
		})
	}
}

// TestQuantizeRoundTrips quantizes normal data with this package's
// quantizers and checks the dequantized values stay within each type's
// error (relative RMS), and that the reference formulas read the same
// values back (the quantizers write the layout the readers expect).
func TestQuantizeRoundTrips(t *testing.T) {
	bound := map[Type]float64{
		TypeQ8_0: 0.008, TypeQ4_0: 0.12, TypeQ4_1: 0.1, TypeQ5_0: 0.06, TypeQ5_1: 0.05, TypeIQ4_NL: 0.1,
		TypeQ2_K: 0.4, TypeQ3_K: 0.21, TypeQ4_K: 0.1, TypeQ5_K: 0.05, TypeQ6_K: 0.026,
	}
	rng := rand.New(rand.NewPCG(20, 2))
	x := make([]float32, 4096)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
		if i%97 == 0 {
			x[i] *= 4 // outliers, as real weights have
		}
	}
	for typ, b := range bound {
		t.Run(typ.String(), func(t *testing.T) {
			q, err := Quantize(typ, x)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(q)) != typ.RowSize(int64(len(x))) {
				t.Fatalf("%d bytes, want %d", len(q), typ.RowSize(int64(len(x))))
			}
			y := make([]float32, len(x))
			must(t, Dequantize(typ, q, y))
			var se, sx float64
			for i := range x {
				se += float64(y[i]-x[i]) * float64(y[i]-x[i])
				sx += float64(x[i]) * float64(x[i])
			}
			rel := math.Sqrt(se / sx)
			t.Logf("%s: relative RMS error %.4f", typ, rel)
			if rel > b {
				t.Errorf("relative RMS error %.4f > %.3f", rel, b)
			}
			bs, ts := int(typ.BlockSize()), int(typ.TypeSize())
			ref := make([]float32, bs)
			for blk := 0; blk < len(x)/bs; blk++ {
				refDequant[typ](q[blk*ts:], ref)
				for i, v := range ref {
					if v != y[blk*bs+i] {
						t.Fatalf("block %d element %d: reference %v, Dequantize %v", blk, i, v, y[blk*bs+i])
					}
				}
			}
		})
	}
	// An all-zero input stays zero in every type.
	for typ := range bound {
		q, err := Quantize(typ, make([]float32, 256))
		must(t, err)
		y := make([]float32, 256)
		must(t, Dequantize(typ, q, y))
		for i, v := range y {
			if v != 0 {
				t.Fatalf("%s: zeros come back as %v at %d", typ, v, i)
			}
		}
	}
}

func TestDequantizeRefusesWrongSizes(t *testing.T) {
	if err := Dequantize(TypeQ4_K, make([]byte, 143), make([]float32, 256)); err == nil {
		t.Error("143 bytes read as a Q4_K block")
	}
	if err := Dequantize(TypeQ8_0, make([]byte, 34), make([]float32, 31)); err == nil {
		t.Error("31 elements read as a Q8_0 block")
	}
	if err := Dequantize(TypeIQ2_XXS, make([]byte, 66), make([]float32, 256)); err == nil {
		t.Error("IQ2_XXS dequantized")
	}
	if _, err := Quantize(TypeQ6_K, make([]float32, 128)); err == nil {
		t.Error("128 elements quantized to Q6_K")
	}
}

// TestReaderRefusesQuantTensorsOfTheWrongSize: a quantized tensor whose
// bytes disagree with its type and shape is refused with its name and
// byte offset.
func TestReaderRefusesQuantTensorsOfTheWrongSize(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	must(t, w.Set("general.architecture", "llama"))
	must(t, w.AddTensor("token_embd.weight", TypeQ8_0, 64, 2))    // 2 × 68 bytes
	must(t, w.AddTensor("blk.0.attn_q.weight", TypeQ4_K, 256, 3)) // 3 × 144 bytes
	must(t, w.WriteHeader())
	w.Write(make([]byte, 136+24+432)) // 24 bytes of alignment padding
	must(t, w.Finish())
	good := out.Bytes()
	dir := t.TempDir()
	p := filepath.Join(dir, "good.gguf")
	must(t, os.WriteFile(p, good, 0o644))
	g, err := Open(p)
	must(t, err)
	defer g.Close()
	q, _ := g.Tensor("blk.0.attn_q.weight")
	if q.Size != 432 || q.Offset != g.DataOffset+160 {
		t.Fatalf("Q4_K tensor %+v", q)
	}
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"truncated", good[:q.Offset+431], `tensor "blk.0.attn_q.weight": Q4_K [256 3] needs 432 bytes`},
		{"ne0 off the super-block", patchNe0(good, 128), `tensor "blk.0.attn_q.weight": ne[0] = 128 is not a multiple of the Q4_K block size 256`},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".gguf")
		must(t, os.WriteFile(p, c.b, 0o644))
		_, err := Open(p)
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Offset < 0 || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), p+": byte ") {
			t.Errorf("%s: %v, want the file, a byte offset and %q", c.name, err, c.want)
		}
	}
}
