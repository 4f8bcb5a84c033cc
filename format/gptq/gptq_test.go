package gptq

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParseConfigSpellings reads the configs each quantizer writes.
func TestParseConfigSpellings(t *testing.T) {
	for _, c := range []struct {
		name, json, method string
		want               Config
	}{
		{"transformers gptq", `{"quant_method":"gptq","bits":4,"group_size":128,"desc_act":true,"sym":false,"checkpoint_format":"gptq","damp_percent":0.01}`, MethodGPTQ,
			Config{Method: MethodGPTQ, Bits: 4, GroupSize: 128, DescAct: true, Sym: false, Format: FormatGPTQ}},
		{"old AutoGPTQ quantize_config.json", `{"bits":4,"group_size":-1,"desc_act":false,"static_groups":false,"true_sequential":true}`, MethodGPTQ,
			Config{Method: MethodGPTQ, Bits: 4, GroupSize: -1, Sym: true, Format: FormatGPTQ}},
		{"GPTQModel v2", `{"method":"gptq","format":"gptq_v2","bits":4,"group_size":32,"sym":true,"pack_dtype":"int32"}`, MethodGPTQ,
			Config{Method: MethodGPTQ, Bits: 4, GroupSize: 32, Sym: true, Format: FormatGPTQv2}},
		{"AutoAWQ quant_config.json", `{"zero_point":true,"q_group_size":128,"w_bit":4,"version":"GEMM"}`, MethodAWQ,
			Config{Method: MethodAWQ, Bits: 4, GroupSize: 128, Sym: false, Format: FormatGEMM}},
		{"transformers awq", `{"quant_method":"awq","bits":4,"group_size":64,"zero_point":true,"version":"gemm"}`, MethodGPTQ,
			Config{Method: MethodAWQ, Bits: 4, GroupSize: 64, Sym: false, Format: FormatGEMM}},
	} {
		got, err := Parse([]byte(c.json), "x.json", c.method)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		c.want.Path = "x.json"
		if *got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, *got, c.want)
		}
	}
}

// TestParseConfigRefuses: what the layouts do not cover is refused in one
// line that names the file, the value and what to do.
func TestParseConfigRefuses(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{`{"quant_method":"gptq","bits":8,"group_size":128}`, "bits 8: only 4-bit"},
		{`{"quant_method":"gptq","bits":3,"group_size":128}`, "bits 3"},
		{`{"quant_method":"awq","bits":4,"group_size":128,"version":"gemv"}`, `format "gemv"`},
		{`{"quant_method":"gptq","bits":4,"group_size":128,"format":"marlin"}`, `format "marlin"`},
		{`{"quant_method":"gptq","bits":4,"group_size":0}`, "group_size 0"},
		{`{"quant_method":"bitsandbytes","load_in_4bit":true}`, `method "bitsandbytes"`},
		{`{"quant_method":"gptq","bits":4,"group_size":128,"pack_dtype":"int16"}`, `pack_dtype "int16"`},
		{`{"quant_method":"gptq","bits":"four"}`, "restore the file"},
	} {
		_, err := Parse([]byte(c.json), "dir/quantize_config.json", MethodGPTQ)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "dir/quantize_config.json: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line naming the file and %q", c.json, err, c.want)
		}
	}
}

