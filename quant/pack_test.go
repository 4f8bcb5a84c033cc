package quant

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/h1b"
	"github.com/edgectl/edgectl/format/half"
	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/sherry"
)

func pack(t *testing.T, in, format, tern string) (string, *Result) {
	t.Helper()
	ext := map[string]string{FormatTQ1_0: ".gguf", FormatTQ2_0: ".gguf", FormatGPTQInt4: ""}[format]
	if ext == "" && format != FormatGPTQInt4 {
		ext = ".h1b"
	}
	out := filepath.Join(t.TempDir(), "out"+ext)
	res, err := Pack(context.Background(), Options{Input: in, Output: out, Format: format, Ternarize: tern, Threads: 2})
	if err != nil {
		t.Fatalf("pack %s: %v", format, err)
	}
	return out, res
}

var linearKinds = map[string]string{"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.o_proj",
	"gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj"}

// TestGGUFTernaryRoundTrip packs an already-ternary BitNet checkpoint to
// TQ2_0 and TQ1_0 and reads it back with the test's own walker: metadata,
// tensor names and shapes, and every projection decodes to the source's
// ternary codes with d = fp16(α).
func TestGGUFTernaryRoundTrip(t *testing.T) {
	m := newTiny("bitnet")
	in := m.write(t)
	for _, format := range []string{FormatTQ2_0, FormatTQ1_0} {
		out, res := pack(t, in, format, TernarizeAuto)
		w := walkGGUF(t, out)
		if w.str(t, "general.architecture") != "bitnet" || w.u32(t, "bitnet.block_count") != 2 ||
			w.u32(t, "bitnet.embedding_length") != 256 || w.u32(t, "bitnet.feed_forward_length") != 512 ||
			w.u32(t, "bitnet.attention.head_count_kv") != 2 || w.u32(t, "bitnet.rope.dimension_count") != 64 ||
			w.str(t, "bitnet.hidden_activation") != "relu2" || w.u32(t, "general.quantization_version") != 2 {
			t.Errorf("%s: metadata %v", format, w.kv)
		}
		wantFT := map[string]uint32{FormatTQ2_0: 37, FormatTQ1_0: 36}[format]
		if w.u32(t, "general.file_type") != wantFT {
			t.Errorf("file_type %d", w.u32(t, "general.file_type"))
		}
		toks := w.strs(t, "tokenizer.ggml.tokens")
		if len(toks) != 40 || toks[5] != "ab" || toks[38] != "<|begin_of_text|>" || toks[20] != "[PAD20]" ||
			w.str(t, "tokenizer.ggml.model") != "gpt2" || w.u32(t, "tokenizer.ggml.bos_token_id") != 38 ||
			w.u32(t, "tokenizer.ggml.eos_token_id") != 39 {
			t.Errorf("tokenizer metadata: %v", toks)
		}
		if merges := w.strs(t, "tokenizer.ggml.merges"); len(merges) != 4 || merges[3] != "ab cd" {
			t.Errorf("merges %v", merges)
		}
		if types, _ := w.kv["tokenizer.ggml.token_type"].([]any); len(types) != 40 || types[0] != int32(1) || types[38] != int32(3) || types[20] != int32(5) {
			t.Errorf("token types %v", types)
		}
		if _, ok := w.tensors["output.weight"]; ok {
			t.Error("tied model has output.weight")
		}
		// Embedding in F16, norms in F32.
		emb := w.bytes(t, "token_embd.weight")
		if et := w.tensors["token_embd.weight"]; et.typ != 1 || et.ne[0] != 256 || et.ne[1] != 40 {
			t.Errorf("token_embd %+v", et)
		}
		src := m.weights["model.embed_tokens.weight"]
		for i := range src {
			if got := half.F16ToF32(binary.LittleEndian.Uint16(emb[2*i:])); got != half.F16ToF32(half.F32ToF16(src[i])) {
				t.Fatalf("embedding %d: %v vs %v", i, got, src[i])
			}
		}
		if !slices.Equal(f32le(w.bytes(t, "blk.1.ffn_sub_norm.weight")), m.weights["model.layers.1.mlp.ffn_sub_norm.weight"]) {
			t.Error("ffn_sub_norm differs")
		}
		for l := 0; l < 2; l++ {
			for _, hf := range linearKinds {
				name := "model.layers." + string(rune('0'+l)) + "." + hf + ".weight"
				gname, _ := GGUFName(name)
				checkTQ(t, format, w, gname, m, name, nil)
			}
		}
		if len(res.Tensors) != 2+2*(4+7) || !strings.Contains(res.Tensors[len(res.Tensors)-1].Method, "lossless") {
			t.Errorf("report: %d tensors, last %+v", len(res.Tensors), res.Tensors[len(res.Tensors)-1])
		}
		// The reader the engine uses sees the same table.
		g, err := gguf.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		for name, wt := range w.tensors {
			ti, ok := g.Tensor(name)
			if !ok || ti.Offset != int64(wt.off) || ti.Size != int64(wt.size) || uint32(ti.Type) != wt.typ {
				t.Errorf("%s: reader %+v, walker %+v", name, ti, wt)
			}
		}
		g.Close()
	}
}

