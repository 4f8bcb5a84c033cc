package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/edgectl/edgectl/format/internal/modelfile"
)

// IndexName is the file that maps tensors to shards in a sharded checkpoint.
const IndexName = "model.safetensors.index.json"

// Index is model.safetensors.index.json. Metadata keys other than
// total_size are kept as they were.
type Index struct {
	Metadata  map[string]any    `json:"metadata"`
	WeightMap map[string]string `json:"weight_map"`
}

// TotalSize is metadata.total_size, or -1 when absent.
func (ix *Index) TotalSize() int64 {
	switch v := ix.Metadata["total_size"].(type) {
	case float64:
		return int64(v)
	case json.Number:
		n, _ := v.Int64()
		return n
	}
	return -1
}

// MaxIndexSize caps model.safetensors.index.json: the largest real ones
// (tens of thousands of tensors) are around 10 MB.
const MaxIndexSize = 64 << 20

// ReadIndex parses an index file. It must be a regular file (or a symlink
// to one) of at most MaxIndexSize bytes.
func ReadIndex(path string) (*Index, error) {
	b, err := modelfile.ReadFile(path, MaxIndexSize, "a shard index")
	if err != nil {
		return nil, err
	}
	return parseIndex(b, path)
}

func parseIndex(b []byte, path string) (*Index, error) {
	var ix Index
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&ix); err != nil {
		return nil, fmt.Errorf("%s: not a valid shard index: %v", path, err)
	}
	if ix.WeightMap == nil {
		return nil, fmt.Errorf("%s: no weight_map", path)
	}
	tensors := make([]string, 0, len(ix.WeightMap))
	for tensor := range ix.WeightMap {
		tensors = append(tensors, tensor)
	}
	sort.Strings(tensors) // the first bad entry, the same every run
	for _, tensor := range tensors {
		shard := ix.WeightMap[tensor]
		if _, err := modelfile.Join(filepath.Dir(path), shard); err != nil {
			return nil, fmt.Errorf("%s: weight_map[%q] names shard %q, which is not a file name inside the model directory: an index may only name files beside it (re-download the index or fix the entry)",
				path, tensor, shard)
		}
	}
	return &ix, nil
}

// Marshal renders the index as huggingface_hub writes it (2-space indent,
// sorted keys), ending in a newline.
func (ix *Index) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(ix, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Checkpoint is the set of safetensors files of a model directory: one
// model.safetensors, the shards an index names, or (without an index) every
// *.safetensors file in the directory.
type Checkpoint struct {
	Dir    string
	Files  []*File // in shard-name order
	Index  *Index  // nil when the checkpoint has no index
	byName map[string]*File
}

// ErrNoWeights is returned when a directory holds no safetensors files.
var ErrNoWeights = errors.New("no .safetensors files")

// OpenCheckpoint opens every shard of the checkpoint in dir and checks that
// the index (if any) agrees with the shard headers.
func OpenCheckpoint(dir string) (*Checkpoint, error) {
	c := &Checkpoint{Dir: dir, byName: map[string]*File{}}
	var names []string
	if ix, err := ReadIndex(filepath.Join(dir, IndexName)); err == nil {
		c.Index = ix
		set := map[string]bool{}
		// parseIndex checked that every shard is a local name; symlinks
		// are followed at open time, only to regular files (mmapfile
		// refuses FIFOs and devices without blocking on them).
		for _, shard := range ix.WeightMap {
			if !set[shard] {
				set[shard] = true
				names = append(names, shard)
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	} else {
		matches, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
		for _, m := range matches {
			names = append(names, filepath.Base(m))
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: %w (expected model.safetensors or %s)", dir, ErrNoWeights, IndexName)
	}
	sort.Strings(names)
	shardOf := map[*File]string{}
	for _, n := range names {
		f, err := Open(filepath.Join(dir, filepath.FromSlash(n)))
		if err != nil {
			c.Close()
			return nil, err
		}
		shardOf[f] = n
		c.Files = append(c.Files, f)
		for _, t := range f.Tensors {
			if prev, dup := c.byName[t.Name]; dup {
				c.Close()
				return nil, fmt.Errorf("tensor %q is in both %s and %s", t.Name, prev.Path, f.Path)
			}
			c.byName[t.Name] = f
		}
	}
	if c.Index != nil {
		for name, shard := range c.Index.WeightMap {
			f, ok := c.byName[name]
			if !ok {
				c.Close()
				return nil, fmt.Errorf("%s: weight_map names tensor %q in %s, but no shard holds it", filepath.Join(dir, IndexName), name, shard)
			}
			if shardOf[f] != shard {
				c.Close()
				return nil, fmt.Errorf("%s: weight_map puts %q in %s, but it is in %s", filepath.Join(dir, IndexName), name, shard, shardOf[f])
			}
		}
	}
	return c, nil
}

// Lookup finds the file and header entry of a tensor.
func (c *Checkpoint) Lookup(name string) (*File, Tensor, bool) {
	f, ok := c.byName[name]
	if !ok {
		return nil, Tensor{}, false
	}
	t, _ := f.Tensor(name)
	return f, t, true
}

// Tensors lists all tensors, shard by shard, each in data order.
func (c *Checkpoint) Tensors() []Tensor {
	var out []Tensor
	for _, f := range c.Files {
		out = append(out, f.Tensors...)
	}
	return out
}

// TensorBytes is the sum of tensor storage sizes (the index's total_size).
func (c *Checkpoint) TensorBytes() int64 {
	var n int64
	for _, f := range c.Files {
		n += f.DataSize()
	}
	return n
}

// Close closes every shard.
func (c *Checkpoint) Close() error {
	var first error
	for _, f := range c.Files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
