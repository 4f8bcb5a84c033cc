package quant

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/edgectl/edgectl/format/half"
	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/hflayout"
	"github.com/edgectl/edgectl/format/safetensors"
)

// source is the input checkpoint: one safetensors file or a directory of
// shards, its config.json and the directory holding both.
type source struct {
	dir    string
	files  []*safetensors.File
	byName map[string]*safetensors.File
	cfg    *hfconfig.Config // the text config; nil when there is no config.json
	rawCfg *hfconfig.Config // the file as read (quantization_config lives here)
	arch   string           // "llama" or "bitnet" ("" when unknown)
	bytes  int64            // tensor bytes of the input
}

func openSource(path string) (*source, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	s := &source{byName: map[string]*safetensors.File{}}
	if st.IsDir() {
		s.dir = path
		ck, err := safetensors.OpenCheckpoint(path)
		if err != nil {
			return nil, err
		}
		s.files = ck.Files
	} else {
		s.dir = filepath.Dir(path)
		f, err := safetensors.Open(path)
		if err != nil {
			return nil, err
		}
		s.files = []*safetensors.File{f}
	}
	for _, f := range s.files {
		s.bytes += f.DataSize()
		for _, t := range f.Tensors {
			if prev, dup := s.byName[t.Name]; dup {
				s.close()
				return nil, fmt.Errorf("tensor %q is in both %s and %s", t.Name, prev.Path, f.Path)
			}
			s.byName[t.Name] = f
		}
	}
	if c, err := hfconfig.Load(filepath.Join(s.dir, "config.json")); err == nil {
		s.rawCfg = c
		s.cfg = c.Text()
		s.arch = archOf(c)
	} else if !os.IsNotExist(err) && !strings.Contains(err.Error(), "no such file") {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *source) close() {
	for _, f := range s.files {
		f.Close()
	}
}

func (s *source) lookup(name string) (*safetensors.File, safetensors.Tensor, bool) {
	f, ok := s.byName[name]
	if !ok {
		return nil, safetensors.Tensor{}, false
	}
	t, _ := f.Tensor(name)
	return f, t, true
}

// names lists all tensor names, sorted.
func (s *source) names() []string {
	out := make([]string, 0, len(s.byName))
	for n := range s.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// archOf maps config.json to the GGUF architecture this package writes.
func archOf(c *hfconfig.Config) string {
	a := strings.ToLower(c.Arch() + " " + c.ModelType)
	switch {
	case strings.Contains(a, "bitnet"):
		return "bitnet"
	case strings.Contains(a, "llama"), strings.Contains(a, "mistral"):
		return "llama"
	}
	return ""
}

// packKinds are the tensors of a llama/bitnet decoder, the ones quant
// pack writes; any other tensor of the checkpoint is an error naming it.
var packKinds = map[hflayout.Kind]bool{
	hflayout.Embedding: true, hflayout.FinalNorm: true, hflayout.LMHead: true,
	hflayout.InputNorm: true, hflayout.PostAttnNorm: true, hflayout.AttnSubNorm: true, hflayout.FFNSubNorm: true,
	hflayout.Q: true, hflayout.K: true, hflayout.V: true, hflayout.O: true,
	hflayout.Gate: true, hflayout.Up: true, hflayout.Down: true,
	hflayout.QBias: true, hflayout.KBias: true, hflayout.VBias: true, hflayout.OBias: true,
}

// LinearKinds are the per-layer projection weights, in .h1b order.
var LinearKinds = []string{"q", "k", "v", "o", "gate", "up", "down"}

// classify names an HF tensor's role in lay: its layer (-1 for
// model-level tensors) and kind. Companion tensors (weight_scale, rotary
// inv_freq) return ok = false with skip = true.
func classify(lay hflayout.Layout, name string) (layer int, kind string, ok, skip bool) {
	if strings.HasSuffix(name, ".weight_scale") || strings.HasSuffix(name, "rotary_emb.inv_freq") {
		return -1, "", false, true
	}
	layer, k, ok := lay.Role(name)
	if !ok || !packKinds[k] {
		return -1, "", false, false
	}
	return layer, string(k), true, false
}

// linear reads the rows of one 2-D projection weight as float32, whatever
// its storage: F32/F16/BF16 [out, in], or BitNet's packed U8 [out/4, in]
// with a weight_scale.
type linear struct {
	name      string // HF name
	rows, k   int
	dtype     safetensors.DType
	data      []byte // mmapped
	release   func() // drops data's pages from the resident set
	packed    bool
	scale     float32 // packed: multiplier applied to the {−1,0,1} codes
	inBytes   int64   // stored bytes, for progress
	fromShape []int64 // stored shape, for error messages
}

func (s *source) linear(name string) (*linear, error) {
	f, t, ok := s.lookup(name)
	if !ok {
		return nil, fmt.Errorf("tensor %q is missing from %s", name, s.dir)
	}
	if len(t.Shape) != 2 {
		return nil, fmt.Errorf("%s: tensor %q has shape %v; a linear weight is 2-D [out, in]", f.Path, name, t.Shape)
	}
	data, err := f.Bytes(t)
	if err != nil {
		return nil, err
	}
	l := &linear{name: name, rows: int(t.Shape[0]), k: int(t.Shape[1]), dtype: t.DType, data: data, inBytes: t.Size(), fromShape: t.Shape,
		release: func() { f.Release(t) }}
	switch t.DType {
	case safetensors.F32, safetensors.F16, safetensors.BF16:
	case safetensors.U8:
		// microsoft/bitnet-b1.58-2B-4T: 2-bit codes packed along the output
		// dimension, 4 rows per byte row, with a scalar weight_scale.
		scaleName := strings.TrimSuffix(name, ".weight") + ".weight_scale"
		sf, st, ok := s.lookup(scaleName)
		if !ok {
			return nil, fmt.Errorf("%s: tensor %q is U8 but %q is missing: only BitNet's packed ternary U8 form (with a weight_scale) is understood", f.Path, name, scaleName)
		}
		if st.Elements() != 1 {
			return nil, fmt.Errorf("%s: tensor %q has shape %v; only a per-tensor (scalar) weight_scale is supported", sf.Path, scaleName, st.Shape)
		}
		v, err := sf.Float32(st)
		if err != nil {
			return nil, err
		}
		if v[0] == 0 || v[0] != v[0] {
			return nil, fmt.Errorf("%s: tensor %q is %v", sf.Path, scaleName, v[0])
		}
		l.packed, l.rows = true, 4*l.rows
		l.scale = v[0]
		if s.bitlinearDivides() {
			l.scale = 1 / v[0]
		}
	default:
		return nil, fmt.Errorf("%s: tensor %q is %s; quant reads F32, F16, BF16 or BitNet packed U8 weights", f.Path, name, t.DType)
	}
	return l, nil
}

// bitlinearDivides reports whether the checkpoint's weight_scale divides
// (HF's plain BitLinear) rather than multiplies (AutoBitLinear offline
// mode and llama.cpp's converter; the default).
func (s *source) bitlinearDivides() bool {
	if s.rawCfg == nil || s.rawCfg.QuantizationConfig == nil {
		return false
	}
	lc, _ := s.rawCfg.QuantizationConfig["linear_class"].(string)
	return strings.EqualFold(lc, "bitlinear")
}

// bitnetLUT maps BitNet's 2-bit codes to ternary values (code 3 → 0, as
// llama.cpp's converter does).
var bitnetLUT = [4]float32{-1, 0, 1, 0}

// row decodes row r into dst (len k).
func (l *linear) row(r int, dst []float32) {
	switch {
	case l.packed:
		pr := l.rows / 4
		p, shift := r%pr, 2*(r/pr)
		src := l.data[p*l.k : (p+1)*l.k]
		for c, b := range src {
			dst[c] = bitnetLUT[(b>>shift)&3] * l.scale
		}
	case l.dtype == safetensors.BF16:
		half.DecodeBF16(dst, l.data[2*r*l.k:2*(r+1)*l.k])
	case l.dtype == safetensors.F16:
		half.DecodeF16(dst, l.data[2*r*l.k:2*(r+1)*l.k])
	default:
		safetensors.DecodeFloat32(dst, safetensors.F32, l.data[4*r*l.k:4*(r+1)*l.k])
	}
}

// rowInBytes is the input bytes one row accounts for (for progress).
func (l *linear) rowInBytes() int64 { return l.inBytes / int64(l.rows) }

// vector reads a 1-D (or any) float tensor whole; used for norms and
// biases, which are small.
func (s *source) vector(name string) ([]float32, error) {
	f, t, ok := s.lookup(name)
	if !ok {
		return nil, fmt.Errorf("tensor %q is missing from %s", name, s.dir)
	}
	v, err := f.Float32(t)
	if err != nil {
		return nil, err
	}
	if i := checkFinite(v); i >= 0 {
		return nil, fmt.Errorf("%s: tensor %q %v: element %d is %v (NaN/Inf); the checkpoint is corrupt", f.Path, name, t.Shape, i, v[i])
	}
	return v, nil
}
