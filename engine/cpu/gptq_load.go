package cpu

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/edgectl/edgectl/format/gptq"
	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/safetensors"
)

// gptqLoader reads a GPTQ/AWQ checkpoint's projections (stem.qweight,
// .qzeros, .scales, .g_idx, .bias beside where stem.weight would be) and
// repacks each into a gptqLinear, releasing the file pages as it goes: no
// float copy of a matrix is ever made.
type gptqLoader struct {
	cfg     *gptq.Config
	layouts []*gptqLayout // every distinct input layout so far, shared
}

// newGPTQLoader returns the loader for a checkpoint whose config (or
// quantize_config.json / quant_config.json) says GPTQ or AWQ; nil for a
// float one.
func newGPTQLoader(dir string, cfg *hfconfig.Config) (*gptqLoader, error) {
	qc := cfg.QuantizationConfig
	if qc == nil {
		qc = cfg.Text().QuantizationConfig
	}
	c, err := gptq.Load(dir, qc, cfg.Path)
	if c == nil || err != nil {
		return nil, err
	}
	if c.GroupSize > 0 && c.GroupSize < 32 {
		// A group takes at least one 32-slot block: smaller groups would
		// multiply the resident size (and the scales, 8 bytes a group).
		return nil, fmt.Errorf("%s: group_size %d: the CPU engine runs groups of at least 32 inputs (re-quantize with group_size 32 or more, e.g. edgectl quant pack --format gptq-int4 from the float checkpoint)", c.Path, c.GroupSize)
	}
	return &gptqLoader{cfg: c}, nil
}

// matrix loads the projection whose float weight would be name (…_proj.weight)
// as rows × cols; nil, nil when the checkpoint holds no name's qweight (a
// module the quantizer left in float). withBias attaches stem.bias, when
// the checkpoint has it, to the product.
func (g *gptqLoader) matrix(l stLoader, name string, rows, cols int, withBias bool) (linear, error) {
	stem := strings.TrimSuffix(name, ".weight")
	f, _, ok := l.ck.Lookup(stem + ".qweight")
	if !ok {
		return nil, nil
	}
	lay, err := g.cfg.Layout(rows, cols)
	if err != nil {
		return nil, fmt.Errorf("%s: tensor %q: %v (config.json says %d × %d; %s)", f.Path, stem+".qweight", err, rows, cols, g.cfg)
	}
	get := func(suffix string, dtypes []safetensors.DType, shape []int64, optional bool) ([]byte, safetensors.Tensor, error) {
		name := stem + suffix
		tf, t, ok := l.ck.Lookup(name)
		if !ok {
			if optional {
				return nil, t, nil
			}
			return nil, t, fmt.Errorf("%s: tensor %q is missing: a %s checkpoint stores qweight, qzeros and scales for every quantized projection (%s holds %q; re-download or re-export the checkpoint)",
				l.dir, name, g.cfg.Method, f.Path, stem+".qweight")
		}
		if !slices.Contains(dtypes, t.DType) || !slices.Equal(t.Shape, shape) {
			return nil, t, fmt.Errorf("%s: tensor %q is %s %v, expected %s %v: the %s layout of a %d × %d projection (sizes from config.json; re-export the checkpoint if they are right)",
				tf.Path, name, t.DType, t.Shape, dtypes[0], shape, g.cfg, rows, cols)
		}
		b, err := tf.Bytes(t)
		if err != nil {
			return nil, t, fmt.Errorf("%s: tensor %q: %w", tf.Path, name, err)
		}
		return b, t, nil
	}
	ints := []safetensors.DType{safetensors.I32, safetensors.U32}
	floats := []safetensors.DType{safetensors.F16, safetensors.BF16, safetensors.F32}
	qw, qwT, err := get(".qweight", ints, lay.QWeightShape(), false)
	if err != nil {
		return nil, err
	}
	qz, qzT, err := get(".qzeros", ints, lay.QZerosShape(), false)
	if err != nil {
		return nil, err
	}
	sb, sT, err := get(".scales", floats, lay.ScalesShape(), false)
	if err != nil {
		return nil, err
	}
	scales := make([]float32, lay.Groups()*rows)
	if err := safetensors.DecodeFloat32(scales, sT.DType, sb); err != nil {
		return nil, fmt.Errorf("%s: tensor %q: %w", l.dir, stem+".scales", err)
	}
	var gb []byte
	var gT safetensors.Tensor
	if !lay.AWQ {
		if gb, gT, err = get(".g_idx", ints, lay.GIdxShape(), true); err != nil {
			return nil, err
		}
	}
	gPath := l.dir
	if tf, _, ok := l.ck.Lookup(stem + ".g_idx"); ok {
		gPath = tf.Path
	}
	gIdx, err := lay.GroupIndex(gb)
	if err != nil {
		return nil, fmt.Errorf("%s: tensor %q: %v (restore the file the quantizer wrote)", gPath, stem+".g_idx", err)
	}
	var bias []float32
	if _, _, ok := l.ck.Lookup(stem + ".bias"); ok && withBias {
		if bias, err = l.vec(stem+".bias", rows); err != nil {
			return nil, err
		}
	}
	out, err := g.repack(lay, qw, qz, scales, gIdx)
	if err != nil {
		return nil, fmt.Errorf("%s: tensor %q: %v", gPath, stem+".g_idx", err)
	}
	out.bias = bias
	for _, t := range []safetensors.Tensor{qwT, qzT, sT, gT} {
		if t.Name != "" {
			if tf, _, ok := l.ck.Lookup(t.Name); ok {
				tf.Release(t)
			}
		}
	}
	return out, nil
}

