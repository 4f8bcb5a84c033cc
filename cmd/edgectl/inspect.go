package main

import (
	"context"
	"errors"
	"fmt"
	goio "io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/format/axllm"
	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/format/tokjson"
	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/units"
)

func init() {
	register(newInspectCmd)
	registerInspector(inspector{name: "safetensors", match: func(p string) bool { return hasExt(p, ".safetensors") },
		inspect: inspectSafetensorsFile, raw: rawSafetensors})
}

type inspectOptions struct {
	Path   string
	Tensor string
	Raw    bool
}

func newInspectCmd(io *cli.IO) *cobra.Command { return newInspectCmdWith(io, runInspect) }

func newInspectCmdWith(io *cli.IO, runF func(context.Context, *cli.IO, *inspectOptions) error) *cobra.Command {
	o := &inspectOptions{}
	cmd := &cobra.Command{
		Use:   "inspect PATH",
		Short: "Describe a checkpoint directory, .safetensors, .gguf or .h1b file",
		Long: `Prints the architecture, dimensions, dtypes, parameter count and tensor list
of a Hugging Face checkpoint directory (config.json, sharded safetensors with
model.safetensors.index.json, tokenizer files) or of a single weight file.
--tensor NAME prints one tensor's header; --tensor NAME --raw writes its stored
bytes, exactly as in the file, to stdout.`,
		Example: `  edgectl inspect ./TinyStories-656K
  edgectl inspect model.safetensors --tensor lm_head.weight
  edgectl inspect model.safetensors --tensor lm_head.weight --raw > head.bin`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Path = args[0]
			return runF(cmd.Context(), io, o)
		},
	}
	cmd.Flags().StringVar(&o.Tensor, "tensor", "", "show only this tensor")
	cmd.Flags().BoolVar(&o.Raw, "raw", false, "with --tensor: write the tensor's stored bytes to stdout")
	return cmd
}

func runInspect(ctx context.Context, io *cli.IO, o *inspectOptions) error {
	if o.Raw && o.Tensor == "" {
		return usagef("--raw needs --tensor NAME")
	}
	st, err := os.Stat(o.Path)
	if err != nil {
		return err
	}
	var in *inspector
	if st.IsDir() && axllm.IsCompiled(o.Path) {
		if o.Tensor != "" {
			return fmt.Errorf("%s is a compiled ax-llm directory: its weights are in .axmodel files, not tensors (inspect the source checkpoint)", o.Path)
		}
		return inspectCompiled(io, o.Path)
	}
	if st.IsDir() {
		in = &inspector{name: "checkpoint", inspect: inspectCheckpoint, raw: rawCheckpoint}
	} else {
		for i := range inspectors {
			if inspectors[i].match(o.Path) {
				in = &inspectors[i]
				break
			}
		}
	}
	if in == nil {
		names := []string{"a checkpoint directory"}
		for _, i := range inspectors {
			names = append(names, i.name)
		}
		return fmt.Errorf("%s: unknown format (inspect reads %s)", o.Path, strings.Join(names, ", "))
	}
	if o.Raw {
		if io.JSON {
			return usagef("--raw writes bytes; it cannot be combined with --json")
		}
		return in.raw(o.Path, o.Tensor, io.Out)
	}
	r, err := in.inspect(o.Path)
	if err != nil {
		return err
	}
	if r.Format == "checkpoint" || r.Format == "gguf" {
		if e, err := cpu.DescribeEmbedding(o.Path); err == nil {
			r.Embedding = &e
		}
	}
	if o.Tensor != "" {
		for _, t := range r.Tensors {
			if t.Name == o.Tensor {
				if io.JSON {
					return io.WriteJSON(t)
				}
				io.Printf("name:   %s\ndtype:  %s\nshape:  %v\noffset: %d\nsize:   %d\n", t.Name, t.DType, t.Shape, t.Offset, t.Size)
				if t.File != "" {
					io.Printf("file:   %s\n", t.File)
				}
				return nil
			}
		}
		return fmt.Errorf("%s: no tensor %q (run edgectl inspect %s to list them)", o.Path, o.Tensor, o.Path)
	}
	if io.JSON {
		return io.WriteJSON(r)
	}
	printReport(io, r)
	return nil
}

