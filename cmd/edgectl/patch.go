package main

import (
	"context"
	"fmt"
	goio "io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/patch"
)

func init() { register(newPatchCmd) }

func newPatchCmd(io *cli.IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "patch",
		Short: "Repair a checkpoint for NPU toolchains (config.json, missing norm tensors)",
	}
	cmd.AddCommand(newPatchConfigCmd(io, runPatchConfig), newPatchLayerNormCmd(io, runPatchLayerNorm))
	return cmd
}

// patchTarget is where a patch writes: a new directory, or the input itself.
type patchTarget struct {
	Out     string
	InPlace bool
	DryRun  bool
}

func (t *patchTarget) flags(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&t.Out, "output", "o", "", "write the patched checkpoint to this new directory (other files are hard-linked)")
	cmd.Flags().BoolVar(&t.InPlace, "in-place", false, "edit the input directory, keeping NAME.orig backups")
	cmd.Flags().BoolVar(&t.DryRun, "dry-run", false, "show what would change and write nothing")
}

func (t *patchTarget) check() error {
	if t.DryRun {
		return nil
	}
	if t.Out == "" && !t.InPlace {
		return usagef("choose -o DIR (new directory) or --in-place (keeps .orig backups), or --dry-run")
	}
	if t.Out != "" && t.InPlace {
		return usagef("-o and --in-place are exclusive")
	}
	return nil
}

// resume finishes an interrupted --in-place patch of dir before planning,
// so the plan sees the checkpoint whole. Only a real --in-place run does:
// -o and --dry-run never modify the input (their plan refuses a pending
// journal instead).
func (t *patchTarget) resume(io *cli.IO, dir string) (*patch.Resumed, error) {
	if !t.InPlace || t.DryRun {
		return nil, nil
	}
	r, err := patch.Resume(dir)
	if r != nil {
		io.Logf("%s: an interrupted in-place patch was %s (%s)", dir, r.Action, strings.Join(r.Files, ", "))
	}
	return r, err
}

type patchConfigOptions struct {
	Dir        string
	EOS        int
	EOSSet     bool
	KVCacheLen int
	patchTarget
}

func newPatchConfigCmd(io *cli.IO, runF func(context.Context, *cli.IO, *patchConfigOptions) error) *cobra.Command {
	o := &patchConfigOptions{}
	cmd := &cobra.Command{
		Use:   "config DIR",
		Short: "Fix config.json: one eos_token_id, a 128·k−1 KV-cache length",
		Long: `Replaces an eos_token_id array (which makes the vendor gateway generate
forever) by a single id in config.json and generation_config.json: the one
named by --eos; else, for a chat model, the token its chat template closes
assistant turns with (<end_of_turn>, <|im_end|>, <|eot_id|>, …) when it is
one of the eos ids; else the tokenizer's eos token; else the last entry.
A single id that differs from the --eos or chat-template choice is
rewritten too. Each change names the rule that chose it. With
--kv-cache-len N, records the largest 128·k−1 ≤ N as kv_cache_len (2048 → 2047).
Key order, formatting and unknown keys are kept; running it twice changes nothing.`,
		Example: `  edgectl patch config ./gemma-3-1b-it -o ./gemma-fixed --kv-cache-len 2048
  edgectl patch config ./model --in-place
  edgectl patch config ./model --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			o.EOSSet = cmd.Flags().Changed("eos")
			return runF(cmd.Context(), io, o)
		},
	}
	cmd.Flags().IntVar(&o.EOS, "eos", 0, "the eos token id to keep (one of the eos ids, or the chat template's end-of-turn token)")
	cmd.Flags().IntVar(&o.KVCacheLen, "kv-cache-len", 0, "KV-cache length; normalized to 128·k−1 and recorded as kv_cache_len")
	o.patchTarget.flags(cmd)
	return cmd
}

func runPatchConfig(ctx context.Context, io *cli.IO, o *patchConfigOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	resumed, err := o.resume(io, o.Dir)
	if err != nil {
		return err
	}
	opts := patch.ConfigOptions{KVCacheLen: o.KVCacheLen}
	if o.EOSSet {
		opts.EOS = &o.EOS
	}
	edits, err := patch.PlanConfig(o.Dir, opts)
	if err != nil {
		return err
	}
	var changes []patch.Change
	for _, e := range edits {
		changes = append(changes, e.Changes...)
	}
	if !o.DryRun && len(edits) > 0 || (!o.DryRun && o.Out != "") {
		out, err := patch.NewOutput(o.Dir, o.Out, o.InPlace)
		if err != nil {
			return err
		}
		for _, e := range edits {
			if err := out.WriteBytes(e.Name, e.New); err != nil {
				out.Abort()
				return err
			}
		}
		if err := out.Commit(); err != nil {
			return err
		}
	}
	if io.JSON {
		diffs := map[string]string{}
		for _, e := range edits {
			diffs[e.Name] = patch.UnifiedDiff(e.Name, e.Old, e.New)
		}
		return io.WriteJSON(map[string]any{"dir": o.Dir, "output": outputName(o.patchTarget, o.Dir),
			"dry_run": o.DryRun, "changes": nonNil(changes), "diff": diffs, "resumed": resumed})
	}
	if len(changes) == 0 {
		io.Logf("%s: config already fine, nothing to change", o.Dir)
	}
	for _, c := range changes {
		if c.Rule != "" {
			io.Logf("%s: %s %v → %v (rule %s: %s)", c.File, c.Key, jsonish(c.Old), jsonish(c.New), c.Rule, c.Reason)
			continue
		}
		io.Logf("%s: %s %v → %v (%s)", c.File, c.Key, jsonish(c.Old), jsonish(c.New), c.Reason)
	}
	if o.DryRun {
		for _, e := range edits {
			io.Printf("%s", patch.UnifiedDiff(e.Name, e.Old, e.New))
		}
	} else if len(changes) > 0 || o.Out != "" {
		io.Logf("wrote %s", outputName(o.patchTarget, o.Dir))
	}
	return nil
}

type patchLayerNormOptions struct {
	Dir     string
	DType   string
	Names   []string
	Fill    float32
	FillSet bool
	patchTarget
}

func newPatchLayerNormCmd(io *cli.IO, runF func(context.Context, *cli.IO, *patchLayerNormOptions) error) *cobra.Command {
	o := &patchLayerNormOptions{}
	cmd := &cobra.Command{
		Use:   "layernorm DIR",
		Short: "Add the norm tensors the architecture expects but the checkpoint lacks",
		Long: `Adds every normalization weight the architecture defines but the safetensors
files lack (model.norm, per-layer input/post-attention norms; Qwen3 q/k norms;
Gemma pre/post feed-forward norms; BitNet sub-norms), filled with the identity
value (1.0; 0.0 for Gemma, whose norms compute x·(1+w)) in float16. Each goes
into the shard holding the rest of its layer; the index's weight_map and
total_size are updated. Existing tensor bytes are copied unchanged, streaming.`,
		Example: `  edgectl patch layernorm ./model -o ./model-norms
  edgectl patch layernorm ./model --in-place --dtype BF16
  edgectl patch layernorm ./model --name model.layers.0.extra_norm.weight=2048 --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			o.FillSet = cmd.Flags().Changed("fill")
			return runF(cmd.Context(), io, o)
		},
	}
	cmd.Flags().StringVar(&o.DType, "dtype", "F16", "dtype of the added tensors: F16, BF16 or F32")
	cmd.Flags().StringArrayVar(&o.Names, "name", nil, "add this tensor too: NAME or NAME=DIMxDIM (default shape [hidden_size]); repeatable")
	cmd.Flags().Float32Var(&o.Fill, "fill", 1, "fill value (default: the architecture's identity, 1.0 or 0.0 for Gemma)")
	o.patchTarget.flags(cmd)
	return cmd
}

