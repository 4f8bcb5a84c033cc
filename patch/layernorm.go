package patch

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/hflayout"
	"github.com/edgectl/edgectl/format/safetensors"
)

// LayerNormOptions control norm injection.
type LayerNormOptions struct {
	DType safetensors.DType // storage dtype of new tensors; default F16
	Extra []string          // --name arguments: NAME or NAME=DIMxDIM
	// Fill overrides the identity value (1.0; 0.0 for Gemma).
	Fill *float32
}

// NormAdd is one tensor the plan adds.
type NormAdd struct {
	Name  string  `json:"name"`
	Shape []int64 `json:"shape"`
	DType string  `json:"dtype"`
	Fill  float32 `json:"fill"`
	Shard string  `json:"shard"`
}

// LayerNormPlan is what PlanLayerNorm found; Apply writes it.
type LayerNormPlan struct {
	Dir  string
	Adds []NormAdd
	// Unindexed lists tensors the shards hold but the index's weight_map
	// lacks (a checkpoint an older, interrupted patch left behind); Apply
	// adds them to the index.
	Unindexed []string
	ck        *safetensors.Checkpoint
}

// Changes reports whether Apply has anything to write.
func (p *LayerNormPlan) Changes() bool { return len(p.Adds) > 0 || len(p.Unindexed) > 0 }

// Close releases the checkpoint's files.
func (p *LayerNormPlan) Close() error { return p.ck.Close() }

