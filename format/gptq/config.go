// Package gptq is the one home of the GPTQ and AWQ int4 checkpoint
// layouts: the quantization config (config.json's quantization_config,
// AutoGPTQ/GPTQModel's quantize_config.json, AutoAWQ's quant_config.json)
// and how one linear layer's qweight, qzeros, scales and g_idx tensors hold
// its 4-bit codes, zero points and scales (layout.go). quant writes GPTQ
// checkpoints through it and the CPU engine reads GPTQ and AWQ ones
// through it.
//
// The layouts, as the reference implementations write and read them:
//
//   - GPTQ (AutoGPTQ auto_gptq/nn_modules/qlinear/qlinear_cuda.py, pack
//     and forward; GPTQModel and transformers/optimum load the same
//     tensors): qweight int32 [K/8, N], word (r, n) holding inputs 8r…8r+7
//     of output n, input 8r+i in bits 4i…4i+3; qzeros int32 [G, N/8], word
//     (g, c) holding outputs 8c…8c+7 the same way; scales [G, N]; g_idx
//     int32 [K], the group of each input (i/group_size unless desc_act
//     reordered them); W[n][k] = scales[g][n]·(q − z) with g = g_idx[k].
//     checkpoint_format "gptq" (v1) stores z − 1 and readers add 1 to the
//     nibble (AutoGPTQ's forward: `zeros = zeros + 1`); "gptq_v2"
//     (GPTQModel) stores z (GPTQModel gptqmodel/utils/model.py,
//     convert_gptq_v1_to_v2_format_module adds 0x11111111 to v1 words).
//   - AWQ GEMM (AutoAWQ awq/modules/linear/gemm.py, from_linear;
//     awq/utils/packing_utils.py, dequantize_gemm): qweight int32 [K, N/8],
//     word (k, c) holding outputs 8c+order[i] in bits 4i…4i+3 with order =
//     0, 2, 4, 6, 1, 3, 5, 7; qzeros int32 [G, N/8] in the same order,
//     storing z; scales [G, N]; no g_idx (input k is in group k/group_size).
package gptq

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/edgectl/edgectl/format/internal/modelfile"
)

// Methods.
const (
	MethodGPTQ = "gptq"
	MethodAWQ  = "awq"
)

// Checkpoint formats: GPTQ's zero-point conventions, AWQ's GEMM packing.
const (
	FormatGPTQ   = "gptq"    // v1: qzeros store z − 1
	FormatGPTQv2 = "gptq_v2" // qzeros store z
	FormatGEMM   = "gemm"    // AWQ's GEMM layout
)

// Bits is the one code width the layouts here cover.
const Bits = 4

// Config is a GPTQ/AWQ quantization config, from any of the files and key
// spellings the quantizers write.
type Config struct {
	Method    string // MethodGPTQ or MethodAWQ
	Bits      int
	GroupSize int // inputs per group; −1: one group spans a row
	DescAct   bool
	Sym       bool
	Format    string // FormatGPTQ, FormatGPTQv2 or FormatGEMM
	// Path is the file the config came from, for errors.
	Path string
}

// Files a quantization config may live in besides config.json:
// AutoGPTQ/GPTQModel's and AutoAWQ's.
const (
	QuantizeConfigName = "quantize_config.json"
	AWQConfigName      = "quant_config.json"
)

// maxConfigSize caps a sidecar config read (they are a few hundred bytes).
const maxConfigSize = 1 << 20

// rawConfig holds every key spelling: transformers (quant_method, bits,
// group_size, checkpoint_format), GPTQModel (method, format, pack_dtype)
// and AutoAWQ (w_bit, q_group_size, zero_point, version).
type rawConfig struct {
	QuantMethod      *string `json:"quant_method"`
	Method           *string `json:"method"`
	Bits             *int    `json:"bits"`
	WBit             *int    `json:"w_bit"`
	GroupSize        *int    `json:"group_size"`
	QGroupSize       *int    `json:"q_group_size"`
	DescAct          *bool   `json:"desc_act"`
	Sym              *bool   `json:"sym"`
	ZeroPoint        *bool   `json:"zero_point"`
	CheckpointFormat *string `json:"checkpoint_format"`
	Format           *string `json:"format"`
	Version          *string `json:"version"`
	PackDType        *string `json:"pack_dtype"`
}

