package main

import (
	"context"
	"errors"
	"fmt"
	goio "io"

	"github.com/spf13/cobra"

	"github.com/edgectl/edgectl/format/axllm"
	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/patch"
	"github.com/edgectl/edgectl/pulsar2"
)

func init() { register(newPulsar2Cmd) }

func newPulsar2Cmd(io *cli.IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pulsar2",
		Short: "Compile for Axera AX650/AX8850 with the pulsar2 container, shim its known failures",
		Long: `pulsar2 is Axera's LLM compiler; it ships only as a Docker image. These
commands run it (build), write the sitecustomize shim that works around its
known failures (shim), bake that shim into a copy of the image (image patch),
and check a built directory for the axllm runtime (verify).`,
	}
	image := &cobra.Command{Use: "image", Short: "Work on the pulsar2 container image"}
	image.AddCommand(newPulsar2ImagePatchCmd(io, runPulsar2ImagePatch))
	cmd.AddCommand(newPulsar2BuildCmd(io, runPulsar2Build), newPulsar2ShimCmd(io, runPulsar2Shim),
		newPulsar2VerifyCmd(io, runPulsar2Verify), newPulsar2ConfigCmd(io, runPulsar2Config), image)
	return cmd
}

// shimFlags are the hook switches shared by shim, build and image patch.
func shimFlags(cmd *cobra.Command, o *pulsar2.ShimOptions) {
	cmd.Flags().BoolVar(&o.AliasLambert, "alias-lambert", false, "map backend.lambert* to backend.ax8860* and LambertBackend to AX8860Backend")
	cmd.Flags().BoolVar(&o.RelaxGroupN, "relax-groupn", false, `make get_group_info return (0, 0) instead of asserting "invalid groupN"`)
	cmd.Flags().BoolVar(&o.FP32AsBF16, "fp32-as-bf16", false, "map get_ifm_dtype's KeyError for FP32 to BF16 (6)")
}

// ---- shim

type pulsar2ShimOptions struct {
	Dir  string
	Shim pulsar2.ShimOptions
}

func newPulsar2ShimCmd(io *cli.IO, runF func(context.Context, *cli.IO, *pulsar2ShimOptions) error) *cobra.Command {
	o := &pulsar2ShimOptions{}
	cmd := &cobra.Command{
		Use:   "shim -o DIR",
		Short: "Write the sitecustomize.py import hooks that work around pulsar2 failures",
		Long: `Writes DIR/sitecustomize.py. Put DIR on PYTHONPATH (or the file in the
image's site-packages) and Python installs the selected hooks at startup.
Without hook flags all three are enabled. Each hook prints one
"[edgectl-shim] …" line to stderr the first time it fires in a module and
leaves every import it does not target alone (Python 3.8–3.12).`,
		Example: `  edgectl pulsar2 shim -o ./shim --relax-groupn
  docker run --rm -v $PWD/shim:/shim:ro -e PYTHONPATH=/shim -v $PWD:/data pulsar2:5.2 pulsar2 llm_build …`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runF(cmd.Context(), io, o)
		},
	}
	cmd.Flags().StringVarP(&o.Dir, "output", "o", "", "directory to write sitecustomize.py into (created if missing)")
	cmd.Flags().StringVar(&o.Shim.Gate, "gate", "", "install the hooks only when this environment variable is 1")
	shimFlags(cmd, &o.Shim)
	return cmd
}

func runPulsar2Shim(ctx context.Context, io *cli.IO, o *pulsar2ShimOptions) error {
	if o.Dir == "" {
		return usagef("pass -o DIR")
	}
	if !o.Shim.Any() {
		o.Shim.AliasLambert, o.Shim.RelaxGroupN, o.Shim.FP32AsBF16 = true, true, true
	}
	path, err := pulsar2.WriteShim(o.Dir, o.Shim)
	if err != nil {
		return err
	}
	if io.JSON {
		return io.WriteJSON(map[string]any{"path": path, "hooks": o.Shim.Hooks(), "gate": o.Shim.Gate, "shim_version": pulsar2.ShimVersion})
	}
	io.Printf("%s\n", path)
	io.Logf("hooks: %v; activate with PYTHONPATH=%s", o.Shim.Hooks(), o.Dir)
	return nil
}

// ---- build

type pulsar2BuildOptions struct {
	pulsar2.BuildOptions
}

