package pulsar2

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/safetensors"
)

func TestParseVersionAndBuilder(t *testing.T) {
	for _, c := range []struct{ out, ver, builder string }{
		{"version: 5.2\ncommit: 3f2a91c7\n", "5.2", BuilderLLMBuild},
		{"[INFO] banner\nversion: 7.0-patch1\ncommit: x\n", "7.0-patch1", BuilderLLMBuild2},
		{"version:6.0\n", "6.0", BuilderLLMBuild2},
		{"version: 3.2\n", "3.2", BuilderLLMBuild},
	} {
		v, err := ParseVersion(c.out)
		if err != nil || v != c.ver || BuilderFor(v) != c.builder {
			t.Errorf("%q: version %q (%v) builder %s, want %s %s", c.out, v, err, BuilderFor(v), c.ver, c.builder)
		}
	}
	if _, err := ParseVersion("bash: pulsar2: command not found"); err == nil {
		t.Error("no version line accepted")
	}
	if newestImage("pulsar2:4.2\npulsar2:10.1\npulsar2:7.0-patch1\nfoo:99\npulsar2:latest\n") != "pulsar2:10.1" {
		t.Error("newestImage does not order numerically")
	}
}

func TestLogScannerClassifies(t *testing.T) {
	for _, c := range []struct{ line, kind string }{
		{"yamain.common.error.TileFailException: tile failed for op /model/layers.0/mlp", FailTile},
		{"AssertionError: invalid groupN 3", FailGroupN},
		{`KeyError: 'group_size'`, FailGroupSize},
		{"KeyError: <DataType.FP32: 0>", FailFP32DType},
		{"KeyError: 'float32'", FailFP32DType},
		{"AttributeError: module 'backend' has no attribute 'LambertBackend'", FailLambert},
		{"ModuleNotFoundError: No module named 'backend.lambert'", FailLambert},
		{"Killed", FailOOM},
		{"pulsar2 llm_build: error: unrecognized arguments: --max_context 2048", FailArgs},
	} {
		s := &logScanner{}
		s.add("2025-01-01 | INFO | starting")
		s.add(c.line)
		if s.failure == nil || s.failure.kind != c.kind {
			t.Errorf("%q: classified %v, want %s", c.line, s.failure, c.kind)
		}
	}
	s := &logScanner{}
	for _, l := range []string{"KeyError: 'other'", "2025 | SUCCESS | x - prepare llm model done!", "build llm model done!", ShimLogPrefix + " relax-groupn: m: x"} {
		s.add(l)
	}
	if s.failure != nil || !s.has("prepare") || !s.has("build") || len(s.shim) != 1 {
		t.Errorf("failure %v markers %v shim %v", s.failure, s.markers, s.shim)
	}
}

func TestSplitLinesHandlesCarriageReturns(t *testing.T) {
	sc := newLineScanner(strings.NewReader("a\r\nprog 1\rprog 2\rdone\nlast"))
	var got []string
	for sc.Scan() {
		got = append(got, sc.Text())
	}
	if strings.Join(got, "|") != "a|prog 1|prog 2|done|last" {
		t.Errorf("lines %q", got)
	}
}

func TestReadAxllmConfigErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ body, has string }{
		{"", "empty"},
		{`{"architectures": ["Qwen3ForCausalLM"], "hidden_size": 8}`, "Hugging Face config.json"},
		{`{"model_name": "m", "tokenizer_type": "Qwen3"}`, "Key not found: url_tokenizer_model"},
		{`{"model_name": "m", "tokenizer_type": "Qwen3", "url_tokenizer_model": "t.txt", "template_filename_axmodel": "x_l0.axmodel",
		   "axmodel_num": 2, "filename_post_axmodel": "p", "filename_tokens_embed": "e", "tokens_embed_num": 1, "tokens_embed_size": 1}`, "%d"},
		{`{"model_name": "m", "tokenizer_type": "Qwen3", "url_tokenizer_model": "t.txt", "template_filename_axmodel": "x_l%d.axmodel",
		   "axmodel_num": "2", "filename_post_axmodel": "p", "filename_tokens_embed": "e", "tokens_embed_num": 1, "tokens_embed_size": 1}`, `"axmodel_num" holds string`},
	} {
		p := filepath.Join(dir, "config.json")
		os.WriteFile(p, []byte(c.body), 0o644)
		if _, err := ReadAxllmConfig(dir); err == nil || !strings.Contains(err.Error(), c.has) {
			t.Errorf("%.40q: err %v, want %q", c.body, err, c.has)
		}
	}
	os.WriteFile(filepath.Join(dir, "post_config.json"), []byte(`{"enable_temperature": true, "temperature": 0.1}`), 0o644)
	if _, err := ReadPostConfig(filepath.Join(dir, "post_config.json")); err == nil || !strings.Contains(err.Error(), "top_k") {
		t.Errorf("incomplete post_config accepted: %v", err)
	}
}