// checkTQ decodes GGUF tensor gname and compares it with source rows
// (order[j] = source row of GGUF row j).
func checkTQ(t *testing.T, format string, w *walkedGGUF, gname string, m *tinyModel, hf string, order []int) {
	t.Helper()
	wt := w.tensors[gname]
	want := map[string]uint32{FormatTQ2_0: 35, FormatTQ1_0: 34}[format]
	shape := m.shapes[hf]
	if wt.typ != want || wt.ne[0] != uint64(shape[1]) || wt.ne[1] != uint64(shape[0]) {
		t.Fatalf("%s: type %d ne %v, source shape %v", gname, wt.typ, wt.ne, shape)
	}
	b := w.bytes(t, gname)
	rows, k := int(shape[0]), int(shape[1])
	rb := len(b) / rows
	y := make([]float32, k)
	for j := 0; j < rows; j++ {
		r := j
		if order != nil {
			r = order[j]
		}
		if format == FormatTQ2_0 {
			DequantizeRowTQ2_0(y, b[j*rb:])
		} else {
			DequantizeRowTQ1_0(y, b[j*rb:])
		}
		a := half.F16ToF32(half.F32ToF16(m.alpha[hf][r]))
		for c := 0; c < k; c++ {
			if y[c] != float32(m.codes[hf][r*k+c])*a {
				t.Fatalf("%s row %d (source row %d) col %d: %v, want %d·%v", gname, j, r, c, y[c], m.codes[hf][r*k+c], a)
			}
		}
	}
}

// TestGGUFLlamaPermutesQK: llama GGUFs store Q/K rows in llama.cpp's
// interleaved RoPE order (convert_hf_to_gguf.py's permute), V unchanged.
func TestGGUFLlamaPermutesQK(t *testing.T) {
	m := newTiny("llama")
	in := m.write(t)
	out, _ := pack(t, in, FormatTQ2_0, TernarizeAuto)
	w := walkGGUF(t, out)
	if w.str(t, "general.architecture") != "llama" {
		t.Fatal("arch")
	}
	if _, ok := w.kv["llama.hidden_activation"]; ok {
		t.Error("llama got hidden_activation")
	}
	// Expected order, written out for head_dim 4 to pin the convention:
	// rows (0,2,1,3) — HF pairs (0,2),(1,3) become (0,1),(2,3).
	if got := PermuteQK(8, 2); !slices.Equal(got, []int{0, 2, 1, 3, 4, 6, 5, 7}) {
		t.Fatalf("PermuteQK(8,2) = %v", got)
	}
	checkTQ(t, FormatTQ2_0, w, "blk.0.attn_q.weight", m, "model.layers.0.self_attn.q_proj.weight", PermuteQK(256, 4))
	checkTQ(t, FormatTQ2_0, w, "blk.1.attn_k.weight", m, "model.layers.1.self_attn.k_proj.weight", PermuteQK(128, 2))
	checkTQ(t, FormatTQ2_0, w, "blk.1.attn_v.weight", m, "model.layers.1.self_attn.v_proj.weight", nil)
}

