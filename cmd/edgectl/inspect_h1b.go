package main

import (
	"fmt"
	goio "io"
	"os"
	"strings"

	"github.com/edgectl/edgectl/format/h1b"
)

func init() {
	registerInspector(inspector{name: "h1b", match: isH1B, inspect: inspectH1B, raw: rawH1B})
}

func isH1B(path string) bool {
	return sniff(path, ".h1b", h1b.Magic[:3]) // legacy loaders compare 3 bytes
}

// inspectH1B lists the named tensors of a legacy .h1b. A packed matrix
// shows as NAME (codes, dtype = the packing) and NAME.scales (f32 per row);
// the duplicate norm copies show with dtype "F32 (skipped)".
func inspectH1B(path string) (*report, error) {
	f, err := h1b.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := f.Header
	r := &report{Path: path, Format: "h1b", Architecture: "bitnet", DTypes: map[string]int{},
		Dims: &dims{HiddenSize: int(h.HiddenSize), IntermediateSize: int(h.IntermediateSize), Layers: int(h.NumLayers),
			Heads: int(h.NumHeads), KVHeads: int(h.NumKVHeads), HeadDim: h.HeadDim(), VocabSize: int(h.VocabSize), ContextLength: int(h.MaxSeqLen)},
		Metadata: map[string]any{"version": h.Version, "packing": h1b.Packing(h.Version), "tie_embeddings": h.TieEmbeddings,
			"flags": fmt.Sprintf("0x%x", h.Flags), "rope_theta": h.Theta(), "rms_norm_eps": h.Eps()}}
	if extra := f.Size() - f.End; extra > 0 {
		r.Metadata["trailing_bytes"] = extra
	}
	if side := strings.TrimSuffix(path, ".h1b") + ".htok"; side != path {
		if tok, err := h1b.ReadTokenizer(side); err == nil {
			r.Tokenizer = &tokenizerInfo{Files: []string{side}, Model: "BPE", VocabSize: len(tok.Tokens)}
		}
	}
	for _, t := range f.Tensors {
		switch t.Kind {
		case h1b.Packed:
			p := h1b.Packing(h.Version)
			r.Tensors = append(r.Tensors,
				tensorEntry{Name: t.Name, DType: p, Shape: []int64{int64(t.Rows), int64(t.K)}, Offset: t.Offset, Size: t.Size},
				tensorEntry{Name: t.Name + ".scales", DType: "F32", Shape: []int64{int64(t.Rows)}, Offset: t.ScalesOffset, Size: 4 * int64(t.Rows)})
			r.DTypes[p]++
			r.DTypes["F32"]++
			r.Parameters += int64(t.Rows) * int64(t.K)
			r.TensorBytes += t.Size + 4*int64(t.Rows)
		default:
			dt := "F32"
			if t.Kind == h1b.Skipped {
				dt = "F32 (skipped)"
			} else {
				r.Parameters += int64(t.Rows) * int64(t.K)
			}
			shape := []int64{int64(t.K)}
			if t.Rows > 1 {
				shape = []int64{int64(t.Rows), int64(t.K)}
			}
			r.Tensors = append(r.Tensors, tensorEntry{Name: t.Name, DType: dt, Shape: shape, Offset: t.Offset, Size: t.Size})
			r.DTypes[dt]++
			r.TensorBytes += t.Size
		}
	}
	return r, nil
}

func rawH1B(path, tensor string, w goio.Writer) error {
	f, err := h1b.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var b []byte
	if base, ok := strings.CutSuffix(tensor, ".scales"); ok {
		if t, found := f.Tensor(base); found && t.Kind == h1b.Packed {
			b, err = f.ScaleBytes(t)
		}
	}
	if b == nil && err == nil {
		t, found := f.Tensor(tensor)
		if !found {
			return fmt.Errorf("%s: no tensor %q (names: embedding, final_norm, layers.N.{input_norm,post_attn_norm,attn_sub_norm,ffn_sub_norm,q,k,v,o,gate,up,down}[.scales])", path, tensor)
		}
		b, err = f.Bytes(t)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// The .htok sidecar: a tokenizer, no tensors.
func init() {
	registerInspector(inspector{name: "htok", match: isHtok, inspect: inspectHtok,
		raw: func(path, tensor string, w goio.Writer) error {
			return fmt.Errorf("%s: an .htok holds a tokenizer, no tensors", path)
		}})
}

func isHtok(path string) bool {
	if hasExt(path, ".htok") {
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var m [4]byte
	n, _ := f.ReadAt(m[:], 0)
	return n == 4 && string(m[:]) == h1b.HtokMagic
}

func inspectHtok(path string) (*report, error) {
	tok, err := h1b.ReadTokenizer(path)
	if err != nil {
		return nil, err
	}
	return &report{Path: path, Format: "htok", DTypes: map[string]int{}, Tensors: []tensorEntry{},
		Tokenizer: &tokenizerInfo{Files: []string{path}, Model: "BPE", VocabSize: len(tok.Tokens)},
		Metadata:  map[string]any{"vocab_size": len(tok.Tokens), "merges": len(tok.Merges), "bos_id": tok.BOS, "eos_id": tok.EOS}}, nil
}
