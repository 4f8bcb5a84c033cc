package pulsar2

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/edgectl/edgectl/format/axllm"

	"github.com/edgectl/edgectl/format/safetensors"
)

// benchEmbedding writes a [rows, cols] embedding of dtype d (zeros: the
// conversion cost does not depend on the values) and returns its file.
func benchEmbedding(b *testing.B, d safetensors.DType, rows, cols int64) (*safetensors.File, safetensors.Tensor) {
	b.Helper()
	dir := b.TempDir()
	p := filepath.Join(dir, "model.safetensors")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	size := d.ByteSize(rows * cols)
	zero := func(w io.Writer) error {
		buf := make([]byte, 1<<20)
		for n := size; n > 0; n -= int64(len(buf)) {
			if _, err := w.Write(buf[:min(int64(len(buf)), n)]); err != nil {
				return err
			}
		}
		return nil
	}
	if err := safetensors.Write(f, nil, []safetensors.Source{{Name: "model.embed_tokens.weight", DType: d, Shape: []int64{rows, cols}, WriteTo: zero}}); err != nil {
		b.Fatal(err)
	}
	f.Close()
	sf, err := safetensors.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sf.Close() })
	t, _ := sf.Tensor("model.embed_tokens.weight")
	return sf, t
}

func benchWrite(b *testing.B, d safetensors.DType) {
	// 65536 × 1024: a 256 MiB F32 / 128 MiB BF16 table (Qwen3-0.6B's is
	// 151936 × 1024). Peers: a plain io.Copy of the same input bytes.
	f, t := benchEmbedding(b, d, 65536, 1024)
	dst := filepath.Join(b.TempDir(), axllm.EmbedFileName)
	b.SetBytes(t.Size())
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := WriteEmbedding(f, t, dst, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(b.N), "heap-B/op")
}

func BenchmarkWriteEmbeddingF32(b *testing.B)  { benchWrite(b, safetensors.F32) }
func BenchmarkWriteEmbeddingF16(b *testing.B)  { benchWrite(b, safetensors.F16) }
func BenchmarkWriteEmbeddingBF16(b *testing.B) { benchWrite(b, safetensors.BF16) }

// BenchmarkCopyInputBaseline is the limit: reading the F32 tensor and
// writing as many bytes to a new file, with no conversion.
func BenchmarkCopyInputBaseline(b *testing.B) {
	f, t := benchEmbedding(b, safetensors.F32, 65536, 1024)
	dst := filepath.Join(b.TempDir(), "copy.bin")
	b.SetBytes(t.Size())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := os.Create(dst)
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, embedChunkBytes)
		if _, err := io.CopyBuffer(struct{ io.Writer }{out}, io.NewSectionReader(f.OSFile(), f.DataStart()+t.Begin, t.Size()), buf); err != nil {
			b.Fatal(err)
		}
		out.Sync()
		out.Close()
	}
}