// TestGGUFVectorsThroughPipeline: reference rows placed inside an F32
// checkpoint come out of `quant pack --ternarize none` byte for byte as
// llama.cpp's quantizer wrote them (testdata/tq).
func TestGGUFVectorsThroughPipeline(t *testing.T) {
	m := newTiny("bitnet")
	m.dtype = safetensors.F32
	m.ternary = false
	normal := readF32(t, "testdata/tq/normal_3x256.f32")
	zeros := readF32(t, "testdata/tq/zeros_1x256.f32")
	bitnet := readF32(t, "testdata/tq/bitnet_4x512.f32")
	m.override = map[string][]float32{
		"model.layers.0.self_attn.q_proj.weight": append(append([]float32{}, normal...), zeros...),
		"model.layers.1.mlp.down_proj.weight":    bitnet,
	}
	in := m.write(t)
	for _, f := range []struct{ format, ext string }{{FormatTQ2_0, "tq2_0"}, {FormatTQ1_0, "tq1_0"}} {
		out, _ := pack(t, in, f.format, TernarizeNone)
		w := walkGGUF(t, out)
		for _, c := range []struct {
			tensor string
			files  []string
		}{{"blk.0.attn_q.weight", []string{"normal_3x256", "zeros_1x256"}}, {"blk.1.ffn_down.weight", []string{"bitnet_4x512"}}} {
			var want []byte
			for _, n := range c.files {
				b, err := os.ReadFile("testdata/tq/" + n + "." + f.ext)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, b...)
			}
			got := w.bytes(t, c.tensor)[:len(want)]
			if i := firstDiff(got, want); i >= 0 {
				t.Errorf("%s %s: byte %d is %02x, reference %02x", f.format, c.tensor, i, got[i], want[i])
			}
		}
	}
}

// TestH1BRoundTrip packs halo2, tq1h and sherry and reads them back with
// format/h1b (the engine's reader): codes unpack to the source's ternary
// values (Sherry: to its 3:4 projection), scales are the row α, norms
// and embedding are exact, and the .htok sidecar decodes.
func TestH1BRoundTrip(t *testing.T) {
	m := newTiny("bitnet")
	m.dtype = safetensors.F32 // keep the vector's α exact
	mixed := readF32(t, "../sherry/testdata/mixed_2x256.f32")
	m.override = map[string][]float32{"model.layers.1.mlp.gate_proj.weight": mixed}
	in := m.write(t)
	// The override is α·ternary with its own α per row; record it.
	g := "model.layers.1.mlp.gate_proj.weight"
	for r := 0; r < 2; r++ {
		row := mixed[r*256 : (r+1)*256]
		a, ok := RowTernary(row)
		if !ok {
			t.Fatal("vector row is not ternary")
		}
		m.alpha[g][r] = a
		TernaryRow(m.codes[g][r*256:(r+1)*256], row)
	}
	for _, f := range []struct {
		format  string
		version int32
		unpack  func([]int8, []byte)
	}{{FormatHALO2, 2, UnpackRowHALO2}, {FormatTQ1H, 4, UnpackRowTQ1H}, {FormatSherry, 3, sherry.UnpackRow}} {
		out, res := pack(t, in, f.format, TernarizeAuto)
		hf, err := h1b.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		if hf.Version != f.version || hf.HiddenSize != 256 || hf.NumKVHeads != 2 || hf.VocabSize != 40 || hf.TieEmbeddings != 1 || hf.Theta() != 500000 {
			t.Errorf("%s header %+v", f.format, hf.Header)
		}
		e, _ := hf.Tensor("embedding")
		if v, _ := hf.Float32(e); !slices.Equal(v, m.weights["model.embed_tokens.weight"]) {
			t.Errorf("%s: embedding differs", f.format)
		}
		an, _ := hf.Tensor("layers.0.attn_sub_norm")
		if v, _ := hf.Float32(an); !slices.Equal(v, m.weights["model.layers.0.self_attn.attn_sub_norm.weight"]) {
			t.Errorf("%s: attn_sub_norm differs", f.format)
		}
		for l := 0; l < 2; l++ {
			for kind, suffix := range linearKinds {
				name := "model.layers." + string(rune('0'+l)) + "." + suffix + ".weight"
				ti, ok := hf.Tensor("layers." + string(rune('0'+l)) + "." + kind)
				if !ok {
					t.Fatalf("missing %s", kind)
				}
				codes, _ := hf.Bytes(ti)
				scales, _ := hf.Scales(ti)
				rb := hf.RowBytes(ti)
				q := make([]int8, ti.K)
				for r := 0; r < ti.Rows; r++ {
					f.unpack(q, codes[r*rb:(r+1)*rb])
					src := m.codes[name][r*ti.K : (r+1)*ti.K]
					want := src
					if f.format == FormatSherry {
						want = sherryProject(src)
					}
					if !bytes.Equal(i8b(q), i8b(want)) {
						t.Fatalf("%s %s row %d: codes differ", f.format, name, r)
					}
					if scales[r] != m.alpha[name][r] {
						t.Fatalf("%s %s row %d: scale %v, α %v", f.format, name, r, scales[r], m.alpha[name][r])
					}
				}
			}
		}
		if f.format == FormatSherry {
			// The vector rows come out byte for byte.
			want, _ := os.ReadFile("../sherry/testdata/mixed_2x256.sherry")
			ti, _ := hf.Tensor("layers.1.gate")
			got, _ := hf.Bytes(ti)
			if !bytes.Equal(got[:len(want)], want) {
				t.Errorf("sherry vector rows differ")
			}
		}
		hf.Close()
		tok, err := h1b.ReadTokenizer(strings.TrimSuffix(out, ".h1b") + ".htok")
		if err != nil {
			t.Fatal(err)
		}
		if len(tok.Tokens) != 40 || tok.BOS != 38 || tok.EOS != 39 || len(tok.Merges) != 4 || tok.Merges[3] != [3]uint32{5, 6, 8} {
			t.Errorf("htok %+v", tok)
		}
		if len(res.Files) != 2 {
			t.Errorf("files %v", res.Files)
		}
	}
}

