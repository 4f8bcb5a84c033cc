package sherry

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestVectors packs testdata (a copy of ../shared/vectors/sherry) and
// compares byte for byte.
func TestVectors(t *testing.T) {
	b, err := os.ReadFile("testdata/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Cases []struct {
			Name    string
			Rows, K int
		}
	}
	if err := json.Unmarshal(b, &m); err != nil || len(m.Cases) == 0 {
		t.Fatalf("manifest: %v", err)
	}
	for _, c := range m.Cases {
		raw, _ := os.ReadFile(filepath.Join("testdata", c.Name+".f32"))
		want, _ := os.ReadFile(filepath.Join("testdata", c.Name+".sherry"))
		if len(raw) != 4*c.Rows*c.K || len(want) != c.Rows*RowBytes(c.K) {
			t.Fatalf("%s: file sizes %d, %d", c.Name, len(raw), len(want))
		}
		rb := RowBytes(c.K)
		for r := 0; r < c.Rows; r++ {
			w := make([]float32, c.K)
			for i := range w {
				w[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(r*c.K+i):]))
			}
			got := make([]byte, rb)
			if err := PackRow(got, w); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if got[i] != want[r*rb+i] {
					t.Fatalf("%s row %d byte %d: %02x, reference %02x", c.Name, r, i, got[i], want[r*rb+i])
				}
			}
			// Unpack gives the projection: natural zeros stay where the
			// code's zero lane is, every kept lane has the input's sign
			// (0 → +1), and a lane holding a nonzero value is never zeroed
			// while its group has a zero.
			q := make([]int8, c.K)
			UnpackRow(q, got)
			for g := 0; g < c.K/4; g++ {
				zeros := 0
				for p := 0; p < 4; p++ {
					if w[4*g+p] == 0 {
						zeros++
					}
				}
				for p := 0; p < 4; p++ {
					v, x := q[4*g+p], w[4*g+p]
					switch {
					case v == 0 && zeros > 0 && x != 0:
						t.Fatalf("%s row %d group %d: zeroed a nonzero lane although the group has a zero", c.Name, r, g)
					case v != 0 && ((x > 0) != (v > 0)) && x != 0:
						t.Fatalf("%s row %d group %d lane %d: sign flipped", c.Name, r, g, p)
					case v == -1 && x == 0:
						t.Fatalf("%s row %d group %d lane %d: a natural zero became -1", c.Name, r, g, p)
					}
				}
			}
		}
	}
}

// TestWorkedExample is formats.md §8's example.
func TestWorkedExample(t *testing.T) {
	const a = 0.5
	if c := EncodeGroup([4]float32{-a, a, 0, -a}); c != 18 {
		t.Errorf("group 1 code %d, want 18", c)
	}
	if c := EncodeGroup([4]float32{0, -a, -a, a}); c != 4 {
		t.Errorf("group 2 code %d, want 4", c)
	}
	if c := EncodeGroup([4]float32{1, 0, -1, 1}); c != 13 {
		t.Errorf("[+1,0,-1,+1] code %d, want 13 (formats.md §7)", c)
	}
	w := make([]float32, 32)
	copy(w, []float32{-a, a, 0, -a, 0, -a, -a, a})
	out := make([]byte, 5)
	PackRow(out, w)
	if out[0] != 0x92 {
		t.Errorf("first byte %02x, want 92", out[0])
	}
	// Ties go to the lowest lane; a kept −0.0 counts as +1.
	negZero := float32(math.Copysign(0, -1))
	if c := EncodeGroup([4]float32{0, negZero, 0.5, -0.5}); c != 0b011 {
		t.Errorf("[0, −0, +, −] code %d, want 3", c)
	}
}

// TestRoundTrip: every 3:4 ternary row survives pack → unpack exactly, and
// all 32 codes decode and re-encode to themselves.
func TestRoundTrip(t *testing.T) {
	for c := uint8(0); c < 32; c++ {
		w := DecodeGroup(c)
		f := [4]float32{float32(w[0]), float32(w[1]), float32(w[2]), float32(w[3])}
		if EncodeGroup(f) != c {
			t.Errorf("code %d → %v → %d", c, w, EncodeGroup(f))
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, k := range []int{32, 128, 2560, 6912} {
		w := make([]float32, k)
		for g := 0; g < k/4; g++ {
			zp := rng.IntN(4)
			for p := 0; p < 4; p++ {
				if p != zp {
					w[4*g+p] = float32(2*rng.IntN(2)-1) * 0.7
				} else {
					w[4*g+p] = 0
				}
			}
		}
		buf := make([]byte, RowBytes(k))
		if err := PackRow(buf, w); err != nil {
			t.Fatal(err)
		}
		q := make([]int8, k)
		UnpackRow(q, buf)
		for i := range q {
			if float32(q[i])*0.7 != w[i] {
				t.Fatalf("k=%d weight %d: %d vs %v", k, i, q[i], w[i])
			}
		}
	}
	if err := PackRow(make([]byte, 5), make([]float32, 36)); err == nil {
		t.Error("accepted a row of 36")
	}
}

// TestPackTernaryRowMatchesPackRow: the code path for ternary codes gives
// PackRow's bytes and counts exactly the weights that unpack differently.
func TestPackTernaryRowMatchesPackRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := 0; trial < 200; trial++ {
		k := 32 * (1 + rng.IntN(8))
		q := make([]int8, k)
		w := make([]float32, k)
		for i := range q {
			q[i] = int8(rng.IntN(3)) - 1
			w[i] = float32(q[i]) * 0.3
		}
		want := make([]byte, RowBytes(k))
		got := make([]byte, RowBytes(k))
		if err := PackRow(want, w); err != nil {
			t.Fatal(err)
		}
		changed, err := PackTernaryRow(got, q)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("trial %d byte %d: %02x vs %02x", trial, i, got[i], want[i])
			}
		}
		back := make([]int8, k)
		UnpackRow(back, got)
		diff := 0
		for i := range q {
			if back[i] != q[i] {
				diff++
			}
		}
		if diff != changed {
			t.Fatalf("trial %d: reported %d changed, %d differ", trial, changed, diff)
		}
	}
}

// TestVectorCopiesMatchShared: testdata is a copy of ../shared/vectors/sherry.
func TestVectorCopiesMatchShared(t *testing.T) {
	shared := "../../shared/vectors/sherry"
	entries, err := os.ReadDir(shared)
	if err != nil {
		t.Skip("../shared not present")
	}
	for _, e := range entries {
		a, _ := os.ReadFile(filepath.Join(shared, e.Name()))
		b, err := os.ReadFile(filepath.Join("testdata", e.Name()))
		if err != nil || string(a) != string(b) {
			t.Errorf("testdata/%s differs from %s (copy it again)", e.Name(), shared)
		}
	}
}