func newPulsar2BuildCmd(io *cli.IO, runF func(context.Context, *cli.IO, *pulsar2BuildOptions) error) *cobra.Command {
	o := &pulsar2BuildOptions{}
	cmd := &cobra.Command{
		Use:   "build MODEL_DIR -o OUT",
		Short: "Compile a Hugging Face checkpoint with pulsar2 into an axllm model directory",
		Long: `Runs pulsar2 llm_build (Pulsar2 ≤ 5) or llm_build2 (6.0+, chosen from
` + "`pulsar2 version`" + `) in its container with the model, the output and the shim
mounted, streams its log, and explains known failures with their fix. Then
writes the bf16 embedding, the axllm config.json and post_config.json, the
tokenizer, and checks the directory loads with ` + "`axllm run|serve`" + ` as it is.
With --pulsar2-bin it runs an installed compiler instead (no container), with
the shim first on PYTHONPATH; a pulsar2 wrapper that calls itself is refused.

The KV cache length must be 128·k−1: --kv-cache-len, else config.json's
kv_cache_len (edgectl patch config --kv-cache-len), else 2047. Weights are
s4 for GPTQ/AWQ int4 checkpoints, else s8. AX8850 boards run AX650 models.`,
		Example: `  edgectl pulsar2 build ./Qwen3-0.6B -o ./qwen3-0.6b-ax650 --image pulsar2:5.2
  edgectl pulsar2 build ./Qwen3-0.6B -o ./out --dry-run
  edgectl pulsar2 build ./model -o ./out --relax-groupn --fp32-as-bf16
  edgectl pulsar2 build ./Qwen3-0.6B -o ./out --pulsar2-bin /opt/pulsar2/venv/bin/pulsar2`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ModelDir = args[0]
			return runF(cmd.Context(), io, o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.OutDir, "output", "o", "", "output directory (must not exist)")
	f.StringVar(&o.Chip, "chip", pulsar2.DefaultChip, "target: "+pulsar2.ChipNames)
	f.StringVar(&o.Image, "image", "", "pulsar2 image (default: the newest local pulsar2:<version>)")
	f.StringVar(&o.Runtime, "runtime", "", "docker or podman (default: whichever is on PATH, docker first)")
	f.StringVar(&o.Builder, "builder", "", "llm_build or llm_build2 (default: from the image's pulsar2 version)")
	f.StringVar(&o.Pulsar2Bin, "pulsar2-bin", "", "run this installed pulsar2 (path or name on PATH) instead of the container image")
	f.IntVar(&o.KVCacheLen, "kv-cache-len", 0, fmt.Sprintf("KV cache length, 128·k−1 (default: config.json kv_cache_len, else %d)", patch.DefaultKVLen))
	f.IntVar(&o.PrefillLen, "prefill-len", 0, "prefill chunk length (default 128)")
	f.IntVar(&o.MaxPrefill, "max-prefill", 0, "largest prefill group, a multiple of --prefill-len (default: half the KV cache)")
	f.IntVar(&o.Parallel, "parallel", 0, "compiler threads (default: min(8, CPUs))")
	f.StringVarP(&o.WeightType, "weight-type", "w", "", "s8, s4, bf16, fp16, fp32, fp8_e5m2, fp8_e4m3 (default: s4 for int4 GPTQ/AWQ, else s8)")
	f.IntVarP(&o.CheckLevel, "check-level", "c", 0, "pulsar2 check level: 0 none, 1 layer check, 2 \"1+1\"")
	f.StringVar(&o.ModelName, "model-name", "", "axllm model_name (default: the repo id or directory name)")
	f.StringVar(&o.TokenizerType, "tokenizer-type", "", "axllm tokenizer_type (default: from model_type)")
	f.StringVar(&o.SystemPrompt, "system-prompt", "", "axllm system_prompt")
	f.BoolVar(&o.DryRun, "dry-run", false, "print the container command and run nothing")
	shimFlags(cmd, &o.Shim)
	return cmd
}

func runPulsar2Build(ctx context.Context, io *cli.IO, o *pulsar2BuildOptions) error {
	if o.OutDir == "" && !o.DryRun {
		return usagef("pass -o OUT")
	}
	if o.OutDir == "" {
		o.OutDir = "OUT"
	}
	o.Log = io.ErrOut
	if io.Quiet {
		o.Log = goio.Discard
	}
	res, err := runExplainedBuild[*pulsar2.BuildError](io, &o.OnEvent, func() (*pulsar2.BuildResult, error) {
		return pulsar2.Build(ctx, o.BuildOptions)
	})
	if err != nil || io.JSON {
		return err
	}
	if res.DryRun {
		io.Printf("%s\n", pulsar2.ShellQuote(res.Command))
		return nil
	}
	io.Printf("%s\n", res.OutDir)
	io.Logf("built %s: %d layers (%s), pulsar2 %s %s, kv %d, weights %s", res.Config.ModelName, res.Config.AxmodelNum,
		res.Config.TemplateFilenameAxmodel, res.PulsarVersion, res.Builder, res.KVCacheLen, res.WeightType)
	for _, w := range res.Warnings {
		io.Logf("warning: %s", w)
	}
	return nil
}

// ---- verify

type pulsar2VerifyOptions struct{ Dir string }

func newPulsar2VerifyCmd(io *cli.IO, runF func(context.Context, *cli.IO, *pulsar2VerifyOptions) error) *cobra.Command {
	o := &pulsar2VerifyOptions{}
	return &cobra.Command{
		Use:   "verify DIR",
		Short: "Check that a built directory loads with axllm run|serve as it is",
		Long: `Checks the ax-llm config.json (every required key), one layer file per
axmodel_num, the post model, the embedding size (vocab × hidden × 2), the
tokenizer file and a complete post_config.json. Exit 1 lists every problem.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			return runF(cmd.Context(), io, o)
		},
	}
}

func runPulsar2Verify(ctx context.Context, io *cli.IO, o *pulsar2VerifyOptions) error {
	c, err := axllm.Verify(o.Dir)
	if err != nil {
		var ve *axllm.VerifyError
		if io.JSON && errors.As(err, &ve) {
			io.Event(map[string]any{"event": "verify_failed", "dir": ve.Dir, "problems": ve.Problems})
		}
		return err
	}
	if io.JSON {
		return io.WriteJSON(map[string]any{"dir": o.Dir, "ok": true, "config": c})
	}
	io.Printf("%s: ok: %s, %d layers, embedding %d × %d, tokenizer %s\n", o.Dir, c.ModelName, c.AxmodelNum,
		c.TokensEmbedNum, c.TokensEmbedSize, c.URLTokenizerModel)
	return nil
}

// ---- image patch

type pulsar2ImagePatchOptions struct {
	Src, Dst string
	pulsar2.PatchOptions
}

func newPulsar2ImagePatchCmd(io *cli.IO, runF func(context.Context, *cli.IO, *pulsar2ImagePatchOptions) error) *cobra.Command {
	o := &pulsar2ImagePatchOptions{}
	cmd := &cobra.Command{
		Use:   "patch SRC DST",
		Short: "Bake the shim and a forwarding pulsar2 wrapper into a copy of the image",
		Long: `SRC and DST are each a ` + "`docker save`" + ` tarball (.tar, .tar.gz; the vendor's
ax_pulsar2_${VER}.tar.gz works as it is) or a registry reference. One layer
is appended: sitecustomize.py in the image's Python site-packages (found by
reading the image's filesystem; an existing sitecustomize.py is kept and
chained) and, in place of the image's pulsar2, a wrapper that enables the
shim and runs the original (kept as pulsar2.edgectl-orig). Earlier layers and
the config are unchanged apart from the new diff_id and history entry.
Without hook flags all three hooks are enabled.`,
		Example: `  edgectl pulsar2 image patch ax_pulsar2_5.2.tar.gz pulsar2-5.2-edgectl.tar && docker load -i pulsar2-5.2-edgectl.tar
  edgectl pulsar2 image patch registry.local/pulsar2:5.2 registry.local/pulsar2:5.2-edgectl`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Src, o.Dst = args[0], args[1]
			return runF(cmd.Context(), io, o)
		},
	}
	cmd.Flags().StringVar(&o.Tag, "tag", "", "image name inside a tarball DST (default: SRC's tag + \"-edgectl\")")
	cmd.Flags().BoolVar(&o.Insecure, "insecure", false, "allow plain-HTTP registries")
	shimFlags(cmd, &o.Shim)
	return cmd
}

func runPulsar2ImagePatch(ctx context.Context, io *cli.IO, o *pulsar2ImagePatchOptions) error {
	o.Log = io.ErrOut
	if io.Quiet {
		o.Log = goio.Discard
	}
	res, err := pulsar2.PatchImage(ctx, o.Src, o.Dst, o.PatchOptions)
	if err != nil {
		return err
	}
	if io.JSON {
		return io.WriteJSON(res)
	}
	io.Printf("%s\n", res.Digest)
	io.Logf("shim in %s; wrapper %s → %s; layer %s", res.SitePackages, orNone(res.Wrapper), orNone(res.Original), res.Layer)
	if res.Tag != "" {
		io.Logf("load with: docker load -i %s   (image %s)", o.Dst, res.Tag)
	}
	for _, w := range res.Warnings {
		io.Logf("warning: %s", w)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