// PlanLayerNorm finds the norm tensors missing from the checkpoint in dir
// and the shard each belongs in (the shard holding the rest of its layer).
func PlanLayerNorm(dir string, opts LayerNormOptions) (*LayerNormPlan, error) {
	if err := CheckPending(dir); err != nil {
		return nil, err
	}
	cfg, err := hfconfig.Load(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	ck, err := safetensors.OpenCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	p := &LayerNormPlan{Dir: dir, ck: ck}
	if err := p.plan(cfg, opts); err != nil {
		ck.Close()
		return nil, err
	}
	return p, nil
}

func (p *LayerNormPlan) plan(cfg *hfconfig.Config, opts LayerNormOptions) error {
	dt := opts.DType
	if dt == "" {
		dt = safetensors.F16
	}
	if dt != safetensors.F16 && dt != safetensors.BF16 && dt != safetensors.F32 {
		return fmt.Errorf("--dtype %s: norms can be F16, BF16 or F32", dt)
	}
	have := map[string]bool{}
	var names []string
	for _, t := range p.ck.Tensors() {
		have[t.Name] = true
		names = append(names, t.Name)
	}
	lay, err := hflayout.Detect(names)
	if err != nil {
		return fmt.Errorf("%s: %w", p.Dir, err)
	}
	expected, err := ExpectedNorms(cfg, lay.Prefix)
	if err != nil {
		return err
	}
	missing := Missing(expected, have)
	for _, e := range opts.Extra {
		n, err := ParseExtraNorm(e, cfg.Text().HiddenSize, lay)
		if err != nil {
			return err
		}
		if have[n.Name] {
			continue // already there: idempotent
		}
		missing = append(missing, n)
	}
	if p.ck.Index != nil {
		for _, n := range names {
			if _, ok := p.ck.Index.WeightMap[n]; !ok {
				p.Unindexed = append(p.Unindexed, n)
			}
		}
		sort.Strings(p.Unindexed)
	}
	sortNorms(missing)
	layerShard := p.layerShards(lay)
	for _, n := range missing {
		fill := n.Fill
		if opts.Fill != nil {
			fill = *opts.Fill
		}
		shard, ok := layerShard[n.Layer]
		if !ok {
			shard = layerShard[-1]
		}
		p.Adds = append(p.Adds, NormAdd{Name: n.Name, Shape: n.Shape, DType: string(dt), Fill: fill, Shard: shard})
	}
	return nil
}

// layerShards maps each layer to the shard holding most of its tensors, and
// -1 to the shard for model-level tensors (the one with lm_head, else the
// last layer's, else the last shard).
func (p *LayerNormPlan) layerShards(lay hflayout.Layout) map[int]string {
	count := map[int]map[string]int{}
	var lmHead string
	for _, f := range p.ck.Files {
		base := filepath.Base(f.Path)
		for _, t := range f.Tensors {
			if t.Name == lay.Head {
				lmHead = base
			}
			l, _, _ := lay.LayerOf(t.Name)
			if count[l] == nil {
				count[l] = map[string]int{}
			}
			count[l][base]++
		}
	}
	out := map[int]string{}
	maxLayer := -1
	for l, shards := range count {
		best, bestN := "", -1
		for s, n := range shards {
			if n > bestN || (n == bestN && s < best) {
				best, bestN = s, n
			}
		}
		out[l] = best
		maxLayer = max(maxLayer, l)
	}
	switch {
	case lmHead != "":
		out[-1] = lmHead
	case maxLayer >= 0:
		out[-1] = out[maxLayer]
	default:
		out[-1] = filepath.Base(p.ck.Files[len(p.ck.Files)-1].Path)
	}
	return out
}

// Apply writes every shard that gains tensors, and the updated index.
func (p *LayerNormPlan) Apply(out *Output, progress io.Writer) error {
	byShard := map[string][]NormAdd{}
	var shards []string
	for _, a := range p.Adds {
		if byShard[a.Shard] == nil {
			shards = append(shards, a.Shard)
		}
		byShard[a.Shard] = append(byShard[a.Shard], a)
	}
	sort.Strings(shards)
	var added int64
	for _, shard := range shards {
		var f *safetensors.File
		for _, cf := range p.ck.Files {
			if filepath.Base(cf.Path) == shard {
				f = cf
			}
		}
		n, err := rewriteShard(out, f, shard, byShard[shard], progress)
		if err != nil {
			return err
		}
		added += n
	}
	if p.ck.Index != nil && p.Changes() {
		ix := *p.ck.Index
		ix.WeightMap = make(map[string]string, len(p.ck.Index.WeightMap)+len(p.Adds))
		for k, v := range p.ck.Index.WeightMap {
			ix.WeightMap[k] = v
		}
		ix.Metadata = map[string]any{}
		for k, v := range p.ck.Index.Metadata {
			ix.Metadata[k] = v
		}
		for _, n := range p.Unindexed {
			f, _, _ := p.ck.Lookup(n)
			ix.WeightMap[n] = filepath.Base(f.Path)
		}
		for _, a := range p.Adds {
			ix.WeightMap[a.Name] = a.Shard
		}
		ix.Metadata["total_size"] = p.ck.TensorBytes() + added
		b, err := ix.Marshal()
		if err != nil {
			return err
		}
		if err := out.WriteBytes(safetensors.IndexName, b); err != nil {
			return err
		}
	}
	return nil
}

// rewriteShard writes shard with adds appended after its existing data.
// Existing tensors keep their data_offsets and bytes; the data section is
// moved with one kernel-side copy, so memory stays flat.
func rewriteShard(out *Output, f *safetensors.File, shard string, adds []NormAdd, progress io.Writer) (int64, error) {
	sources := make([]safetensors.Source, 0, len(f.Tensors)+len(adds))
	for _, t := range f.Tensors {
		sources = append(sources, safetensors.Source{Name: t.Name, DType: t.DType, Shape: t.Shape})
	}
	var added int64
	for _, a := range adds {
		src := safetensors.Source{Name: a.Name, DType: safetensors.DType(a.DType), Shape: a.Shape}
		src.WriteTo = filled(src, a.Fill)
		added += src.Size()
		sources = append(sources, src)
	}
	hdr, err := safetensors.EncodeHeader(f.Metadata, sources)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", f.Path, err)
	}
	err = out.Write(shard, func(w *os.File) error {
		if _, err := w.Write(hdr); err != nil {
			return err
		}
		var dst io.Writer = w
		if progress != nil {
			dst = io.MultiWriter(w, progress)
		}
		src := f.OSFile()
		if _, err := src.Seek(f.DataStart(), io.SeekStart); err != nil {
			return err
		}
		if progress == nil {
			// Plain *os.File destination: io.Copy uses copy_file_range.
			if _, err := io.Copy(w, io.LimitReader(src, f.DataSize())); err != nil {
				return fmt.Errorf("copy data of %s: %w", f.Path, err)
			}
		} else if _, err := io.Copy(dst, io.LimitReader(src, f.DataSize())); err != nil {
			return fmt.Errorf("copy data of %s: %w", f.Path, err)
		}
		for _, s := range sources[len(f.Tensors):] {
			if err := s.WriteTo(w); err != nil {
				return err
			}
		}
		return nil
	})
	return added, err
}

// filled returns a writer of a tensor whose every element is v.
func filled(s safetensors.Source, v float32) func(io.Writer) error {
	return func(w io.Writer) error {
		n := s.Size() / (s.DType.Bits() / 8)
		vals := make([]float32, min(n, 4096))
		for i := range vals {
			vals[i] = v
		}
		buf := make([]byte, s.DType.ByteSize(int64(len(vals))))
		if err := safetensors.EncodeFloat32(buf, s.DType, vals); err != nil {
			return err
		}
		for n > 0 {
			k := min(n, int64(len(vals)))
			if _, err := w.Write(buf[:s.DType.ByteSize(k)]); err != nil {
				return err
			}
			n -= k
		}
		return nil
	}
}

// ShardDataSize is the data-section size of a shard (for progress bars).
func (p *LayerNormPlan) ShardDataSize(shard string) int64 {
	for _, f := range p.ck.Files {
		if filepath.Base(f.Path) == shard {
			return f.DataSize()
		}
	}
	return 0
}