// VerifyOutput catches what axllm would trip on.
func TestVerifyOutputFindsProblems(t *testing.T) {
	dir := t.TempDir()
	cfg := &AxllmConfig{ModelName: "m", TokenizerType: "Qwen3", URLTokenizerModel: "qwen3_tokenizer.txt",
		TemplateFilenameAxmodel: "qwen3_p128_l%d_together.axmodel", AxmodelNum: 2, FilenamePostAxmodel: "qwen3_post.axmodel",
		FilenameTokensEmbed: EmbedFileName, TokensEmbedNum: 10, TokensEmbedSize: 4,
		Extra: map[string]json.RawMessage{"kv_cache_slots": json.RawMessage("2")}}
	if err := writeJSON(filepath.Join(dir, AxllmConfigName), cfg); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"qwen3_p128_l0_together.axmodel", "qwen3_p128_l1_together.axmodel", "qwen3_p128_l2_together.axmodel", "qwen3_tokenizer.txt"} {
		os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644)
	}
	os.WriteFile(filepath.Join(dir, EmbedFileName), make([]byte, 79), 0o644)
	_, err := VerifyOutput(dir)
	ve, ok := err.(*VerifyError)
	if !ok {
		t.Fatalf("err = %v", err)
	}
	joined := strings.Join(ve.Problems, "\n")
	for _, want := range []string{"l2_together.axmodel exists but axmodel_num is 2", "post model qwen3_post.axmodel missing", "79 bytes, want", "post config post_config.json missing"} {
		if !strings.Contains(joined, want) {
			t.Errorf("problems lack %q:\n%s", want, joined)
		}
	}
	// Extra keys survive a round trip.
	back, err := ReadAxllmConfig(dir)
	if err != nil || string(back.Extra["kv_cache_slots"]) != "2" {
		t.Errorf("extra keys lost: %v %v", back, err)
	}
}

func TestDiscoverLayoutRejectsGaps(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"q_p128_l0_together.axmodel", "q_p128_l2_together.axmodel", "q_post.axmodel"} {
		os.WriteFile(filepath.Join(dir, f), nil, 0o644)
	}
	if _, err := DiscoverLayout(dir); err == nil || !strings.Contains(err.Error(), "gap") {
		t.Errorf("gap not reported: %v", err)
	}
}

