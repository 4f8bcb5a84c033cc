package prep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/pulsar2"
	"github.com/edgectl/edgectl/quant"
)

// quantStep packs the checkpoint with `quant pack`. file is the output
// file name inside the step's directory ("" for gptq-int4, whose output is
// a checkpoint directory).
func quantStep(format, ternarize, file string) Step {
	opts := map[string]any{"format": format}
	if ternarize != "" {
		opts["ternarize"] = ternarize
	}
	if file != "" {
		opts["file"] = file
	}
	return Step{
		Name:    "quant",
		Version: 2,
		Options: opts,
		Run: func(ctx context.Context, sc *StepContext) error {
			output := sc.Out
			if file != "" {
				if err := os.MkdirAll(sc.Out, 0o755); err != nil {
					return err
				}
				output = filepath.Join(sc.Out, file)
			}
			var inBytes atomic.Int64 // quant's workers report concurrently
			res, err := quant.Pack(ctx, quant.Options{
				Input: sc.In, Output: output, Format: format, Ternarize: ternarize,
				Progress: func(n int64) {
					sc.Progress(inBytes.Add(n), 0, "bytes")
				},
				Warn: func(msg string) {
					sc.Finding(Finding{Severity: "warning", Code: "quant", Message: scrubText(sc.In, msg)})
				},
			})
			if err != nil {
				var ie *quant.InputError
				if errors.As(err, &ie) {
					return &Error{Kind: KindInput, Err: err} // the runner names the source, not the cache
				}
				return err
			}
			// One finding per tensor type and method: what the artifact holds.
			count := map[string]int{}
			for _, t := range res.Tensors {
				k := t.Type
				if t.Method != "" {
					k += " (" + t.Method + ")"
				}
				count[k]++
			}
			var kinds []string
			for k := range count {
				kinds = append(kinds, k)
			}
			sort.Strings(kinds)
			var parts []string
			for _, k := range kinds {
				parts = append(parts, fmt.Sprintf("%d× %s", count[k], k))
			}
			sc.Finding(Finding{Severity: "info", Code: "packed",
				Message: fmt.Sprintf("%s %s: %s", res.Arch, format, strings.Join(parts, ", "))})
			if file == "" {
				return nil
			}
			// The tokenizer and chat template travel beside a single-file
			// model: the CPU engine and serve read them from there.
			for _, name := range sidecarFiles {
				if _, err := os.Stat(filepath.Join(sc.In, name)); err == nil {
					if err := linkOrCopy(filepath.Join(sc.In, name), filepath.Join(sc.Out, name)); err != nil {
						return err
					}
				}
			}
			return nil
		},
	}
}

// sidecarFiles go beside a .gguf or .h1b in OUT/.
var sidecarFiles = []string{"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja", "generation_config.json"}

// pulsar2Step compiles the checkpoint for the NPU in the vendor container.
type pulsar2Options struct {
	Chip, Image, Runtime string
	KVCacheLen           int
	WeightType           string
	ModelName            string
}

func pulsar2Step(o pulsar2Options, rep *Reporter) Step {
	opts := map[string]any{"kv_cache_len": o.KVCacheLen, "weight_type": o.WeightType, "model_name": o.ModelName}
	if o.Chip != "" {
		opts["chip"] = o.Chip
	}
	if o.Image != "" {
		opts["image"] = o.Image
	}
	return Step{
		Name:    "pulsar2",
		Version: 1,
		Options: opts,
		Run: func(ctx context.Context, sc *StepContext) error {
			var shim pulsar2.ShimOptions
			// The hook only turns pulsar2's KeyError on FP32 inputs into
			// BF16; it does nothing for other checkpoints.
			if cfg, err := hfconfig.Load(filepath.Join(sc.In, "config.json")); err == nil {
				dt := strings.ToLower(cfg.Text().WeightDType())
				shim.FP32AsBF16 = dt == "float32" || dt == "fp32"
			}
			res, err := pulsar2.Build(ctx, pulsar2.BuildOptions{
				ModelDir: sc.In, OutDir: sc.Out,
				Chip: o.Chip, Image: o.Image, Runtime: o.Runtime,
				KVCacheLen: o.KVCacheLen, WeightType: o.WeightType, ModelName: o.ModelName,
				Shim: shim,
				Log:  &lineWriter{emit: rep.Log},
			})
			if err != nil {
				return err
			}
			sc.Finding(Finding{Severity: "info", Code: "pulsar2",
				Message: fmt.Sprintf("built with %s (pulsar2 %s, %s) for %s: kv_cache_len %d, weights %s", res.Image, res.PulsarVersion, res.Builder, res.Chip, res.KVCacheLen, res.WeightType)})
			for _, w := range res.Warnings {
				sc.Finding(Finding{Severity: "warning", Code: "pulsar2", Message: scrubText(sc.In, w)})
			}
			return nil
		},
	}
}

// lineWriter splits a byte stream into lines for a callback.
type lineWriter struct {
	emit func(string)
	buf  []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.emit(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

// gptqStep quantizes float weights to group-128 int4 in GPTQ layout for an
// s4 build; a checkpoint that already carries a quantization_config is
// passed through as it is.
func gptqStep() Step {
	inner := quantStep(quant.FormatGPTQInt4, "", "")
	inner.Run = func(run func(context.Context, *StepContext) error) func(context.Context, *StepContext) error {
		return func(ctx context.Context, sc *StepContext) error {
			cfg, err := hfconfig.Load(filepath.Join(sc.In, "config.json"))
			if err != nil {
				return &Error{Kind: KindInput, Err: err}
			}
			if len(cfg.Text().QuantizationConfig) > 0 {
				sc.Finding(Finding{Severity: "info", Code: "quantization", Message: "config.json already has a quantization_config: weights kept as they are"})
				return sc.LinkInput()
			}
			return run(ctx, sc)
		}
	}(inner.Run)
	return inner
}