// sherryProject is formats.md §8 on ternary codes, written independently:
// zero lane = first natural zero (lane 0 if none), other lanes keep their
// sign with 0 → +1.
func sherryProject(q []int8) []int8 {
	out := make([]int8, len(q))
	for g := 0; g < len(q); g += 4 {
		zp := 0
		for p := 0; p < 4; p++ {
			if q[g+p] == 0 {
				zp = p
				break
			}
		}
		for p := 0; p < 4; p++ {
			switch {
			case p == zp:
				out[g+p] = 0
			case q[g+p] < 0:
				out[g+p] = -1
			default:
				out[g+p] = 1
			}
		}
	}
	return out
}

// TestPackedU8Source reads microsoft/bitnet-b1.58-2B-4T's packed form.
func TestPackedU8Source(t *testing.T) {
	m := newTiny("bitnet")
	m.packedU8 = true
	in := m.write(t)
	out, _ := pack(t, in, FormatHALO2, TernarizeAuto)
	hf, err := h1b.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	for kind, suffix := range linearKinds {
		name := "model.layers.1." + suffix + ".weight"
		ti, _ := hf.Tensor("layers.1." + kind)
		codes, _ := hf.Bytes(ti)
		scales, _ := hf.Scales(ti)
		q := make([]int8, ti.K)
		for r := 0; r < ti.Rows; r++ {
			UnpackRowHALO2(q, codes[r*hf.RowBytes(ti):])
			if !bytes.Equal(i8b(q), i8b(m.codes[name][r*ti.K:(r+1)*ti.K])) || scales[r] != m.alpha[name][0] {
				t.Fatalf("%s row %d differs (scale %v)", kind, r, scales[r])
			}
		}
	}
}

