package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/units"
	"github.com/edgectl/edgectl/quant"
)

func init() { register(newQuantCmd) }

type quantPackOptions struct {
	Input        string
	Output       string
	Format       string
	Ternarize    string
	Threads      int
	TokenizerPre string
}

func newQuantCmd(io *cli.IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quant",
		Short: "Pack weights into ternary (TQ1_0/TQ2_0 GGUF, .h1b) or int4 (GPTQ) formats",
	}
	cmd.AddCommand(newQuantPackCmd(io, "", runQuantPack))
	return cmd
}

// newQuantPackCmd builds `quant pack`; with a fixed format (sherry pack) the
// --format flag is not offered.
func newQuantPackCmd(io *cli.IO, fixedFormat string, runF func(context.Context, *cli.IO, *quantPackOptions) error) *cobra.Command {
	o := &quantPackOptions{Format: fixedFormat}
	cmd := &cobra.Command{
		Use:   "pack IN -o OUT --format F",
		Short: "Pack a safetensors file or checkpoint directory",
		Long: `Streams a llama/bitnet checkpoint tensor by tensor into one of:

  tq2_0, tq1_0   GGUF v3 with llama.cpp TQ2_0/TQ1_0 projections (bit-exact with
                 quantize_row_tq*_0_ref), F16 embeddings, F32 norms, llama/bitnet
                 metadata and tokenizer.ggml.* from tokenizer.json
  f16, f32       the same GGUF with F16 or F32 projections (a bitnet checkpoint's
                 ternarized per --ternarize first, as llama.cpp's converter does)
  sherry         .h1b v3 (Sherry 1.25-bit, 3:4) + .htok
  halo2          .h1b v2 (HALO_V2 2-bit) + .htok
  tq1h           .h1b v4 (base-3, 1.6-bit) + .htok
  gptq-int4      a checkpoint directory in GPTQ layout (group 128, symmetric RTN)
                 with quantization_config in config.json

--ternarize decides how float weights become ternary: auto keeps rows that are
already {-a,0,+a} (lossless, scale a) and applies BitNet absmean to the rest;
absmean applies it everywhere; none hands the floats to the format's own
quantizer (tq*_0: llama.cpp's; sherry: the 3:4 projection).

A .safetensors file with no config.json beside it packs, in the GGUF formats
only, to a tensors-only GGUF (no architecture metadata: runtimes cannot load it
as a model). Missing directories above -o are created.`,
		Example: `  edgectl quant pack ./bitnet-b1.58-2B-4T -o bitnet.tq2_0.gguf --format tq2_0
  edgectl quant pack ./bitnet-b1.58-2B-4T -o bitnet.h1b --format sherry
  edgectl quant pack ./Llama-3.2-1B -o ./Llama-3.2-1B-gptq --format gptq-int4
  edgectl quant pack ./TinyStories-656K -o tiny.f32.gguf --format f32`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Input = args[0]
			return runF(cmd.Context(), io, o)
		},
	}
	if fixedFormat != "" {
		cmd.Use = "pack IN -o OUT"
		cmd.Short = fmt.Sprintf("Pack a checkpoint into %s (same as quant pack --format %s)", fixedFormat, fixedFormat)
	} else {
		cmd.Flags().StringVar(&o.Format, "format", "", "output format: "+strings.Join(quant.Formats, ", "))
		cmd.MarkFlagRequired("format")
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "output file (.gguf, .h1b) or directory (gptq-int4)")
	cmd.MarkFlagRequired("output")
	cmd.Flags().StringVar(&o.Ternarize, "ternarize", quant.TernarizeAuto, "auto, absmean or none")
	cmd.Flags().IntVar(&o.Threads, "threads", 0, "worker goroutines (0: all cores)")
	cmd.Flags().StringVar(&o.TokenizerPre, "tokenizer-pre", "", "override tokenizer.ggml.pre (GGUF), e.g. llama-bpe")
	return cmd
}

func runQuantPack(ctx context.Context, io *cli.IO, o *quantPackOptions) error {
	valid := false
	for _, f := range quant.Formats {
		valid = valid || f == o.Format
	}
	if !valid {
		return usagef("--format %q: want one of %s", o.Format, strings.Join(quant.Formats, ", "))
	}
	switch o.Ternarize {
	case quant.TernarizeAuto, quant.TernarizeAbsmean, quant.TernarizeNone:
	default:
		return usagef("--ternarize %q: want auto, absmean or none", o.Ternarize)
	}
	if o.Threads < 0 {
		return usagef("--threads %d: want 0 (all cores) or more", o.Threads)
	}
	if o.Output == "-" && io.JSON {
		return usagef("-o - writes the model to stdout, where --json would write too; use one")
	}
	view := newEventView(io, true)
	res, err := quant.Pack(ctx, quant.Options{
		Input: o.Input, Output: o.Output, Stdout: io.Out, Format: o.Format, Ternarize: o.Ternarize,
		Threads: o.Threads, TokenizerPre: o.TokenizerPre, OnEvent: view.on,
	})
	view.finish()
	if err != nil {
		return err
	}
	if io.JSON {
		io.Event(map[string]any{"event": "done", "result": res})
		return nil
	}
	if len(res.StaleRemoved) > 0 {
		io.Logf("removed %d temporaries left by killed runs: %s", len(res.StaleRemoved), strings.Join(res.StaleRemoved, ", "))
	}
	say := io.Printf
	if o.Output == "-" { // stdout carries the model: the summary goes to stderr
		say = func(format string, a ...any) { io.Logf("%s", strings.TrimSuffix(fmt.Sprintf(format, a...), "\n")) }
	}
	say("wrote %s (%s, %s → %s in %.1fs, %.2f GB/s)\n", strings.Join(res.Files, ", "), res.Format,
		units.Bytes(res.InputBytes), units.Bytes(res.OutputBytes), res.Seconds, float64(res.InputBytes)/1e9/max(res.Seconds, 1e-9))
	return nil
}