// TestLoadFindsSidecars: config.json's quantization_config first, then
// quantize_config.json, then AutoAWQ's quant_config.json; nothing for a
// float checkpoint.
func TestLoadFindsSidecars(t *testing.T) {
	dir := t.TempDir()
	if c, err := Load(dir, nil, "config.json"); c != nil || err != nil {
		t.Fatalf("float checkpoint: %v, %v", c, err)
	}
	must(t, os.WriteFile(filepath.Join(dir, AWQConfigName), []byte(`{"zero_point":true,"q_group_size":128,"w_bit":4,"version":"GEMM"}`), 0o644))
	if c, err := Load(dir, nil, "config.json"); err != nil || c.Method != MethodAWQ {
		t.Fatalf("quant_config.json: %v, %v", c, err)
	}
	must(t, os.WriteFile(filepath.Join(dir, QuantizeConfigName), []byte(`{"bits":4,"group_size":128,"checkpoint_format":"gptq_v2"}`), 0o644))
	if c, err := Load(dir, nil, "config.json"); err != nil || c.Method != MethodGPTQ || c.Format != FormatGPTQv2 {
		t.Fatalf("quantize_config.json: %v, %v", c, err)
	}
	if c, err := Load(dir, map[string]any{"quant_method": "bitnet", "linear_class": "autobitlinear"}, "config.json"); c != nil || err != nil {
		t.Fatalf("BitNet's quantization_config: %v, %v", c, err)
	}
	c, err := Load(dir, map[string]any{"quant_method": "gptq", "bits": 4, "group_size": 64}, "config.json")
	if err != nil || c.GroupSize != 64 || c.Format != FormatGPTQ || !strings.HasPrefix(c.Path, "config.json") {
		t.Fatalf("config.json: %+v, %v", c, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// referencePack packs codes [N][K] and zeros [N][G] as the reference
// quantizers do, written from their loops (AutoGPTQ's pack: qweight row
// r |= intweight[8r+j] << 4j, qzeros col |= (z−1) << 4j; AutoAWQ's
// from_linear: column col |= w[8col+order[i]] << 4i), independently of
// Layout.
func referencePack(awq bool, v1 bool, codes, zeros [][]uint8, n, k, g int) (qweight, qzeros []byte) {
	order := []int{0, 1, 2, 3, 4, 5, 6, 7}
	if awq {
		order = []int{0, 2, 4, 6, 1, 3, 5, 7}
	}
	var qw []uint32
	if awq {
		qw = make([]uint32, k*n/8)
		for kk := range k {
			for col := range n / 8 {
				for i := range 8 {
					qw[kk*(n/8)+col] |= uint32(codes[8*col+order[i]][kk]) << (4 * i)
				}
			}
		}
	} else {
		qw = make([]uint32, k/8*n)
		for row := range k / 8 {
			for c := range n {
				for j := range 8 {
					qw[row*n+c] |= uint32(codes[c][8*row+j]) << (4 * j)
				}
			}
		}
	}
	qz := make([]uint32, g*n/8)
	for gg := range g {
		for col := range n / 8 {
			for i := range 8 {
				z := uint32(zeros[8*col+order[i]][gg])
				if v1 {
					z = (z - 1) & 15
				}
				qz[gg*(n/8)+col] |= z << (4 * i)
			}
		}
	}
	return le(qw), le(qz)
}

func le(w []uint32) []byte {
	b := make([]byte, 4*len(w))
	for i, v := range w {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

// TestLayoutsAgainstReferencePacking: Codes and Zeros read back what the
// reference packers wrote, and PutCodes/PutZeros write the same bytes,
// for GPTQ v1, v2 and AWQ.
func TestLayoutsAgainstReferencePacking(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []Config{
		{Method: MethodGPTQ, Bits: 4, GroupSize: 128, Format: FormatGPTQ},
		{Method: MethodGPTQ, Bits: 4, GroupSize: 32, Format: FormatGPTQv2},
		{Method: MethodGPTQ, Bits: 4, GroupSize: -1, Format: FormatGPTQv2},
		{Method: MethodAWQ, Bits: 4, GroupSize: 64, Format: FormatGEMM},
	} {
		n, k := 24, 192
		l, err := c.Layout(n, k)
		must(t, err)
		G := l.Groups()
		codes, zeros := make([][]uint8, n), make([][]uint8, n)
		for r := range n {
			codes[r], zeros[r] = make([]uint8, k), make([]uint8, G)
			for i := range codes[r] {
				codes[r][i] = uint8(rng.IntN(16))
			}
			for i := range zeros[r] {
				zeros[r][i] = uint8(rng.IntN(16)) + uint8(l.ZeroOffset) // v1 holds 1…16
			}
		}
		qw, qz := referencePack(l.AWQ, l.ZeroOffset == 1, codes, zeros, n, k, G)
		if len(qw) != 4*int(l.QWeightShape()[0]*l.QWeightShape()[1]) || len(qz) != 4*int(l.QZerosShape()[0]*l.QZerosShape()[1]) {
			t.Fatalf("%v: shapes %v %v for %d and %d bytes", c.String(), l.QWeightShape(), l.QZerosShape(), len(qw), len(qz))
		}
		gotC, gotZ := make([]uint8, 5*k), make([]uint8, 5*G)
		for r0 := 0; r0 < n; r0 += 5 {
			r1 := min(n, r0+5)
			l.Codes(gotC, qw, r0, r1)
			l.Zeros(gotZ, qz, r0, r1)
			for r := r0; r < r1; r++ {
				if !slices.Equal(gotC[(r-r0)*k:(r-r0+1)*k], codes[r]) || !slices.Equal(gotZ[(r-r0)*G:(r-r0+1)*G], zeros[r]) {
					t.Fatalf("%v: row %d read back differently", c.String(), r)
				}
			}
		}
		pw, pz := make([]byte, len(qw)), make([]byte, len(qz))
		for r := range n {
			l.PutCodes(pw, r, codes[r])
			l.PutZeros(pz, r, zeros[r])
		}
		if !slices.Equal(pw, qw) || !slices.Equal(pz, qz) {
			t.Errorf("%v: PutCodes/PutZeros bytes differ from the reference packing", c.String())
		}
	}
}

// TestZeroWordAndGroupIndex: the symmetric v1 word is 0x77777777, v2 and
// AWQ store 8 as is; g_idx entries outside the groups are refused.
func TestZeroWordAndGroupIndex(t *testing.T) {
	v1 := Layout{N: 8, K: 256, GroupSize: 128, ZeroOffset: 1}
	if w := v1.ZeroWord(8); w != 0x77777777 {
		t.Errorf("v1 zero word %08x", w)
	}
	if w := (Layout{N: 8, K: 256, GroupSize: 128}).ZeroWord(8); w != 0x88888888 {
		t.Errorf("v2 zero word %08x", w)
	}
	g, err := v1.GroupIndex(nil)
	must(t, err)
	if g[127] != 0 || g[128] != 1 {
		t.Errorf("default g_idx %v", g[126:130])
	}
	raw := make([]byte, 4*256)
	PutGroupIndex(raw, g)
	binary.LittleEndian.PutUint32(raw[4*7:], 2)
	if _, err := v1.GroupIndex(raw); err == nil || !strings.Contains(err.Error(), "g_idx[7] = 2") {
		t.Errorf("out-of-range g_idx: %v", err)
	}
}

// TestLayoutRefusesShapes: dimensions the packing cannot hold.
func TestLayoutRefusesShapes(t *testing.T) {
	gptq := &Config{Method: MethodGPTQ, Bits: 4, GroupSize: 128, Format: FormatGPTQ}
	awq := &Config{Method: MethodAWQ, Bits: 4, GroupSize: 128, Format: FormatGEMM}
	for _, c := range []struct {
		c    *Config
		n, k int
		want string
	}{
		{gptq, 12, 256, "out_features 12"},
		{gptq, 16, 100, "in_features 100"},
		{awq, 16, 200, "group_size 128"},
	} {
		if _, err := c.c.Layout(c.n, c.k); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d×%d: %v, want %q", c.n, c.k, err, c.want)
		}
	}
	if l, err := gptq.Layout(16, 200); err != nil || l.Groups() != 2 {
		t.Errorf("K 200 in groups of 128: %v, %d groups", err, l.Groups())
	}
}