// TestAbsmean: float weights become s·clamp(round(w/s)) with s = mean|W|.
func TestAbsmean(t *testing.T) {
	m := newTiny("bitnet")
	m.ternary = false
	in := m.write(t)
	out, _ := pack(t, in, FormatHALO2, TernarizeAuto)
	hf, _ := h1b.Open(out)
	defer hf.Close()
	name := "model.layers.0.mlp.up_proj.weight"
	w := m.weights[name]
	var sum float64
	for _, v := range w {
		sum += math.Abs(float64(v))
	}
	s := float32(sum / float64(len(w)))
	ti, _ := hf.Tensor("layers.0.up")
	codes, _ := hf.Bytes(ti)
	scales, _ := hf.Scales(ti)
	q := make([]int8, ti.K)
	for r := 0; r < ti.Rows; r++ {
		if math.Abs(float64(scales[r]-s)) > 1e-6*float64(s) {
			t.Fatalf("row %d scale %v, mean|W| %v", r, scales[r], s)
		}
		UnpackRowHALO2(q, codes[r*hf.RowBytes(ti):])
		for c, v := range q {
			x := w[r*ti.K+c] / s
			want := int8(0)
			if x > 0.5 {
				want = 1
			} else if x < -0.5 {
				want = -1
			}
			if v != want {
				t.Fatalf("row %d col %d: %d, w/s = %v", r, c, v, x)
			}
		}
	}
}

// TestGPTQ packs gptq-int4 and checks layout, the config edit and the
// quantization error bound, reading through format/safetensors.
func TestGPTQ(t *testing.T) {
	m := newTiny("llama")
	m.ternary = false
	in := m.write(t)
	out, res := pack(t, in, FormatGPTQInt4, "")
	orig, _ := os.ReadFile(filepath.Join(in, "config.json"))
	cfgB, _ := os.ReadFile(filepath.Join(out, "config.json"))
	if !bytes.HasPrefix(cfgB, orig[:len(orig)-2]) {
		t.Errorf("config.json was rewritten rather than edited:\n%s", cfgB)
	}
	cfg, err := hfconfig.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	qc := cfg.QuantizationConfig
	if qc["quant_method"] != "gptq" || qc["bits"] != float64(4) || qc["group_size"] != float64(128) || qc["sym"] != true || qc["desc_act"] != false {
		t.Errorf("quantization_config %v", qc)
	}
	for _, f := range []string{"quantize_config.json", "tokenizer.json", "tokenizer_config.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	ck, err := safetensors.OpenCheckpoint(out)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	read := func(name string) ([]byte, safetensors.Tensor) {
		f, ti, ok := ck.Lookup(name)
		if !ok {
			t.Fatalf("missing %s", name)
		}
		b, _ := f.Bytes(ti)
		return b, ti
	}
	stem := "model.layers.1.mlp.down_proj"
	qw, qwt := read(stem + ".qweight")
	qz, qzt := read(stem + ".qzeros")
	sc, sct := read(stem + ".scales")
	gi, git := read(stem + ".g_idx")
	n, k := 256, 512
	if qwt.DType != "I32" || !slices.Equal(qwt.Shape, []int64{int64(k / 8), int64(n)}) || !slices.Equal(qzt.Shape, []int64{4, int64(n / 8)}) ||
		sct.DType != "F16" || !slices.Equal(sct.Shape, []int64{4, int64(n)}) || !slices.Equal(git.Shape, []int64{int64(k)}) {
		t.Fatalf("shapes %v %v %v %v", qwt.Shape, qzt.Shape, sct.Shape, git.Shape)
	}
	u32s := func(b []byte) []uint32 {
		o := make([]uint32, len(b)/4)
		for i := range o {
			o[i] = binary.LittleEndian.Uint32(b[4*i:])
		}
		return o
	}
	for _, z := range u32s(qz) {
		if z != 0x77777777 {
			t.Fatalf("qzeros word %08x", z)
		}
	}
	gidx := make([]int32, k)
	for i, v := range u32s(gi) {
		gidx[i] = int32(v)
		if int(v) != i/128 {
			t.Fatalf("g_idx[%d] = %d", i, v)
		}
	}
	scales := make([]uint16, len(sc)/2)
	for i := range scales {
		scales[i] = binary.LittleEndian.Uint16(sc[2*i:])
	}
	deq := UnpackGPTQ(u32s(qw), u32s(qz), scales, gidx, n, k)
	src := m.weights[stem+".weight"]
	for i := range src {
		g, c := (i%k)/128, i/k
		s := half.F16ToF32(scales[g*n+c])
		// RTN error is at most s/2; the group maximum lands on 7.5·s and is
		// clipped to 7·s (as in the reference), plus fp16 rounding of s.
		if d := math.Abs(float64(deq[i] - src[i])); d > float64(s)*0.51 {
			t.Fatalf("element %d: %v vs %v (scale %v)", i, deq[i], src[i], s)
		}
	}
	// Non-linear tensors are copied unchanged.
	e, et := read("model.embed_tokens.weight")
	if et.DType != "BF16" || len(e) != 40*256*2 {
		t.Errorf("embedding %v", et)
	}
	if len(res.Files) < 3 {
		t.Errorf("files %v", res.Files)
	}
}