// layout returns the shared layout for gIdx, making it if it is new.
func (g *gptqLoader) layout(gIdx []int32, groups, groupSize int) (*gptqLayout, error) {
	k := len(gIdx)
	blocks := (groupSize + 31) / 32
	count := make([]int, groups)
	for _, gi := range gIdx {
		if count[gi]++; count[gi] > groupSize {
			return nil, fmt.Errorf("g_idx puts more than group_size = %d inputs in group %d (restore the file the quantizer wrote)", groupSize, gi)
		}
	}
	lay := &gptqLayout{k: k, groups: groups, blocks: blocks, src: make([]int32, groups*blocks*32)}
	for i := range lay.src {
		lay.src[i] = -1
	}
	fill := make([]int, groups)
	identity := lay.slots() == k
	for i, gi := range gIdx {
		s := int(gi)*blocks*32 + fill[gi]
		fill[gi]++
		lay.src[s] = int32(i)
		identity = identity && s == i
	}
	if identity {
		lay.src = nil
	}
	for _, o := range g.layouts {
		if o.k == k && o.groups == groups && o.blocks == blocks && slices.Equal(o.src, lay.src) {
			return o, nil
		}
	}
	g.layouts = append(g.layouts, lay)
	return lay, nil
}

// repack writes the matrix in the engine's layout (gptq_linear.go), rows
// in parallel, 64 at a time: their codes, in slot order, and each group's
// s and m = −s·z.
func (g *gptqLoader) repack(lay gptq.Layout, qweight, qzeros []byte, scales []float32, gIdx []int32) (*gptqLinear, error) {
	G := lay.Groups()
	sl, err := g.layout(gIdx, G, lay.GroupSize)
	if err != nil {
		return nil, err
	}
	N, K := lay.N, lay.K
	rb := sl.slots() / 2
	l := &gptqLinear{r: N, c: K, lay: sl, w: make([]byte, N*rb), sm: make([]float32, N*2*G), rowBytes: rb, name: "GPTQ-int4"}
	if lay.AWQ {
		l.name = "AWQ-int4"
	}
	const tile = 64
	tiles := (N + tile - 1) / tile
	var wg sync.WaitGroup
	var next sync.Mutex
	nextTile := 0
	for range min(tiles, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes := make([]uint8, tile*K)
			zeros := make([]uint8, tile*G)
			slot := make([]uint8, sl.slots())
			for {
				next.Lock()
				t := nextTile
				nextTile++
				next.Unlock()
				if t >= tiles {
					return
				}
				r0, r1 := t*tile, min(N, (t+1)*tile)
				lay.Codes(codes, qweight, r0, r1)
				lay.Zeros(zeros, qzeros, r0, r1)
				for r := r0; r < r1; r++ {
					c := codes[(r-r0)*K : (r-r0+1)*K]
					sl.packRow(l.w[r*rb:(r+1)*rb], c, slot)
					sm := l.sm[r*2*G : (r+1)*2*G]
					for gi := range G {
						s := scales[gi*N+r]
						sm[2*gi], sm[2*gi+1] = s, -s*float32(zeros[(r-r0)*G+gi])
					}
				}
			}
		}()
	}
	wg.Wait()
	return l, nil
}

// packRow writes one row's codes (input order) into slot order, two
// slots a byte (slot j low nibble, j+16 high, per 32-slot block); slot
// is scratch of slots() bytes for a gathered layout.
func (l *gptqLayout) packRow(dst []byte, codes, slot []uint8) {
	if l.src != nil {
		for s, k := range l.src {
			if k >= 0 {
				slot[s] = codes[k]
			} else {
				slot[s] = 0
			}
		}
		codes = slot
	}
	for b := range l.slots() / 32 {
		c, d := codes[32*b:32*b+32], dst[16*b:16*b+16]
		// Eight codes (< 16) a word: byte j of c[j:] | c[j+16:]<<4.
		le := binary.LittleEndian
		le.PutUint64(d, le.Uint64(c)|le.Uint64(c[16:])<<4)
		le.PutUint64(d[8:], le.Uint64(c[8:])|le.Uint64(c[24:])<<4)
	}
}