func printReport(io *cli.IO, r *report) {
	io.Printf("path:         %s\nformat:       %s\n", r.Path, r.Format)
	if r.Architecture != "" {
		io.Printf("architecture: %s\n", r.Architecture)
	}
	if d := r.Dims; d != nil {
		io.Printf("dims:         hidden %d, ffn %d, layers %d, heads %d/%d (head_dim %d), vocab %d, context %d\n",
			d.HiddenSize, d.IntermediateSize, d.Layers, d.Heads, d.KVHeads, d.HeadDim, d.VocabSize, d.ContextLength)
	}
	io.Printf("parameters:   %s (%d)\n", units.Count(r.Parameters), r.Parameters)
	io.Printf("tensor bytes: %s\n", units.Bytes(r.TensorBytes))
	var dts []string
	for k, v := range r.DTypes {
		dts = append(dts, fmt.Sprintf("%s×%d", k, v))
	}
	sort.Strings(dts)
	io.Printf("dtypes:       %s\n", strings.Join(dts, ", "))
	if t := r.Tokenizer; t != nil {
		io.Printf("tokenizer:    %s, %d tokens (%s)\n", t.Model, t.VocabSize, strings.Join(t.Files, ", "))
	}
	if e := r.Embedding; e != nil {
		io.Printf("embedding:    %s\n", embeddingLine(e))
	}
	if len(r.Metadata) > 0 {
		keys := make([]string, 0, len(r.Metadata))
		for k := range r.Metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		io.Printf("metadata:\n")
		for _, k := range keys {
			io.Printf("  %s: %v\n", k, r.Metadata[k])
		}
	}
	io.Printf("tensors (%d):\n", len(r.Tensors))
	for _, t := range r.Tensors {
		io.Printf("  %-48s %-6s %-16s %s\n", t.Name, t.DType, fmt.Sprint(t.Shape), units.Bytes(t.Size))
	}
}

func inspectSafetensorsFile(path string) (*report, error) {
	f, err := safetensors.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &report{Path: path, Format: "safetensors", DTypes: map[string]int{}}
	if len(f.Metadata) > 0 {
		r.Metadata = map[string]any{}
		for k, v := range f.Metadata {
			r.Metadata[k] = v
		}
	}
	addTensors(r, f, "")
	return r, nil
}

func addTensors(r *report, f *safetensors.File, file string) {
	for _, t := range f.Tensors {
		r.Tensors = append(r.Tensors, tensorEntry{Name: t.Name, DType: string(t.DType), Shape: t.Shape,
			Offset: f.DataStart() + t.Begin, Size: t.Size(), File: file})
		r.Parameters += t.Elements()
		r.TensorBytes += t.Size()
		r.DTypes[string(t.DType)]++
	}
}

func inspectCheckpoint(dir string) (*report, error) {
	cfg, err := hfconfig.Load(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil && !errors.Is(err, safetensors.ErrNoWeights) {
		return nil, err
	}
	r := &report{Path: dir, Format: "checkpoint", Architecture: cfg.Arch(), DTypes: map[string]int{}}
	t := cfg.Text()
	r.Dims = &dims{HiddenSize: t.HiddenSize, IntermediateSize: t.IntermediateSize, Layers: t.NumHiddenLayers,
		Heads: t.NumAttentionHeads, KVHeads: t.KVHeads(), HeadDim: t.HeadDimension(), VocabSize: t.VocabSize,
		ContextLength: t.MaxPositionEmbeddings}
	if ck != nil {
		defer ck.Close()
		for _, f := range ck.Files {
			r.Files = append(r.Files, filepath.Base(f.Path))
			addTensors(r, f, filepath.Base(f.Path))
		}
	}
	if tok, err := tokjson.Load(filepath.Join(dir, "tokenizer.json")); err == nil {
		ti := &tokenizerInfo{Model: tok.Model.Type, VocabSize: len(tok.Tokens())}
		if tok.IsByteLevel() {
			ti.Model += " (byte-level)"
		} else if tok.Model.ByteFallback {
			ti.Model += " (byte fallback)"
		}
		for _, n := range []string{"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja", "tokenizer.model"} {
			if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
				ti.Files = append(ti.Files, n)
			}
		}
		r.Tokenizer = ti
	}
	return r, nil
}

func rawSafetensors(path, tensor string, w goio.Writer) error {
	f, err := safetensors.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	t, ok := f.Tensor(tensor)
	if !ok {
		return fmt.Errorf("%s: no tensor %q", path, tensor)
	}
	_, err = goio.Copy(w, f.Reader(t))
	return err
}

func rawCheckpoint(dir, tensor string, w goio.Writer) error {
	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		return err
	}
	defer ck.Close()
	f, t, ok := ck.Lookup(tensor)
	if !ok {
		return fmt.Errorf("%s: no tensor %q", dir, tensor)
	}
	_, err = goio.Copy(w, f.Reader(t))
	return err
}
