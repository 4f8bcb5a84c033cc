package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/edgectl/edgectl/format/axllm"
	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/units"
)

// compiledReport is `edgectl inspect` of a compiled ax-llm directory
// (pulsar2 output): what axllm will load, read through format/axllm.
type compiledReport struct {
	Path   string `json:"path"`
	Format string `json:"format"` // "ax-llm"
	*axllm.DirInfo
}

// inspectCompiled describes a compiled directory. It reports what it can
// read and says what it cannot; `edgectl doctor DIR` checks it.
func inspectCompiled(io *cli.IO, dir string) error {
	d := axllm.Describe(dir)
	if io.JSON {
		return io.WriteJSON(compiledReport{Path: dir, Format: "ax-llm", DirInfo: d})
	}
	io.Printf("path:         %s\nformat:       ax-llm (compiled by pulsar2)\n", dir)
	if c := d.Config; c != nil {
		io.Printf("model:        %s\n", c.ModelName)
		io.Printf("layers:       %d (%s), post %s\n", c.AxmodelNum, c.TemplateFilenameAxmodel, c.FilenamePostAxmodel)
		io.Printf("embedding:    %s: vocab %d × hidden %d bf16 = %s (file %s)\n", c.FilenameTokensEmbed, c.TokensEmbedNum, c.TokensEmbedSize,
			units.Bytes(axllm.EmbedBytes(c.TokensEmbedNum, c.TokensEmbedSize)), units.Bytes(d.EmbedBytes))
		io.Printf("tokenizer:    %s (tokenizer_type %s)\n", c.URLTokenizerModel, c.TokenizerType)
	} else {
		what := "unreadable"
		if d.ConfigBytes == 0 {
			what = "a 0-byte stub"
		}
		io.Printf("config.json:  %s: %s\n", what, d.ConfigErr)
		if l := d.Layout; l != nil {
			io.Printf("layers:       %d (%s), post %s (from the files)\n", l.Layers, l.Template, l.Post)
		}
		if d.EmbedBytes > 0 {
			io.Printf("embedding:    %s: %s\n", axllm.EmbedFileName, units.Bytes(d.EmbedBytes))
		}
	}
	if d.Layout != nil {
		io.Printf("prefill:      %d-token chunks\n", d.Layout.Prefill)
	} else if d.LayoutErr != "" {
		io.Printf("layer files:  %s\n", d.LayoutErr)
	}
	kv := "unknown (no " + axllm.BuildInfoName + ")"
	if d.KVCacheLen > 0 {
		kv = fmt.Sprintf("%d (context %d tokens: axllm's max_token_len)", d.KVCacheLen, d.KVCacheLen)
	}
	io.Printf("kv length:    %s\n", kv)
	if d.MaxPositions > 0 {
		io.Printf("model ctx:    %d (max_position_embeddings, %s)\n", d.MaxPositions, filepath.Base(filepath.Dir(d.SidecarConfig))+"/config.json")
	}
	if p := d.Post; p != nil {
		io.Printf("post_config:  temperature %g (%v), top-k %d (%v), top-p %g (%v), repetition penalty %g (%v, window %d)\n",
			p.Temperature, p.EnableTemperature, p.TopK, p.EnableTopKSampling, p.TopP, p.EnableTopPSampling,
			p.RepetitionPenalty, p.EnableRepetitionPenalty, p.PenaltyWindow)
	} else {
		io.Printf("post_config:  %s\n", d.PostErr)
	}
	if b := d.Build; b != nil {
		from := b.Image
		if b.Pulsar2Bin != "" {
			from = b.Pulsar2Bin
		}
		io.Printf("built:        pulsar2 %s %s (%s), chip %s, weights %s, from %s\n", b.PulsarVersion, b.Builder, from, b.Chip, b.WeightType, b.Source)
	}
	if len(d.Stubs) > 0 {
		io.Printf("empty files:  %s\n", strings.Join(d.Stubs, ", "))
	}
	if d.Config == nil || d.PostErr != "" || d.LayoutErr != "" || len(d.Stubs) > 0 {
		io.Printf("check it:     edgectl doctor %s\n", dir)
	}
	return nil
}
