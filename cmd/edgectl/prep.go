package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/progress"
	"github.com/edgectl/edgectl/internal/units"
	"github.com/edgectl/edgectl/patch"
	"github.com/edgectl/edgectl/prep"
	"github.com/edgectl/edgectl/prep/oci"
	"github.com/edgectl/edgectl/pulsar2"
)

func init() { register(newPrepCmd) }

type prepOptions struct {
	prep.Options
	eos      int
	Push     string
	Insecure bool
}

func newPrepCmd(io *cli.IO) *cobra.Command {
	return newPrepCmdWith(io, runPrep)
}

func newPrepCmdWith(io *cli.IO, runF func(context.Context, *cli.IO, *prepOptions) error) *cobra.Command {
	o := &prepOptions{}
	cmd := &cobra.Command{
		Use:   "prep SOURCE --target " + strings.Join(prep.Targets, "|") + " -o OUT",
		Short: "Run the whole pipeline: pull, doctor, patch, pack, build → a reproducible OUT/",
		Long: `Takes SOURCE — a Hugging Face repository ORG/NAME[@REVISION] or a local checkpoint
directory — through every step its target needs (pull → doctor → patch config →
inject norms → quantize/pack → pulsar2 build) and writes OUT/ with the artifacts
and manifest.json (every file's sha256 and size, the source and its commit,
edgectl's version, the options, each step's findings).

Each step is cached under the hash of its input and options (--cache-dir, default
$EDGECTL_CACHE_DIR or ~/.cache/edgectl/prep): a rerun skips finished steps, an
interrupted run resumes, --force redoes everything. Identical inputs and options
give a byte-identical OUT/. With --push, OUT/ is then pushed to an OCI registry.

Exit codes: 0 ok, 1 bad input, 2 usage, 4 the model cannot take this target,
5 an external tool failed, 10–16 Hub failures as for ` + "`edgectl pull`" + `.`,
		Example: `  edgectl prep ./testdata/models/tinystories-656k --target cpu -o out/tiny
  edgectl prep Qwen/Qwen3-1.7B --target ax650 --kv-cache-len 2048 -o out/qwen3-ax650
  edgectl prep microsoft/bitnet-b1.58-2B-4T --target h1b --format sherry -o out/bitnet --json
  edgectl prep Qwen/Qwen3-1.7B --target ax650 -o out/q --push ghcr.io/acme/qwen3-ax650:v1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Source = args[0]
			if cmd.Flags().Changed("eos") {
				o.EOS = &o.eos
			}
			return runF(cmd.Context(), io, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Target, "target", "", "what to build: "+strings.Join(prep.Targets, ", ")+" (ax650 also as AX8850, AX-M1, AX650N, …, any case)")
	f.StringVarP(&o.Out, "output", "o", "", "artifact directory to write")
	deprecatedAlias(io, f, "out", "output")
	f.StringVar(&o.Format, "format", "", "packing: tq2_0|tq1_0 (gguf), sherry|halo2|tq1h (h1b), s4|s8 weight type (ax650)")
	f.IntVar(&o.KVCacheLen, "kv-cache-len", 0, fmt.Sprintf("ax650: KV-cache length, normalized to 128·k−1 (default %d)", patch.DefaultKVLen))
	f.IntVar(&o.eos, "eos", 0, "the token id that replaces an eos_token_id array")
	f.StringVar(&o.Ternarize, "ternarize", "", "gguf/h1b: auto|absmean|none (as `quant pack`)")
	f.StringVar(&o.Chip, "chip", "", "ax650: compiler --chip: "+pulsar2.ChipNames+" (default AX650)")
	f.StringVar(&o.Image, "image", "", "ax650: pulsar2 container image (default: the newest local pulsar2:VERSION; pin it for reproducible builds)")
	f.StringVar(&o.Runtime, "runtime", "", "ax650: container runtime, docker or podman (default: whichever is on PATH)")
	f.StringVar(&o.CacheDir, "cache-dir", "", "step cache (default $EDGECTL_CACHE_DIR or ~/.cache/edgectl/prep)")
	f.BoolVar(&o.Force, "force", false, "redo every step, and replace an OUT/ an earlier prep wrote")
	f.StringVar(&o.Push, "push", "", "push OUT/ to this OCI reference when done (REGISTRY/REPO:TAG)")
	f.BoolVar(&o.Insecure, "insecure", false, "allow plain HTTP to the --push registry")
	_ = cmd.MarkFlagRequired("target")
	_ = cmd.MarkFlagRequired("output")
	return cmd
}

func runPrep(ctx context.Context, io *cli.IO, o *prepOptions) error {
	view := newEventView(io, true)
	res, err := prep.Run(ctx, view.on, o.Options)
	view.finish()
	if err != nil {
		return err
	}
	result := progress.Event{Event: progress.Result, Out: res.Out, Files: len(res.Manifest.Files), ManifestSHA256: res.ManifestSHA256}
	for _, f := range res.Manifest.Files {
		result.Bytes += f.Size
	}
	if o.Push != "" {
		pr, err := pushDir(ctx, view, res.Out, o.Push, o.Insecure)
		if err != nil {
			return err
		}
		result.Ref, result.Digest = pr.Ref, pr.Digest
	}
	if view.json(result) {
		return nil
	}
	io.Logf("%s: %d files, %s, manifest sha256 %s", res.Out, result.Files, units.Bytes(result.Bytes), res.ManifestSHA256[:12])
	io.Printf("%s\n", res.Out)
	if result.Ref != "" {
		io.Printf("%s\n", result.Ref)
	}
	return nil
}

// pushDir pushes an artifact directory, with a bar on a terminal and
// start/done events under --json. prep --push and push share it.
func pushDir(ctx context.Context, view *eventView, dir, ref string, insecure bool) (*oci.PushResult, error) {
	view.json(progress.Event{Event: progress.Start, Step: "push", Ref: ref})
	res, err := oci.Push(ctx, dir, ref, oci.Options{Insecure: insecure, OnEvent: view.on})
	view.finish()
	if err != nil {
		view.json(progress.Event{Event: progress.Error, Step: "push", Err: err})
		return nil, err
	}
	view.json(progress.Event{Event: progress.Done, Step: "push", Ref: res.Ref, Digest: res.Digest, Files: res.Files, Bytes: res.Bytes})
	view.io.Logf("pushed %s (%d files, %s)", res.Ref, res.Files, units.Bytes(res.Bytes))
	return res, nil
}