// Parse reads a quantization config object (quantize_config.json's bytes,
// or config.json's quantization_config value); path names it in errors.
// defaultMethod applies when the object names no method (AutoGPTQ's
// older quantize_config.json, AutoAWQ's quant_config.json).
func Parse(b []byte, path, defaultMethod string) (*Config, error) {
	var r rawConfig
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: quantization config: %v (restore the file the quantizer wrote)", path, err)
	}
	c := &Config{Method: defaultMethod, Bits: -1, GroupSize: -1, Sym: true, Path: path}
	str := func(ps ...*string) string {
		for _, p := range ps {
			if p != nil {
				return strings.ToLower(*p)
			}
		}
		return ""
	}
	if m := str(r.QuantMethod, r.Method); m != "" {
		c.Method = m
	}
	for _, p := range []*int{r.Bits, r.WBit} {
		if p != nil {
			c.Bits = *p
			break
		}
	}
	for _, p := range []*int{r.GroupSize, r.QGroupSize} {
		if p != nil {
			c.GroupSize = *p
			break
		}
	}
	if r.DescAct != nil {
		c.DescAct = *r.DescAct
	}
	switch c.Method {
	case MethodGPTQ:
		if r.Sym != nil {
			c.Sym = *r.Sym
		}
		c.Format = str(r.CheckpointFormat, r.Format)
		if c.Format == "" {
			c.Format = FormatGPTQ
		}
	case MethodAWQ:
		c.Sym = r.ZeroPoint != nil && !*r.ZeroPoint
		c.Format = str(r.Version, r.Format)
		if c.Format == "" {
			c.Format = FormatGEMM
		}
	default:
		return nil, fmt.Errorf("%s: quantization method %q: the GPTQ/AWQ reader takes %q and %q checkpoints only (use the float checkpoint, or a GGUF file)", path, c.Method, MethodGPTQ, MethodAWQ)
	}
	if p := str(r.PackDType); p != "" && p != "int32" {
		return nil, fmt.Errorf("%s: pack_dtype %q: GPTQ words are read as int32 only (re-export the checkpoint with GPTQModel's default pack_dtype int32)", path, p)
	}
	return c, c.check()
}

// check refuses what the layouts here do not cover, saying what to do.
func (c *Config) check() error {
	if c.Bits != Bits {
		return fmt.Errorf("%s: %s checkpoint with bits %d: only 4-bit GPTQ/AWQ weights are supported (quantize the float checkpoint with `edgectl quant pack --format gptq-int4`, or use a GGUF Q8_0/Q4_K_M file)", c.Path, c.Method, c.Bits)
	}
	if c.GroupSize == 0 || c.GroupSize < -1 {
		return fmt.Errorf("%s: group_size %d: want a positive group size or -1 (one group per row); restore the config the quantizer wrote", c.Path, c.GroupSize)
	}
	switch {
	case c.Method == MethodGPTQ && (c.Format == FormatGPTQ || c.Format == FormatGPTQv2):
	case c.Method == MethodAWQ && c.Format == FormatGEMM:
	default:
		return fmt.Errorf("%s: %s checkpoint format %q: supported are GPTQ %q/%q and AWQ %q (GEMV, Marlin and other kernel layouts are not; re-export the checkpoint in one of these)", c.Path, c.Method, c.Format, FormatGPTQ, FormatGPTQv2, FormatGEMM)
	}
	return nil
}

// FromMap is Parse over config.json's already-decoded quantization_config.
// A config of another method (BitNet's "bitnet", "fp8", "bitsandbytes", …)
// is not this package's: nil, nil.
func FromMap(m map[string]any, path string) (*Config, error) {
	method, _ := m["quant_method"].(string)
	if method == "" {
		method, _ = m["method"].(string)
	}
	if method = strings.ToLower(method); method != MethodGPTQ && method != MethodAWQ {
		return nil, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("%s: quantization_config: %v", path, err)
	}
	return Parse(b, path+" quantization_config", MethodGPTQ)
}

// Load finds a checkpoint's quantization config: config.json's
// quantization_config (fromConfig, already decoded by format/hfconfig;
// configPath names it), else quantize_config.json, else AutoAWQ's
// quant_config.json in dir. It returns nil, nil for a float checkpoint
// (or one config.json says another method quantized).
func Load(dir string, fromConfig map[string]any, configPath string) (*Config, error) {
	if fromConfig != nil {
		c, err := FromMap(fromConfig, configPath)
		if c != nil || err != nil {
			return c, err
		}
		return nil, nil
	}
	for _, f := range []struct{ name, method string }{{QuantizeConfigName, MethodGPTQ}, {AWQConfigName, MethodAWQ}} {
		p := filepath.Join(dir, f.name)
		b, err := modelfile.ReadFile(p, maxConfigSize, "a quantization config")
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return Parse(b, p, f.method)
	}
	return nil, nil
}

// String describes c in one line ("gptq 4-bit group 128 sym desc_act gptq_v2").
func (c *Config) String() string {
	s := fmt.Sprintf("%s %d-bit group %d", c.Method, c.Bits, c.GroupSize)
	if c.Sym {
		s += " sym"
	} else {
		s += " asym"
	}
	if c.DescAct {
		s += " desc_act"
	}
	return s + " " + c.Format
}
