package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/units"
	"github.com/edgectl/edgectl/pulsar2"
	"github.com/edgectl/edgectl/rknn"
)

type rknnBuildOptions struct{ rknn.BuildOptions }

func newRknnBuildCmd(io *cli.IO, runF func(context.Context, *cli.IO, *rknnBuildOptions) error) *cobra.Command {
	o := &rknnBuildOptions{}
	cmd := &cobra.Command{
		Use:   "build OUT (--image IMG | --native)",
		Short: "Compile every shard of OUT with rknn-toolkit2 into .rknn files beside the manifest",
		Long: `Compiles each shard of OUT (the directory edgectl rknn shard wrote) with
rknn-toolkit2, one process per shard: in a container image you name (docker
or podman, no network, OUT mounted read-only, your user mapped) or, with
--native, an installed toolkit (python3 with rknn.api). edgectl writes a
small Python build script and a job file (rknn.config with the manifest's
target_platform, float_dtype, optimization_level and disable_rules;
load_onnx with each shard's input and output names and sizes;
build(do_quantization=False); export_rknn) and runs it for each shard under
--timeout. Known toolkit failures (REGTASK Overflow 0xe010, tiles fused
back, opset, unsupported operators, out of memory, timeouts) are explained
with their fix.

The .rknn files appear beside the manifest, which records each one's name,
sha256 and toolkit version, all together or not at all: a failed build
leaves OUT as it was. --dry-run prints the script, the job and the commands
and runs nothing.`,
		Example: `  edgectl rknn build siglip-rk3588 --image rknn-toolkit2:2.3.2
  edgectl rknn build siglip-rk3588 --native --timeout 1h
  edgectl rknn build siglip-rk3588 --image rknn-toolkit2:2.3.2 --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			return runF(cmd.Context(), io, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Image, "image", "", "container image with rknn-toolkit2 installed")
	f.StringVar(&o.Runtime, "runtime", "", "docker or podman (default: whichever is on PATH, docker first)")
	f.BoolVar(&o.Native, "native", false, "use an installed rknn-toolkit2 (python3 with rknn.api) instead of an image")
	f.StringVar(&o.Python, "python", "", "with --native: the Python to run (default python3)")
	f.StringVar(&o.Target, "target", "", "rknn target_platform (default: the manifest's, rk3588)")
	f.DurationVar(&o.Timeout, "timeout", rknn.DefaultBuildTimeout, "limit for each shard's compile")
	f.BoolVar(&o.DryRun, "dry-run", false, "print the build script, its job file and the commands; run nothing")
	return cmd
}

func runRknnBuild(ctx context.Context, io *cli.IO, o *rknnBuildOptions) error {
	res, err := runExplainedBuild[*rknn.BuildError](io, &o.OnEvent, func() (*rknn.BuildResult, error) {
		return rknn.Build(ctx, o.BuildOptions)
	})
	if err != nil || io.JSON {
		return err
	}
	if res.DryRun {
		io.Printf("# the build script (edgectl_rknn_build.py)\n%s\n# its job file (edgectl_rknn_job.json)\n%s\n# one process per shard:\n", res.Script, res.Job)
		for _, c := range res.Commands {
			io.Printf("%s\n", pulsar2.ShellQuote(c))
		}
		return nil
	}
	io.Printf("%s\n", res.Dir)
	var bytes int64
	for _, s := range res.Shards {
		bytes += s.Bytes
	}
	io.Logf("built %d shards for %s with rknn-toolkit2 %s (%s) in %.1fs: %s of .rknn, recorded in manifest.json", len(res.Shards), res.Target,
		res.ToolkitVersion, res.Runtime, res.Duration, units.Bytes(bytes))
	for _, w := range res.Warnings {
		io.Logf("warning: %s", w)
	}
	return nil
}
