package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/pulsar2"
)

type pulsar2ConfigOptions struct {
	Dir     string
	InPlace bool
	pulsar2.RegenOptions
}

func newPulsar2ConfigCmd(io *cli.IO, runF func(context.Context, *cli.IO, *pulsar2ConfigOptions) error) *cobra.Command {
	o := &pulsar2ConfigOptions{}
	cmd := &cobra.Command{
		Use:   "axllm-config DIR",
		Short: "Regenerate the axllm config.json of a compiled model directory",
		Long: `Compiled models on the Hub often ship a 0-byte config.json, on which axllm
dies with "parse error … empty input". This rebuilds it from the directory:
the layer and post .axmodel files, the bf16 embedding's size and the model's
Hugging Face config in the *tokenizer*/ sidecar. Without --in-place it prints
the config it would write; with --in-place it writes it (keeping
config.json.orig), adds a missing tokenizer file and post_config.json, and
verifies the directory.`,
		Example: `  edgectl pulsar2 axllm-config ./Qwen3-1.7B-ax650
  edgectl pulsar2 axllm-config ./Qwen3-1.7B-ax650 --in-place --model-name AXERA-TECH/Qwen3-1.7B`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			return runF(cmd.Context(), io, o)
		},
	}
	cmd.Flags().BoolVar(&o.InPlace, "in-place", false, "write DIR/config.json (the old one is kept as config.json.orig)")
	cmd.Flags().StringVar(&o.ModelName, "model-name", "", "model_name clients must send (default: the directory name)")
	cmd.Flags().StringVar(&o.TokenizerType, "tokenizer-type", "", "ax-llm tokenizer_type (default: from model_type)")
	return cmd
}

func runPulsar2Config(ctx context.Context, io *cli.IO, o *pulsar2ConfigOptions) error {
	o.Write = o.InPlace
	c, err := pulsar2.RegenerateConfig(o.Dir, o.RegenOptions)
	if err != nil {
		return err
	}
	if io.JSON || !o.InPlace {
		return io.WriteJSON(c)
	}
	io.Logf("%s: wrote config.json (%s, %d layers, embedding %d × %d, tokenizer %s); the directory verifies",
		o.Dir, c.ModelName, c.AxmodelNum, c.TokensEmbedNum, c.TokensEmbedSize, c.URLTokenizerModel)
	return nil
}