// TestPackErrors: bad input gets one clear line naming tensor, shape and
// index, and no output file.
func TestPackErrors(t *testing.T) {
	defer func(c int64) { chunkBytes = c }(chunkBytes)
	chunkBytes = 2000 // many jobs in flight when the bad row is hit
	nanModel := newTiny("bitnet")
	bad := make([]float32, 2*256+17)
	bad[2*256+16] = float32(math.NaN())
	nanModel.override = map[string][]float32{"model.layers.1.self_attn.v_proj.weight": bad}
	nanIn := nanModel.write(t)

	bigModel := newTiny("bitnet")
	bigModel.dtype = safetensors.F32
	big := make([]float32, 300)
	big[299] = 1e6
	bigModel.override = map[string][]float32{"model.layers.0.mlp.up_proj.weight": big}
	bigIn := bigModel.write(t)

	oddModel := newTiny("bitnet")
	oddModel.inter = 96 // 96 is not a multiple of 256 (down) nor 32-misaligned
	oddIn := oddModel.write(t)

	odd2 := newTiny("bitnet")
	odd2.inter = 100 // not a multiple of 32
	odd2In := odd2.write(t)

	noLin := t.TempDir()
	f, _ := os.Create(filepath.Join(noLin, "model.safetensors"))
	safetensors.Write(f, nil, []safetensors.Source{{Name: "model.embed_tokens.weight", DType: safetensors.F32, Shape: []int64{2, 2}, WriteTo: safetensors.FromBytes(make([]byte, 16))}})
	f.Close()
	os.WriteFile(filepath.Join(noLin, "config.json"), []byte(`{"model_type":"llama","hidden_size":2,"intermediate_size":4,"num_hidden_layers":1,"num_attention_heads":1,"vocab_size":2}`), 0o644)

	// config.json says untied, but the checkpoint has no head (hflayout's
	// rule: an error, not a silent tie).
	untied := newTiny("bitnet")
	untiedIn := untied.write(t)
	cfgPath := filepath.Join(untiedIn, "config.json")
	cfg, _ := os.ReadFile(cfgPath)
	os.WriteFile(cfgPath, bytes.Replace(cfg, []byte(`"tie_word_embeddings": true`), []byte(`"tie_word_embeddings": false`), 1), 0o644)

	// GPT-2 naming: no decoder tensors under any prefix quant knows.
	gpt2 := t.TempDir()
	f, _ = os.Create(filepath.Join(gpt2, "model.safetensors"))
	safetensors.Write(f, nil, []safetensors.Source{{Name: "transformer.wte.weight", DType: safetensors.F32, Shape: []int64{2, 2}, WriteTo: safetensors.FromBytes(make([]byte, 16))}})
	f.Close()
	os.WriteFile(filepath.Join(gpt2, "config.json"), []byte(`{"model_type":"gpt2","hidden_size":2,"intermediate_size":4,"num_hidden_layers":1,"num_attention_heads":1,"vocab_size":2}`), 0o644)

	cases := []struct {
		name, in, format, tern string
		want                   []string
	}{
		{"untied without head", untiedIn, FormatTQ2_0, TernarizeAuto, []string{`"lm_head.weight" is missing`, "tie_word_embeddings is false"}},
		{"gpt2 naming", gpt2, FormatTQ2_0, TernarizeAuto, []string{"no decoder tensors", "model.language_model.", `"transformer.wte.weight"`}},
		{"gpt2 naming gptq", gpt2, FormatGPTQInt4, "", []string{"no decoder tensors", `"transformer.wte.weight"`}},
		{"nan", nanIn, FormatTQ2_0, TernarizeAuto, []string{`"model.layers.1.self_attn.v_proj.weight" [128 256]`, "row 2", "element 16", "NaN"}},
		{"nan-none", nanIn, FormatTQ1_0, TernarizeNone, []string{`"model.layers.1.self_attn.v_proj.weight" [128 256]`, "row 2", "element 16", "not finite"}},
		{"nan-sherry", nanIn, FormatSherry, TernarizeAuto, []string{`v_proj.weight" [128 256]`, "row 2, element 16"}},
		{"fp16 overflow", bigIn, FormatTQ2_0, TernarizeNone, []string{`"model.layers.0.mlp.up_proj.weight" [512 256]`, "row 1", "element 0", "overflows fp16"}},
		{"tq row length", oddIn, FormatTQ2_0, TernarizeAuto, []string{`"model.layers.0.mlp.down_proj.weight" [256 96]`, "blocks of 256", "element 0"}},
		{"sherry row length", odd2In, FormatSherry, TernarizeAuto, []string{`"model.layers.0.mlp.down_proj.weight" [256 100]`, "multiple of 32", "element 96"}},
		{"no linear", noLin, FormatTQ2_0, TernarizeAuto, []string{"no linear weights"}},
		{"no linear gptq", noLin, FormatGPTQInt4, "", []string{"no linear weights"}},
	}
	for _, c := range cases {
		out := filepath.Join(t.TempDir(), "o.out")
		_, err := Pack(context.Background(), Options{Input: c.in, Output: out, Format: c.format, Ternarize: c.tern, Threads: 2})
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		t.Logf("%s: %v", c.name, err)
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", c.name, err, w)
			}
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: multi-line error", c.name)
		}
		if !errors.Is(err, errkind.Input) {
			t.Errorf("%s: %v is not bad input (kind %v)", c.name, err, errkind.Of(err))
		}
		if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
			t.Errorf("%s: left files behind: %v", c.name, entries)
		}
	}
}

