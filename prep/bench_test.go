package prep

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/edgectl/edgectl/format/safetensors"
)

// BenchmarkPrepCPU runs `prep --target cpu` on a generated checkpoint of
// EDGECTL_BENCH_MB MiB (default 512) with a cold cache, then again warm,
// and reports each against a plain userspace copy of the same file: the
// cold run reads the source twice (hash, import) and writes twice (cache,
// OUT/) plus one hash of OUT/, so ~3–4 copies' worth is its floor.
//
//	EDGECTL_BENCH_MB=1024 go test -run x -bench PrepCPU -benchtime 1x ./prep/
func BenchmarkPrepCPU(b *testing.B) {
	mb := 512
	if s := os.Getenv("EDGECTL_BENCH_MB"); s != "" {
		mb, _ = strconv.Atoi(s)
	}
	tmp := b.TempDir()
	src := filepath.Join(tmp, "big")
	os.MkdirAll(src, 0o755)
	cfg, _ := json.Marshal(map[string]any{"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama", "hidden_size": 1024, "vocab_size": mb * 512})
	os.WriteFile(filepath.Join(src, "config.json"), cfg, 0o644)
	rows := int64(mb) * 512 // rows of 1024 bf16 = 2 KiB
	f, _ := os.Create(filepath.Join(src, "model.safetensors"))
	r := rand.New(rand.NewPCG(3, 4))
	err := safetensors.Write(f, nil, []safetensors.Source{{Name: "model.embed_tokens.weight", DType: safetensors.BF16, Shape: []int64{rows, 1024},
		WriteTo: func(w io.Writer) error {
			buf := make([]byte, 1<<20)
			for range mb {
				for i := range buf {
					buf[i] = byte(r.Uint32())
				}
				if _, err := w.Write(buf); err != nil {
					return err
				}
			}
			return nil
		}}})
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	size := int64(mb) << 20
	rate := func(start time.Time) float64 { return float64(size) / 1e6 / time.Since(start).Seconds() }
	for i := range b.N {
		start := time.Now()
		in, _ := os.Open(filepath.Join(src, "model.safetensors"))
		dst, _ := os.Create(filepath.Join(tmp, "copy"))
		io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{in}, make([]byte, 1<<20))
		dst.Sync()
		in.Close()
		dst.Close()
		os.Remove(filepath.Join(tmp, "copy"))
		cp := rate(start)

		o := Options{Source: src, Target: TargetCPU, Out: filepath.Join(tmp, "out"+strconv.Itoa(i)), CacheDir: filepath.Join(tmp, "cache"+strconv.Itoa(i))}
		start = time.Now()
		if _, err := Run(context.Background(), nil, o); err != nil {
			b.Fatal(err)
		}
		cold := rate(start)
		start = time.Now()
		if _, err := Run(context.Background(), nil, o); err != nil {
			b.Fatal(err)
		}
		warm := rate(start)
		os.RemoveAll(o.Out)
		os.RemoveAll(o.CacheDir)
		b.ReportMetric(cold, "cold-MB/s")
		b.ReportMetric(warm, "warm-MB/s")
		b.ReportMetric(cp, "copy-MB/s")
		b.ReportMetric(cold/cp, "cold/copy")
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MiB")
}
