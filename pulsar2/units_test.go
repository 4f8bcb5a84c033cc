package pulsar2

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/axllm"
	"github.com/edgectl/edgectl/internal/container"
	"github.com/edgectl/edgectl/internal/testbin"

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
	sc := container.Lines(strings.NewReader("a\r\nprog 1\rprog 2\rdone\nlast"))
	var got []string
	for sc.Scan() {
		got = append(got, sc.Text())
	}
	if strings.Join(got, "|") != "a|prog 1|prog 2|done|last" {
		t.Errorf("lines %q", got)
	}
}

// As a normal user, docker gets --user so the output is the user's; podman
// (rootless maps the user to root) gets no --user but label=disable.
func TestContainerArgsUserAndRuntime(t *testing.T) {
	p := &plan{uid: 1000, gid: 100, mountRoot: "/m", inputPath: "/edgectl/model", chip: "AX650", kv: 1023, prefill: 128,
		groups: []int{128, 256}, parallel: 4, weightType: "s8"}
	d := p.containerArgs("docker", "pulsar2:5.2", "n", BuilderLLMBuild, "/o", "")
	if u := testbin.FlagValues(d, "--user"); len(u) != 1 || u[0] != "1000:100" || !contains(testbin.FlagValues(d, "-e"), "HOME=/tmp") {
		t.Errorf("docker as uid 1000: %q", d)
	}
	pd := p.containerArgs("podman", "pulsar2:5.2", "n", BuilderLLMBuild, "/o", "")
	if len(testbin.FlagValues(pd, "--user")) != 0 || !contains(testbin.FlagValues(pd, "--security-opt"), "label=disable") {
		t.Errorf("podman: %q", pd)
	}
	p.uid = 0
	if r := p.containerArgs("docker", "pulsar2:5.2", "n", BuilderLLMBuild, "/o", ""); len(testbin.FlagValues(r, "--user")) != 0 {
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
		out := filepath.Join(dir, axllm.EmbedFileName)
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