func runPatchLayerNorm(ctx context.Context, io *cli.IO, o *patchLayerNormOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	resumed, err := o.resume(io, o.Dir)
	if err != nil {
		return err
	}
	opts := patch.LayerNormOptions{DType: safetensors.DType(strings.ToUpper(o.DType)), Extra: o.Names}
	if o.FillSet {
		opts.Fill = &o.Fill
	}
	plan, err := patch.PlanLayerNorm(o.Dir, opts)
	if err != nil {
		return err
	}
	defer plan.Close()
	if !o.DryRun && (plan.Changes() || o.Out != "") {
		out, err := patch.NewOutput(o.Dir, o.Out, o.InPlace)
		if err != nil {
			return err
		}
		var total int64
		for _, f := range shardsTouched(plan) {
			total += f
		}
		// The bar is only wired in on a terminal: a plain file-to-file copy
		// keeps the kernel's copy_file_range path.
		var progress goio.Writer
		bar := io.Bar(total, "patch layernorm")
		if io.Interactive {
			progress = bar
		}
		if err := plan.Apply(out, progress); err != nil {
			out.Abort()
			return err
		}
		bar.Finish()
		if err := out.Commit(); err != nil {
			return err
		}
	}
	if io.JSON {
		return io.WriteJSON(map[string]any{"dir": o.Dir, "output": outputName(o.patchTarget, o.Dir),
			"dry_run": o.DryRun, "added": nonNil(plan.Adds), "unindexed": nonNil(plan.Unindexed), "resumed": resumed})
	}
	if len(plan.Unindexed) > 0 {
		io.Logf("%s: %d tensors are in the shards but missing from %s's weight_map (%s, …): the index is rewritten with them",
			o.Dir, len(plan.Unindexed), safetensors.IndexName, plan.Unindexed[0])
	}
	if !plan.Changes() {
		io.Logf("%s: every expected norm tensor is present, nothing to add", o.Dir)
	}
	verb := "added"
	if o.DryRun {
		verb = "would add"
	}
	for _, a := range plan.Adds {
		io.Logf("%s %s %s%v = %g in %s", verb, a.Name, a.DType, a.Shape, a.Fill, a.Shard)
	}
	if !o.DryRun && (plan.Changes() || o.Out != "") {
		io.Logf("wrote %s", outputName(o.patchTarget, o.Dir))
	}
	return nil
}

// shardsTouched returns the data sizes of shards that will be rewritten.
func shardsTouched(p *patch.LayerNormPlan) []int64 {
	seen := map[string]bool{}
	var sizes []int64
	for _, a := range p.Adds {
		if !seen[a.Shard] {
			seen[a.Shard] = true
			sizes = append(sizes, p.ShardDataSize(a.Shard))
		}
	}
	return sizes
}

func outputName(t patchTarget, dir string) string {
	if t.DryRun {
		return ""
	}
	if t.InPlace {
		return dir
	}
	return t.Out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func jsonish(v any) string {
	if v == nil {
		return "(absent)"
	}
	return fmt.Sprint(v)
}
