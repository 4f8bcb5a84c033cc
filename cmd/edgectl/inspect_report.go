package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/edgectl/edgectl/engine/cpu"
)

// report is what `edgectl inspect` prints, for every format. Fields a format
// does not have stay empty and are omitted from --json.
type report struct {
	Path         string         `json:"path"`
	Format       string         `json:"format"` // checkpoint, safetensors, gguf, h1b
	Architecture string         `json:"architecture,omitempty"`
	Dims         *dims          `json:"dims,omitempty"`
	Parameters   int64          `json:"parameters"`
	TensorBytes  int64          `json:"tensor_bytes"`
	DTypes       map[string]int `json:"dtypes"` // dtype → tensor count
	Metadata     map[string]any `json:"metadata,omitempty"`
	Files        []string       `json:"files,omitempty"`
	Tokenizer    *tokenizerInfo `json:"tokenizer,omitempty"`
	// Embedding is how the CPU engine embeds with it (edgectl embed).
	Embedding *cpu.EmbeddingSpec `json:"embedding,omitempty"`
	Tensors   []tensorEntry      `json:"tensors"`
}

type dims struct {
	HiddenSize       int `json:"hidden_size,omitempty"`
	IntermediateSize int `json:"intermediate_size,omitempty"`
	Layers           int `json:"num_layers,omitempty"`
	Heads            int `json:"num_heads,omitempty"`
	KVHeads          int `json:"num_kv_heads,omitempty"`
	HeadDim          int `json:"head_dim,omitempty"`
	VocabSize        int `json:"vocab_size,omitempty"`
	ContextLength    int `json:"context_length,omitempty"`
}

type tokenizerInfo struct {
	Files     []string `json:"files"`
	Model     string   `json:"model,omitempty"` // BPE, Unigram, …
	VocabSize int      `json:"vocab_size,omitempty"`
}

// tensorEntry is one tensor's header. Offset is absolute in File.
type tensorEntry struct {
	Name   string  `json:"name"`
	DType  string  `json:"dtype"`
	Shape  []int64 `json:"shape"`
	Offset int64   `json:"offset"`
	Size   int64   `json:"size"`
	File   string  `json:"file,omitempty"`
}

// inspector handles one file format. Formats register themselves from their
// own files (inspect_gguf.go, inspect_h1b.go) so inspect.go stays format-neutral.
type inspector struct {
	name string
	// match reports whether path is this format (by extension or magic).
	match func(path string) bool
	// inspect describes the file.
	inspect func(path string) (*report, error)
	// raw writes one tensor's stored bytes, exactly as in the file.
	raw func(path, tensor string, w io.Writer) error
}

var inspectors []inspector

func registerInspector(i inspector) { inspectors = append(inspectors, i) }

// sniff reports whether path ends in ext, or (for renamed files) starts
// with magic.
func sniff(path, ext, magic string) bool {
	if hasExt(path, ext) {
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, len(magic))
	n, _ := f.ReadAt(b, 0)
	return n == len(magic) && string(b) == magic
}

func hasExt(path string, exts ...string) bool {
	e := strings.ToLower(filepath.Ext(path))
	for _, x := range exts {
		if e == x {
			return true
		}
	}
	return false
}
