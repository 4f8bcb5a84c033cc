package main

import (
	"encoding/json"
	"fmt"
	goio "io"
	"math"
	"reflect"

	"github.com/edgectl/edgectl/format/gguf"
)

func init() {
	registerInspector(inspector{name: "gguf", match: isGGUF, inspect: inspectGGUF, raw: rawGGUF})
}

// isGGUF matches by extension or by magic, so renamed files still work.
func isGGUF(path string) bool {
	return sniff(path, ".gguf", gguf.Magic)
}

func inspectGGUF(path string) (*report, error) {
	g, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	arch := g.Architecture()
	r := &report{Path: path, Format: "gguf", Architecture: arch, DTypes: map[string]int{}, Metadata: map[string]any{}}
	for _, kv := range g.KVs {
		r.Metadata[kv.Key] = summarizeValue(kv)
	}
	if ft, err := g.Int("general.file_type"); err == nil && ft >= 0 && ft <= math.MaxUint32 {
		r.Metadata["general.file_type"] = fileType(ft)
	}
	geti := func(key string) int {
		v, _ := g.Int(arch + "." + key)
		return int(v)
	}
	if arch != "" {
		d := &dims{HiddenSize: geti("embedding_length"), IntermediateSize: geti("feed_forward_length"), Layers: geti("block_count"),
			Heads: geti("attention.head_count"), KVHeads: geti("attention.head_count_kv"), ContextLength: geti("context_length"),
			HeadDim: geti("rope.dimension_count"), VocabSize: geti("vocab_size")}
		if toks, err := g.Strings("tokenizer.ggml.tokens"); err == nil {
			model, _ := g.String("tokenizer.ggml.model")
			r.Tokenizer = &tokenizerInfo{Files: []string{"(embedded tokenizer.ggml.*)"}, Model: model, VocabSize: len(toks)}
			if d.VocabSize == 0 {
				d.VocabSize = len(toks)
			}
		}
		r.Dims = d
	}
	for _, t := range g.Tensors {
		r.Parameters += t.Elements()
		r.TensorBytes += t.Size
		r.DTypes[t.Type.String()]++
		r.Tensors = append(r.Tensors, tensorEntry{Name: t.Name, DType: t.Type.String(), Shape: append([]int64(nil), t.Ne...), Offset: t.Offset, Size: t.Size})
	}
	return r, nil
}

// fileType is general.file_type: its number in --json, and in text with
// llama-quantize's name for it ("15 (Q4_K_M)": the mix of block types the
// dtypes line counts).
type fileType uint32

func (f fileType) String() string {
	if n := gguf.FileTypeName(uint32(f)); n != "" {
		return fmt.Sprintf("%d (%s)", uint32(f), n)
	}
	return fmt.Sprint(uint32(f))
}

func (f fileType) MarshalJSON() ([]byte, error) { return json.Marshal(uint32(f)) }

// summarizeValue keeps scalars and short arrays, and describes long ones
// (a 128k-token vocabulary is not metadata a person reads).
func summarizeValue(kv gguf.KV) any {
	if kv.Type != gguf.ValArray {
		return kv.Value
	}
	n := reflect.ValueOf(kv.Value).Len()
	if n <= 16 {
		return kv.Value
	}
	return fmt.Sprintf("[%d × %s]", n, kv.Elem)
}

func rawGGUF(path, tensor string, w goio.Writer) error {
	g, err := gguf.Open(path)
	if err != nil {
		return err
	}
	defer g.Close()
	t, ok := g.Tensor(tensor)
	if !ok {
		return fmt.Errorf("%s: no tensor %q (run edgectl inspect %s to list them)", path, tensor, path)
	}
	_, err = goio.Copy(w, g.Reader(t))
	return err
}