// The exported tokenizer file: header, then token bytes by id, checked
// against tokens whose bytes are known independently.
func TestWriteTokenizerTxt(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "t.txt")
	if err := WriteTokenizerTxt(filepath.Join("testdata", "qwen3-tok", "tokenizer.json"), dst, []int{2, 0}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(dst)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if lines[0] != "430 1" {
		t.Fatalf("header %q", lines[0])
	}
	counts := strings.Fields(lines[1])
	ids := strings.Fields(lines[2])
	if len(counts) != 3 || counts[1] != "2" || counts[2] != "0" || len(ids) < 3 || ids[len(ids)-2] != "2" || ids[len(ids)-1] != "0" {
		t.Errorf("special/stop lines %q %q", lines[1], lines[2])
	}
	if lines[3] != "6400" || len(lines) != 4+6400 {
		t.Fatalf("vocab count %q, %d token lines", lines[3], len(lines)-4)
	}
	tok := func(id int) string {
		b, err := base64.StdEncoding.DecodeString(lines[4+id])
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// id 2 is <|im_end|>, 300 is "he", 302 is "ãĢĤ" = the bytes of "。".
	for id, want := range map[int]string{2: "<|im_end|>", 300: "he", 302: "。"} {
		if got := tok(id); got != want {
			t.Errorf("token %d = %q, want %q", id, got, want)
		}
	}
}

// As a normal user, docker gets --user so the output is the user's; podman
// (rootless maps the user to root) gets no --user but label=disable.
func TestContainerArgsUserAndRuntime(t *testing.T) {
	p := &plan{uid: 1000, gid: 100, mountRoot: "/m", inputPath: "/edgectl/model", chip: "AX650", kv: 1023, prefill: 128,
		groups: []int{128, 256}, parallel: 4, weightType: "s8"}
	d := p.containerArgs("docker", "pulsar2:5.2", "n", BuilderLLMBuild, "/o", "")
	if u := flagValues(d, "--user"); len(u) != 1 || u[0] != "1000:100" || !contains(flagValues(d, "-e"), "HOME=/tmp") {
		t.Errorf("docker as uid 1000: %q", d)
	}
	pd := p.containerArgs("podman", "pulsar2:5.2", "n", BuilderLLMBuild, "/o", "")
	if len(flagValues(pd, "--user")) != 0 || !contains(flagValues(pd, "--security-opt"), "label=disable") {
		t.Errorf("podman: %q", pd)
	}
	p.uid = 0
	if r := p.containerArgs("docker", "pulsar2:5.2", "n", BuilderLLMBuild, "/o", ""); len(flagValues(r, "--user")) != 0 {
		t.Errorf("docker as root got --user: %q", r)
	}
	if q := ShellQuote([]string{"a b", "it's", "--x=1", ""}); q != `'a b' 'it'\''s' --x=1 ''` {
		t.Errorf("ShellQuote: %s", q)
	}
}

func TestLogScannerCosSim(t *testing.T) {
	s := &logScanner{}
	for _, l := range []string{"decode layer0_gt layer0_got cos_sim is: 0.99991", "decode layer1_gt layer1_got cos_sim is: 0.71", "x cos_sim is: nan"} {
		s.add(l)
	}
	if s.minCos != -1 || !strings.Contains(s.cosLine, "nan") {
		t.Errorf("min cos %v line %q", s.minCos, s.cosLine)
	}
	s = &logScanner{}
	s.add("decode layer0_gt layer0_got cos_sim is: 1.0")
	if s.minCos != 1 {
		t.Errorf("min cos %v", s.minCos)
	}
}

// F16 and F32 embeddings convert to BF16 rounding to nearest even; the
// expected bit patterns are worked out by hand.
func TestWriteEmbeddingConverts(t *testing.T) {
	cases := []struct {
		dtype safetensors.DType
		in    []uint32 // raw F16 or F32 bit patterns
		want  []uint16
	}{
		{safetensors.F16,
			[]uint32{0x3C00, 0x3C01, 0x7BFF, 0x7C00, 0xFC00, 0x0001, 0x8000, 0x3555},
			// 1.0; 1+2^-10 rounds down; 65504 = 0x477FE000 rounds up; ±inf; 2^-24; -0; 0x3EAAA000 rounds up
			[]uint16{0x3F80, 0x3F80, 0x4780, 0x7F80, 0xFF80, 0x3380, 0x8000, 0x3EAB}},
		{safetensors.F32,
			[]uint32{0x3F808000, 0x3F818000, 0x3F80C000, 0x7F7FFFFF, 0x7FC00001},
			// ties to even (down, up), above the tie, max float to inf, NaN stays NaN
			[]uint16{0x3F80, 0x3F82, 0x3F81, 0x7F80, 0x7FC0}},
	}
	for _, c := range cases {
		dir := t.TempDir()
		raw := make([]byte, c.dtype.ByteSize(int64(len(c.in))))
		for i, v := range c.in {
			if c.dtype == safetensors.F16 {
				binary.LittleEndian.PutUint16(raw[2*i:], uint16(v))
			} else {
				binary.LittleEndian.PutUint32(raw[4*i:], v)
			}
		}
		p := filepath.Join(dir, "m.safetensors")
		fh, _ := os.Create(p)
		safetensors.Write(fh, nil, []safetensors.Source{{Name: "model.embed_tokens.weight", DType: c.dtype, Shape: []int64{int64(len(c.in)), 1}, WriteTo: safetensors.FromBytes(raw)}})
		fh.Close()
		f, err := safetensors.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		tt, _ := f.Tensor("model.embed_tokens.weight")
		out := filepath.Join(dir, EmbedFileName)
		if err := WriteEmbedding(f, tt, out, nil); err != nil {
			t.Fatal(err)
		}
		f.Close()
		b, _ := os.ReadFile(out)
		for i, w := range c.want {
			if g := binary.LittleEndian.Uint16(b[2*i:]); g != w {
				t.Errorf("%s %#x → %#04x, want %#04x", c.dtype, c.in[i], g, w)
			}
		}
	}
}
