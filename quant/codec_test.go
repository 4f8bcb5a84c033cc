package quant

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/half"
)

type manifest struct {
	Cases []struct {
		Name    string `json:"name"`
		Rows, K int
	} `json:"cases"`
}

func readManifest(t *testing.T, dir string) manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Cases) == 0 {
		t.Fatal("manifest has no cases")
	}
	return m
}

func readF32(t *testing.T, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// TestTQVectors checks the row quantizers byte for byte against
// llama.cpp's reference output (testdata/tq is a copy of
// ../shared/vectors/tq), and that dequantization gives back what the
// reference dequantizer would: sign(x)·fp16(d) for ternary inputs.
func TestTQVectors(t *testing.T) {
	dir := "testdata/tq"
	for _, c := range readManifest(t, dir).Cases {
		x := readF32(t, filepath.Join(dir, c.Name+".f32"))
		if len(x) != c.Rows*c.K {
			t.Fatalf("%s: %d values, want %d", c.Name, len(x), c.Rows*c.K)
		}
		for _, f := range []struct {
			ext   string
			bytes int
			q     func([]byte, []float32) error
			dq    func([]float32, []byte)
		}{{"tq1_0", BlockBytesTQ1_0, QuantizeRowTQ1_0, DequantizeRowTQ1_0}, {"tq2_0", BlockBytesTQ2_0, QuantizeRowTQ2_0, DequantizeRowTQ2_0}} {
			want, err := os.ReadFile(filepath.Join(dir, c.Name+"."+f.ext))
			if err != nil {
				t.Fatal(err)
			}
			rb := c.K / QK * f.bytes
			got := make([]byte, c.Rows*rb)
			for r := 0; r < c.Rows; r++ {
				if err := f.q(got[r*rb:(r+1)*rb], x[r*c.K:(r+1)*c.K]); err != nil {
					t.Fatalf("%s %s row %d: %v", c.Name, f.ext, r, err)
				}
			}
			if i := firstDiff(got, want); i >= 0 {
				t.Errorf("%s.%s: byte %d is %02x, reference %02x", c.Name, f.ext, i, got[i], want[i])
			}
			// Round trip: requantizing the dequantized row gives the same bytes.
			y := make([]float32, c.K)
			again := make([]byte, rb)
			for r := 0; r < c.Rows; r++ {
				f.dq(y, want[r*rb:])
				if err := f.q(again, y); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(again, want[r*rb:(r+1)*rb]) {
					t.Errorf("%s.%s row %d: dequant→quant is not stable", c.Name, f.ext, r)
				}
			}
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// TestTQKnownAnswers: formats.md §4's all-zero blocks.
func TestTQKnownAnswers(t *testing.T) {
	z := make([]float32, 256)
	b1 := make([]byte, 54)
	b2 := make([]byte, 66)
	QuantizeRowTQ1_0(b1, z)
	QuantizeRowTQ2_0(b2, z)
	want1 := append(append(bytes.Repeat([]byte{0x80}, 48), bytes.Repeat([]byte{0x7F}, 4)...), 0, 0)
	want2 := append(bytes.Repeat([]byte{0x55}, 64), 0, 0)
	if !bytes.Equal(b1, want1) || !bytes.Equal(b2, want2) {
		t.Errorf("zero block: tq1_0 %x, tq2_0 %x", b1, b2)
	}
}

// TestTernaryRoundTrips: every codec returns the ternary values it packed,
// for random rows of awkward lengths.
func TestTernaryRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range []int{256, 512, 2560, 6912} {
		q := make([]int8, k)
		x := make([]float32, k)
		const alpha = 0.0375
		for i := range q {
			q[i] = int8(rng.IntN(3)) - 1
			x[i] = float32(q[i]) * alpha
		}
		for _, f := range []struct {
			name string
			n    int
			q    func([]byte, []float32) error
			dq   func([]float32, []byte)
		}{{"tq1_0", BlockBytesTQ1_0, QuantizeRowTQ1_0, DequantizeRowTQ1_0}, {"tq2_0", BlockBytesTQ2_0, QuantizeRowTQ2_0, DequantizeRowTQ2_0}} {
			buf := make([]byte, k/QK*f.n)
			if err := f.q(buf, x); err != nil {
				t.Fatal(err)
			}
			y := make([]float32, k)
			f.dq(y, buf)
			for i := range y {
				if sgn(y[i]) != q[i] {
					t.Fatalf("%s k=%d: weight %d came back %v, packed %d", f.name, k, i, y[i], q[i])
				}
			}
		}
		for _, f := range []struct {
			name   string
			bytes  func(int) int
			pack   func([]byte, []int8)
			unpack func([]int8, []byte)
		}{{"halo2", RowBytesHALO2, PackRowHALO2, UnpackRowHALO2}, {"tq1h", RowBytesTQ1H, PackRowTQ1H, UnpackRowTQ1H}} {
			for _, kk := range []int{k, k - 3} { // also a ragged tail
				buf := make([]byte, f.bytes(kk))
				f.pack(buf, q[:kk])
				got := make([]int8, kk)
				f.unpack(got, buf)
				if !bytes.Equal(i8b(got), i8b(q[:kk])) {
					t.Fatalf("%s k=%d: round trip differs", f.name, kk)
				}
			}
		}
	}
}

// TestHALO2AndTQ1HBytes pins the bit layouts of formats.md §6 by hand.
func TestHALO2AndTQ1HBytes(t *testing.T) {
	b := make([]byte, 2)
	PackRowHALO2(b, []int8{-1, 0, 1, 1, 0})
	// codes 0,1,2,2 → 0b10_10_01_00; tail: 1,pad 1,1,1 → 0b01010101
	if b[0] != 0xA4 || b[1] != 0x55 {
		t.Errorf("halo2 bytes %x", b)
	}
	var u [4]int8
	UnpackRowHALO2(u[:], []byte{0xFF}) // code 3 is reserved → 0
	if u != [4]int8{} {
		t.Errorf("code 3 decoded to %v", u)
	}
	v := make([]byte, RowBytesTQ1H(6912))
	if len(v) != 1384 {
		t.Errorf("tq1h row bytes %d", len(v))
	}
	w := make([]byte, 4)
	PackRowTQ1H(w, []int8{1, -1, 0, 0, 1, 0})
	// digits 2,0,1,1,2 → 2 + 0 + 9 + 27 + 162 = 200; then 1 + pads 1·(3+9+27+81) = 121
	if w[0] != 200 || w[1] != 121 || w[2] != 121 {
		t.Errorf("tq1h bytes %v", w)
	}
	got := make([]int8, 5)
	UnpackRowTQ1H(got, []byte{250})
	if !bytes.Equal(i8b(got), make([]byte, 5)) {
		t.Errorf("byte 250 decoded to %v, want zeros", got)
	}
}

func TestTQErrors(t *testing.T) {
	x := make([]float32, 512)
	x[300] = float32(math.NaN())
	err := QuantizeRowTQ2_0(make([]byte, 132), x)
	var re *RowError
	if !errors.As(err, &re) || re.Index != 300 || !strings.Contains(err.Error(), "not finite") {
		t.Errorf("NaN: %v", err)
	}
	x[300] = 70000
	if err := QuantizeRowTQ1_0(make([]byte, 108), x); !errors.As(err, &re) || re.Index != 256 || !strings.Contains(err.Error(), "overflows fp16") {
		t.Errorf("overflow: %v", err)
	}
	if err := QuantizeRowTQ2_0(make([]byte, 66), make([]float32, 300)); err == nil || !strings.Contains(err.Error(), "not a multiple of 256") {
		t.Errorf("length: %v", err)
	}
}

func sgn(v float32) int8 {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

func i8b(v []int8) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(x)
	}
	return b
}

// TestQuantizeTernaryRowMatchesFloatPath: packing codes with a scale gives
// the bytes the reference quantizer gives for the floats codes·scale.
func TestQuantizeTernaryRowMatchesFloatPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 50; trial++ {
		k := 256 * (1 + rng.IntN(4))
		q := make([]int8, k)
		x := make([]float32, k)
		s := float32(rng.ExpFloat64() * 0.05)
		if trial == 0 {
			s = 0
		}
		for i := range q {
			if (i/256)%3 != 1 || trial%2 == 0 { // some all-zero blocks
				q[i] = int8(rng.IntN(3)) - 1
			}
			x[i] = float32(q[i]) * s
		}
		for _, tq1 := range []bool{false, true} {
			n, f := BlockBytesTQ2_0, QuantizeRowTQ2_0
			if tq1 {
				n, f = BlockBytesTQ1_0, QuantizeRowTQ1_0
			}
			want := make([]byte, k/256*n)
			got := make([]byte, len(want))
			if err := f(want, x); err != nil {
				t.Fatal(err)
			}
			if err := QuantizeTernaryRow(got, q, s, tq1); err != nil {
				t.Fatal(err)
			}
			if i := firstDiff(got, want); i >= 0 {
				t.Fatalf("trial %d tq1=%v s=%v: byte %d %02x vs %02x", trial, tq1, s, i, got[i], want[i])
			}
		}
	}
}

// TestGPTQRowCodesRounding compares the magic-constant rounding with
// math.RoundToEven, ties included.
func TestGPTQRowCodesRounding(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	w := make([]float32, 256)
	sc := make([]uint16, 2)
	for trial := 0; trial < 100; trial++ {
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		if err := GPTQRowScales(sc, w); err != nil {
			t.Fatal(err)
		}
		s0 := half.F16ToF32(sc[0])
		for i := 0; i < 16; i++ { // exact ties at ±0.5, ±1.5, …
			w[i] = (float32(i) - 7.5) * s0
		}
		q := make([]uint8, len(w))
		GPTQRowCodes(q, w, sc)
		for i, v := range w {
			s := half.F16ToF32(sc[i/128])
			want := min(15, max(0, math.RoundToEven(float64(v/s))+8))
			if float64(q[i]) != want {
				t.Fatalf("trial %d elem %d: w/s=%v → %d, want %v", trial, i, v/s, q[i], want)
			}
		}
	}
}

// TestVectorCopiesMatchShared: testdata/tq is a copy of
// ../shared/vectors/tq; when the shared tree is beside the repo (CI), the
// copies must still be identical.
func TestVectorCopiesMatchShared(t *testing.T) {
	shared := "../../shared/vectors/tq"
	if _, err := os.Stat(shared); err != nil {
		t.Skip("../shared not present")
	}
	entries, err := os.ReadDir(shared)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		a, _ := os.ReadFile(filepath.Join(shared, e.Name()))
		b, err := os.ReadFile(filepath.Join("testdata/tq", e.Name()))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("testdata/tq/%s differs from %s (copy it again)", e.Name(), shared)
		}
	}
}