// TestGGUFF32TinyStories converts the repo's real TinyStories checkpoint
// (llama, SentencePiece-style byte-fallback BPE) to an unquantized F32
// GGUF: every weight survives bit for bit (Q/K in llama.cpp's permuted
// order) and the tokenizer metadata is the llama kind.
func TestGGUFF32TinyStories(t *testing.T) {
	in := "../testdata/models/tinystories-656k"
	if _, err := os.Stat(in); err != nil {
		t.Skip("fixture missing")
	}
	out, res := pack(t, in, FormatF32, "")
	w := walkGGUF(t, out)
	if w.str(t, "general.architecture") != "llama" || w.u32(t, "general.file_type") != 0 || w.str(t, "tokenizer.ggml.model") != "llama" ||
		w.u32(t, "tokenizer.ggml.unknown_token_id") != 0 || w.u32(t, "tokenizer.ggml.bos_token_id") != 1 || w.u32(t, "llama.rope.dimension_count") != 16 {
		t.Errorf("metadata: arch %v ftype %v model %v", w.kv["general.architecture"], w.kv["general.file_type"], w.kv["tokenizer.ggml.model"])
	}
	types := w.kv["tokenizer.ggml.token_type"].([]any)
	toks := w.strs(t, "tokenizer.ggml.tokens")
	if len(toks) != 2048 || types[0] != int32(2) || types[1] != int32(3) {
		t.Errorf("token types %v %v %v", len(toks), types[0], types[1])
	}
	for i, s := range toks {
		if s == "<0x41>" && types[i] != int32(6) {
			t.Errorf("byte token type %v", types[i])
		}
	}
	ck, err := safetensors.Open(filepath.Join(in, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	for _, st := range ck.Tensors {
		gname, ok := GGUFName(st.Name)
		if st.Name == "lm_head.weight" { // tied: stored once, as the embedding
			gname = "token_embd.weight"
		}
		if !ok {
			t.Fatalf("no GGUF name for %s", st.Name)
		}
		src, _ := ck.Float32(st)
		got := f32le(w.bytes(t, gname))
		if strings.HasSuffix(gname, "attn_q.weight") || strings.HasSuffix(gname, "attn_k.weight") {
			heads := 8
			if strings.HasSuffix(gname, "attn_k.weight") {
				heads = 4
			}
			rows, k := int(st.Shape[0]), int(st.Shape[1])
			order := PermuteQK(rows, heads)
			perm := make([]float32, 0, len(src))
			for j := 0; j < rows; j++ {
				perm = append(perm, src[order[j]*k:(order[j]+1)*k]...)
			}
			src = perm
		}
		if !slices.Equal(got, src) {
			t.Errorf("%s differs from %s", gname, st.Name)
		}
	}
	if len(res.Tensors) != len(ck.Tensors) {
		t.Errorf("%d tensors written, source has %d", len(res.Tensors), len(ck.Tensors))
	}
}

// TestSherryNoneProjectsFloats: with --ternarize none Sherry projects the
// float weights itself (smallest |w| of each 4 is the zero) and the row
// scale is the mean |w| of the kept lanes.
func TestSherryNoneProjectsFloats(t *testing.T) {
	m := newTiny("bitnet")
	m.ternary = false
	m.dtype = safetensors.F32
	in := m.write(t)
	out, _ := pack(t, in, FormatSherry, TernarizeNone)
	hf, err := h1b.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	name := "model.layers.1.self_attn.o_proj.weight"
	ti, _ := hf.Tensor("layers.1.o")
	codes, _ := hf.Bytes(ti)
	scales, _ := hf.Scales(ti)
	rb := hf.RowBytes(ti)
	for r := 0; r < ti.Rows; r++ {
		w := m.weights[name][r*ti.K : (r+1)*ti.K]
		q := make([]int8, ti.K)
		sherry.UnpackRow(q, codes[r*rb:(r+1)*rb])
		var sum float64
		for g := 0; g < ti.K; g += 4 {
			zp := 0
			for p := 1; p < 4; p++ {
				if math.Abs(float64(w[g+p])) < math.Abs(float64(w[g+zp])) {
					zp = p
				}
			}
			for p := 0; p < 4; p++ {
				want := int8(0)
				if p != zp {
					want = 1
					if w[g+p] < 0 {
						want = -1
					}
					sum += math.Abs(float64(w[g+p]))
				}
				if q[g+p] != want {
					t.Fatalf("row %d weight %d: %d, want %d", r, g+p, q[g+p], want)
				}
			}
		}
		if want := float32(sum / float64(ti.K*3/4)); math.Abs(float64(scales[r]-want)) > 1e-6*float64(want) {
			t.Fatalf("row %d scale %v, want %v", r, scales[r], want)
		}
	}
}

// TestPackIsDeterministic: the output does not depend on the worker count
// or on how tensors are cut into jobs.
func TestPackIsDeterministic(t *testing.T) {
	defer func(c int64) { chunkBytes = c }(chunkBytes)
	m := newTiny("bitnet")
	m.ternary = false
	in := m.write(t)
	for _, format := range []string{FormatTQ1_0, FormatSherry} {
		var outs [][]byte
		for i, threads := range []int{1, 3} {
			chunkBytes = []int64{4 << 20, 1000}[i] // one job per tensor vs a few rows per job
			out := filepath.Join(t.TempDir(), "o.bin")
			if _, err := Pack(context.Background(), Options{Input: in, Output: out, Format: format, Threads: threads}); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(out)
			outs = append(outs, b)
		}
		if !bytes.Equal(outs[0], outs[1]) {
			t.Errorf("%s: 1 and 3 threads differ", format)
		}
	}
}
