package main

import (
	"context"
	goio "io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/rknn"
)

func init() { register(newRknnCmd) }

func newRknnCmd(io *cli.IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rknn",
		Short: "Make a ViT encoder fit the Rockchip RK3588 NPU: tile, scale, shard and compile its ONNX graph",
		Long: `rknn-toolkit2 fails on a vision transformer's attention (REGTASK Overflow
0xe010: a 32 KB limit per vector operation), fuses hand-made tiles back
together, and loses SigLIP's ~hundreds-valued activations to FP16 overflow.
shard rewrites an ONNX encoder so none of that happens and cuts it into
shards for the NPU's three cores; verify checks the shards against the
original in a reference evaluator that stores tensors in FP16 as the NPU does;
build compiles the shards with rknn-toolkit2 into .rknn files.`,
	}
	cmd.AddCommand(newRknnShardCmd(io, runRknnShard), newRknnVerifyCmd(io, runRknnVerify), newRknnBuildCmd(io, runRknnBuild))
	return cmd
}

type rknnShardOptions struct{ rknn.ShardOptions }

func newRknnShardCmd(io *cli.IO, runF func(context.Context, *cli.IO, *rknnShardOptions) error) *cobra.Command {
	o := &rknnShardOptions{}
	cmd := &cobra.Command{
		Use:   "shard MODEL.onnx -o OUT",
		Short: "Tile attention, add fusion barriers, scale the residual stream and cut the encoder into shards",
		Long: `Reads a ViT encoder exported by torch.onnx (opset 12: LayerNorm written out,
GELU through Erf, attention as Reshape/Transpose/MatMul/Softmax) and writes
OUT/shard_NN.onnx and OUT/manifest.json:

  - constants and shape arithmetic are folded into initializers;
  - the residual stream is carried at s·x ("sandwich" scaling; LayerNorm eps
    becomes eps·s², branch outputs are scaled by s, the host multiplies the
    input by input_scale and the output by output_scale): exact in real
    arithmetic, and it keeps FP16 from overflowing. --scale auto picks the
    largest power of two that keeps every scaled tensor under 4096 on a
    sample input (--sample FILE: raw float32; default: seeded normal values);
  - every attention whose Softmax input exceeds --sram-kb in FP16 is split by
    head and query rows (exact), with a barrier between tiles: pill adds
    1e-6·sigmoid(previous tile's first value), rules writes rknn-toolkit2's
    disable_rules into the manifest's build config;
  - the graph is cut after every residual Add (attention and MLP of each
    layer), shards assigned to --cores round-robin.

OUT is written whole or not at all.`,
		Example: `  edgectl rknn shard siglip.onnx -o siglip-rk3588
  edgectl rknn shard siglip.onnx -o out --barrier rules --scale 0.125
  edgectl rknn verify siglip-rk3588 --model siglip.onnx`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Model = args[0]
			return runF(cmd.Context(), io, o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.OutDir, "output", "o", "", "output directory (must not exist)")
	f.IntVar(&o.SRAMKB, "sram-kb", rknn.DefaultSRAMKB, "scratchpad per vector operation in KiB: every Softmax input must fit it in FP16")
	f.IntVar(&o.Cores, "cores", rknn.DefaultCores, "NPU cores the shards are assigned to, round-robin")
	f.StringVar(&o.Barrier, "barrier", rknn.BarrierPill, "fusion barrier between tiles: pill, rules, both or none")
	f.StringVar(&o.Scale, "scale", "auto", "residual-stream scale s: auto (from the sample input) or a number (1: no scaling)")
	f.StringVar(&o.Sample, "sample", "", "sample input to calibrate on: raw little-endian float32 of the input's shape (default: seeded normal values)")
	return cmd
}

func runRknnShard(ctx context.Context, io *cli.IO, o *rknnShardOptions) error {
	if o.OutDir == "" {
		return usagef("pass -o OUT, the directory to write the shards into")
	}
	o.Log = io.ErrOut
	if io.Quiet {
		o.Log = goio.Discard
	}
	res, err := rknn.Shard(ctx, o.ShardOptions)
	if err != nil {
		return err
	}
	if io.JSON {
		return io.WriteJSON(res)
	}
	io.Printf("%s\n", res.OutDir)
	io.Logf("%d shards on %d cores; host: input ×%g, output ×%g; Softmax inputs ≤ %d bytes (budget %d); check with: edgectl rknn verify %s --model %s",
		len(res.Manifest.Shards), res.Manifest.Cores, res.Manifest.InputScale, res.Manifest.OutputScale, res.Manifest.Budget.MaxSoftmaxBytes,
		res.Manifest.Budget.Bytes, res.OutDir, o.Model)
	return nil
}

type rknnVerifyOptions struct{ rknn.VerifyOptions }

func newRknnVerifyCmd(io *cli.IO, runF func(context.Context, *cli.IO, *rknnVerifyOptions) error) *cobra.Command {
	o := &rknnVerifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify OUT --model MODEL.onnx",
		Short: "Compare the shard chain in FP16 with the original model in float64 (cosine per shard and end to end)",
		Long: `Evaluates the original model in float64 and the shards of OUT in manifest
order with every tensor stored in FP16 after each operator (overflow is Inf,
as on the NPU), on the sample input shard calibrated on (or --sample), and
prints the cosine similarity of each shard's outputs (in the chain, and fed
the original's values) and end to end, next to the unsharded model in FP16.
Exits 1 when the end-to-end cosine is under --min-cosine, a tensor overflows
FP16, or a Softmax input exceeds the tile budget.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			return runF(cmd.Context(), io, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Model, "model", "", "the .onnx model the shards were cut from (required)")
	f.StringVar(&o.Sample, "sample", "", "input: raw little-endian float32 (default: the seeded normal values shard used)")
	f.Float64Var(&o.MinCosine, "min-cosine", rknn.DefaultMinCosine, "end-to-end cosine the chain must reach")
	return cmd
}

func runRknnVerify(ctx context.Context, io *cli.IO, o *rknnVerifyOptions) error {
	if o.Model == "" {
		return usagef("pass --model MODEL.onnx, the model the shards in %s were cut from", o.Dir)
	}
	r, err := rknn.Verify(ctx, o.VerifyOptions)
	if err != nil {
		return err
	}
	if io.JSON {
		if err := io.WriteJSON(r); err != nil {
			return err
		}
	} else {
		io.Printf("%-14s %4s %5s %10s %10s %10s %8s\n", "shard", "core", "ops", "cosine", "isolated", "max|x|", "softmax")
		for _, s := range r.Shards {
			io.Printf("%-14s %4d %5d %10.6f %10.6f %10.4g %8d\n", s.File, s.Core, s.Ops, s.Cosine, s.IsolatedCosine, s.MaxAbs, s.MaxSoftmaxBytes)
		}
		io.Printf("end to end: cosine %.6f (min %.4g); the unsharded model in FP16: %.6f; Softmax inputs ≤ %d bytes (budget %d)\n",
			r.Cosine, r.MinCosine, r.UnshardedFP16Cosine, r.MaxSoftmaxBytes, r.BudgetBytes)
	}
	if !r.OK {
		err := errkind.Errorf(errkind.Input, "%s does not verify: %s", o.Dir, strings.Join(r.Problems, "; "))
		if io.JSON {
			return &silentError{err: err} // the report says why
		}
		return err
	}
	return nil
}
