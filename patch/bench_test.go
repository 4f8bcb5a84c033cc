package patch

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/edgectl/edgectl/format/safetensors"
)

// benchShard writes (once per process) a ≥1 GiB single-shard Llama-shaped
// checkpoint whose norms are missing: 8 layers of hidden 4096 / ffn 11008
// BF16 projections. The generator streams from a 1 MiB buffer, so the
// benchmark's own memory stays small.
func benchShard(b *testing.B) string {
	dir := filepath.Join(os.TempDir(), "edgectl-bench", "layernorm-1g")
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err == nil {
		return dir
	}
	os.MkdirAll(dir, 0o755)
	const h, f, layers = 4096, 11008, 8
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(fmt.Sprintf(`{"model_type":"llama","hidden_size":%d,"intermediate_size":%d,"num_hidden_layers":%d,"num_attention_heads":32,"num_key_value_heads":8,"vocab_size":32000}`, h, f, layers)), 0o644)
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	gen := func(n int64) func(io.Writer) error {
		return func(w io.Writer) error {
			for n > 0 {
				k := min(n, int64(len(chunk)))
				if _, err := w.Write(chunk[:k]); err != nil {
					return err
				}
				n -= k
			}
			return nil
		}
	}
	var srcs []safetensors.Source
	add := func(name string, shape ...int64) {
		s := safetensors.Source{Name: name, DType: safetensors.BF16, Shape: shape}
		s.WriteTo = gen(s.Size())
		srcs = append(srcs, s)
	}
	add("model.embed_tokens.weight", 32000, h)
	for l := range layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		add(p+"self_attn.q_proj.weight", h, h)
		add(p+"self_attn.k_proj.weight", 1024, h)
		add(p+"self_attn.v_proj.weight", 1024, h)
		add(p+"self_attn.o_proj.weight", h, h)
		add(p+"mlp.gate_proj.weight", f, h)
		add(p+"mlp.up_proj.weight", f, h)
		add(p+"mlp.down_proj.weight", h, f)
	}
	out, err := os.Create(filepath.Join(dir, "model.safetensors.tmp"))
	if err != nil {
		b.Fatal(err)
	}
	if err := safetensors.Write(out, nil, srcs); err != nil {
		b.Fatal(err)
	}
	out.Close()
	os.Rename(filepath.Join(dir, "model.safetensors.tmp"), filepath.Join(dir, "model.safetensors"))
	return dir
}

func shardSize(b *testing.B, dir string) int64 {
	st, err := os.Stat(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		b.Fatal(err)
	}
	if st.Size() < 1<<30 {
		b.Fatalf("bench shard is %d bytes, want ≥ 1 GiB", st.Size())
	}
	return st.Size()
}

func reportRSS(b *testing.B) {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MiB")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapSys)/(1<<20), "heap-sys-MiB")
}

// BenchmarkPatchLayerNorm1GiB: inject the 17 missing norms into a 1.6 GiB
// shard (-o, a full rewrite). Compare with BenchmarkPlainCopy1GiB.
func BenchmarkPatchLayerNorm1GiB(b *testing.B) {
	dir := benchShard(b)
	b.SetBytes(shardSize(b, dir))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		dst := filepath.Join(b.TempDir(), fmt.Sprint("out", i))
		plan, err := PlanLayerNorm(dir, LayerNormOptions{})
		if err != nil {
			b.Fatal(err)
		}
		out, _ := NewOutput(dir, dst, false)
		if err := plan.Apply(out, nil); err != nil {
			b.Fatal(err)
		}
		if err := out.Commit(); err != nil {
			b.Fatal(err)
		}
		plan.Close()
		os.RemoveAll(dst)
	}
	reportRSS(b)
}

// BenchmarkPlainCopy1GiB: the limit — copying the same file with io.Copy
// (copy_file_range) and fsync, as the patch does.
func BenchmarkPlainCopy1GiB(b *testing.B) {
	dir := benchShard(b)
	b.SetBytes(shardSize(b, dir))
	b.ReportAllocs()
	for b.Loop() {
		in, _ := os.Open(filepath.Join(dir, "model.safetensors"))
		dst := filepath.Join(b.TempDir(), "copy")
		out, _ := os.Create(dst)
		if _, err := io.Copy(out, in); err != nil {
			b.Fatal(err)
		}
		out.Sync()
		out.Close()
		in.Close()
		os.Remove(dst)
	}
	reportRSS(b)
}
