package prep

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/edgectl/edgectl/artifact"
	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/progress"
	"github.com/edgectl/edgectl/pulsar2"
	"github.com/edgectl/edgectl/quant"
)

// quantOptions are `quant pack`'s settings. File is the output file name
// inside the step's directory ("" for gptq-int4, whose output is a
// checkpoint directory).
type quantOptions struct {
	File      string `json:"file,omitempty"`
	Format    string `json:"format"`
	Ternarize string `json:"ternarize,omitempty"`
}

// quantStep packs the checkpoint with `quant pack`.
func quantStep(o quantOptions) Step {
	return newStep("quant", 2, o, runQuant)
}

func runQuant(ctx context.Context, sc *StepContext, o quantOptions) error {
	output := sc.Out
	if o.File != "" {
		if err := os.MkdirAll(sc.Out, 0o755); err != nil {
			return err
		}
		output = filepath.Join(sc.Out, o.File)
	}
	res, err := quant.Pack(ctx, quant.Options{
		Input: sc.In, Output: output, Format: o.Format, Ternarize: o.Ternarize,
		OnEvent: func(e progress.Event) {
			switch e.Event {
			case progress.Progress:
				sc.Progress(e.Done, e.Total, e.Unit)
			case progress.Warning:
				sc.Finding(artifact.Finding{Severity: "warning", Code: "quant", Message: scrubText(sc.In, e.Message)})
			}
		},
	})
	if err != nil {
		return err // bad input is errkind.Input already; the runner names the source, not the cache
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
	sc.Finding(artifact.Finding{Severity: "info", Code: "packed",
		Message: fmt.Sprintf("%s %s: %s", res.Arch, o.Format, strings.Join(parts, ", "))})
	if o.File == "" {
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
}

// sidecarFiles go beside a .gguf or .h1b in OUT/.
var sidecarFiles = []string{"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja", "generation_config.json"}

// gptqStep quantizes float weights to group-128 int4 in GPTQ layout for an
// s4 build; a checkpoint that already carries a quantization_config is
// passed through as it is. It is the quant step (same name, version and
// options) with that pass-through in front.
func gptqStep() Step {
	return newStep("quant", 2, quantOptions{Format: quant.FormatGPTQInt4}, runGPTQ)
}

func runGPTQ(ctx context.Context, sc *StepContext, o quantOptions) error {
	cfg, err := hfconfig.Load(filepath.Join(sc.In, "config.json"))
	if err != nil {
		return errkind.Wrap(errkind.Input, err)
	}
	if len(cfg.Text().QuantizationConfig) > 0 {
		sc.Finding(artifact.Finding{Severity: "info", Code: "quantization", Message: "config.json already has a quantization_config: weights kept as they are"})
		return sc.LinkInput()
	}
	return runQuant(ctx, sc, o)
}

// pulsar2Options are what the compiled model depends on. The container
// runtime (docker or podman) is not among them: it changes how the
// compiler is started, not what it writes (see compiler).
type pulsar2Options struct {
	Chip       string `json:"chip,omitempty"`  // "": pulsar2's default
	Image      string `json:"image,omitempty"` // "": the newest local pulsar2 image
	KVCacheLen int    `json:"kv_cache_len"`
	ModelName  string `json:"model_name"`
	WeightType string `json:"weight_type"`
}

// compiler holds the pulsar2 step's settings that do not change its
// output, and so stay out of its key and manifest record.
type compiler struct {
	runtime string
}

// pulsar2Step compiles the checkpoint for the NPU in the vendor container.
func pulsar2Step(o pulsar2Options, runtime string) Step {
	return newStep("pulsar2", 1, o, compiler{runtime: runtime}.run)
}

func (c compiler) run(ctx context.Context, sc *StepContext, o pulsar2Options) error {
	var shim pulsar2.ShimOptions
	// The hook only turns pulsar2's KeyError on FP32 inputs into
	// BF16; it does nothing for other checkpoints.
	if cfg, err := hfconfig.Load(filepath.Join(sc.In, "config.json")); err == nil {
		dt := strings.ToLower(cfg.Text().WeightDType())
		shim.FP32AsBF16 = dt == "float32" || dt == "fp32"
	}
	res, err := pulsar2.Build(ctx, pulsar2.BuildOptions{
		ModelDir: sc.In, OutDir: sc.Out,
		Chip: o.Chip, Image: o.Image, Runtime: c.runtime,
		KVCacheLen: o.KVCacheLen, WeightType: o.WeightType, ModelName: o.ModelName,
		Shim: shim,
		Log:  &lineWriter{emit: sc.ToolLog},
	})
	if err != nil {
		return err
	}
	sc.Finding(artifact.Finding{Severity: "info", Code: "pulsar2",
		Message: fmt.Sprintf("built with %s (pulsar2 %s, %s) for %s: kv_cache_len %d, weights %s", res.Image, res.PulsarVersion, res.Builder, res.Chip, res.KVCacheLen, res.WeightType)})
	for _, w := range res.Warnings {
		sc.Finding(artifact.Finding{Severity: "warning", Code: "pulsar2", Message: scrubText(sc.In, w)})
	}
	return nil
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
