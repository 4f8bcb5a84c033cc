package cpu

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/h1b"
)

// benchVersion keys the cached benchmark models; bump it when the
// generator or a writer changes.
const benchVersion = "v1"

// bitnet2B is BitNet b1.58 2B-4T's shape.
var bitnet2B = bitnetSpec{hidden: 2560, ffn: 6912, layers: 30, heads: 20, kv: 5, vocab: 128256, seed: 2}

var benchFormats = []struct{ name, file string }{
	{"TQ2_0", "bitnet2b-tq2_0.gguf"}, {"TQ1_0", "bitnet2b-tq1_0.gguf"},
	{"halo2", "bitnet2b-halo2.h1b"}, {"sherry", "bitnet2b-sherry.h1b"}, {"tq1h", "bitnet2b-tq1h.h1b"},
}

var benchGenMu sync.Mutex

// benchModel returns the path of the cached 2B model in format name,
// generating it on first use (≈1–2 GB per format, tens of seconds).
func benchModel(b *testing.B, name string) string {
	benchGenMu.Lock()
	defer benchGenMu.Unlock()
	dir := filepath.Join(os.TempDir(), "edgectl-bench", benchVersion)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for _, f := range benchFormats {
		if f.name != name {
			continue
		}
		p := filepath.Join(dir, f.file)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		start := time.Now()
		var err error
		switch name {
		case "TQ2_0":
			err = bitnet2B.writeGGUF(p, gguf.TypeTQ2_0)
		case "TQ1_0":
			err = bitnet2B.writeGGUF(p, gguf.TypeTQ1_0)
		case "halo2":
			err = bitnet2B.writeH1B(p, h1b.V2HALO2)
		case "sherry":
			err = bitnet2B.writeH1B(p, h1b.V3Sherry)
		case "tq1h":
			err = bitnet2B.writeH1B(p, h1b.V4TQ1)
		}
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("generated %s in %s", p, time.Since(start).Round(time.Second))
		return p
	}
	b.Fatalf("unknown format %s", name)
	return ""
}

// readBandwidth measures how fast `threads` cores read the model's own
// weight bytes (already in the page cache): the roofline for decode, which
// must stream every weight once per token. The regions and the probe are
// roofline.go's, which `edgectl bench` uses too (it tops small models up
// to a buffer larger than the caches; these benchmarks read the weights
// only).
func readBandwidth(m *model, threads int) float64 {
	return readRate(m.kern.readSum, m.weightRegions(), threads)
}

func peakRSS() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

const (
	benchThreads = 2
	decodeSteps  = 16
)

func loadBench(b *testing.B, name string) *model {
	head := ""
	if n, ok := strings.CutSuffix(name, "+f16head"); ok {
		name, head = n, "float"
	}
	// Reset the peak-RSS counter (VmHWM) so each benchmark reports its own.
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	p := name // a model file (the llama.cpp fixtures, bench12Model's), else a generated 2B model
	if strings.HasSuffix(name, ".gguf") || strings.HasSuffix(name, ".h1b") {
		if _, err := os.Stat(p); err != nil {
			b.Skipf("benchmark model absent: %v", err)
		}
	} else {
		p = benchModel(b, name)
	}
	em, err := New().Load(context.Background(), p, engine.LoadOptions{Threads: benchThreads, ContextLength: 512, Head: head})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { em.Close() })
	return em.(*model)
}

// benchDecode times decode in rounds of decodeSteps tokens (one op each)
// and measures the read bandwidth right before every round: the machine
// is shared, and both the bandwidth and our share of it drift by ±30%
// within a minute, so a ratio of numbers taken far apart measures the
// neighbours. The reported ratio is the median of the per-round ratios;
// tok/s is over all rounds.
func benchDecode(b *testing.B, name string) {
	m := loadBench(b, name)
	st := newState(m)
	ctx := context.Background()
	if _, err := st.forward(ctx, []int{1, 2, 3, 4}); err != nil { // warm up
		b.Fatal(err)
	}
	// Bytes touched per token: every weight once, plus the K and V rows
	// of every cached position (DecodeBytes; the benchmark cycles
	// positions 4…256, so these average ~4% of the weights).
	w0, _ := m.DecodeBytes(0)
	weights := float64(w0)
	var ratios, bws, all []float64
	var cpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		bw := readBandwidth(m, benchThreads)
		bytes := weights

		cpu0, start := cpuTime(), time.Now()
		b.StartTimer()
		for j := range decodeSteps {
			if st.pos >= 256 {
				st.truncate(4)
			}
			_, kv := m.DecodeBytes(st.pos)
			bytes += float64(kv) / decodeSteps
			if _, err := st.forward(ctx, []int{((i*decodeSteps + j) * 7919) % m.arch.vocab}); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		cpu += cpuTime() - cpu0
		tps := decodeSteps / time.Since(start).Seconds()
		ratios, bws, all = append(ratios, tps/(bw/bytes)), append(bws, bw), append(all, bytes)
	}
	bytes := median(all)
	tps := float64(b.N*decodeSteps) / b.Elapsed().Seconds()
	reportCPU(b, cpu, b.N*decodeSteps)
	bw := median(bws)
	b.ReportMetric(tps, "tok/s")
	b.ReportMetric(bw/bytes, "roofline-tok/s")
	b.ReportMetric(median(ratios), "roofline-ratio")
	b.ReportMetric(bytes/1e6, "MB/token")
	b.ReportMetric((bytes-weights)/1e6, "KV-MB/token")
	b.ReportMetric(bw/1e9, "read-GB/s") // the median of the rounds' probes
	b.ReportMetric(peakRSS(), "peak-RSS-MB")
	b.ReportMetric(float64(m.w.head.size())/1e6, "head-MB")
	b.Logf("%s: kernels %s, %d threads, GOMAXPROCS %d, load average %s", name, m.kern.name, benchThreads, runtime.GOMAXPROCS(0), loadAvg())
}

func benchPrefill(b *testing.B, name string) {
	m := loadBench(b, name)
	bw := readBandwidth(m, benchThreads)
	st := newState(m)
	ctx := context.Background()
	prompt := make([]int, 64)
	for i := range prompt {
		prompt[i] = (i*104729 + 11) % m.arch.vocab
	}
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st.truncate(0)
		if _, err := st.forward(ctx, prompt); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	tps := float64(b.N*len(prompt)) / b.Elapsed().Seconds()
	reportCPU(b, cpuTime()-cpu0, b.N*len(prompt))
	b.ReportMetric(tps, "tok/s")
	// One pass over the weights serves the whole 64-token batch.
	b.ReportMetric(bw/float64(m.weightBytes())*float64(len(prompt)), "weight-roofline-tok/s")
	b.ReportMetric(peakRSS(), "peak-RSS-MB")
}

func BenchmarkDecodeTQ2_0(b *testing.B)  { benchDecode(b, "TQ2_0") }
func BenchmarkDecodeTQ1_0(b *testing.B)  { benchDecode(b, "TQ1_0") }
func BenchmarkDecodeHALO2(b *testing.B)  { benchDecode(b, "halo2") }
func BenchmarkDecodeSherry(b *testing.B) { benchDecode(b, "sherry") }
func BenchmarkDecodeTQ1H(b *testing.B)   { benchDecode(b, "tq1h") }
func BenchmarkPrefillTQ2_0(b *testing.B) { benchPrefill(b, "TQ2_0") }

// The same TQ2_0 file with its F16 tied head used as stored
// (EDGECTL_HEAD=float) instead of the default int8 copy.
func BenchmarkDecodeTQ2_0F16Head(b *testing.B)  { benchDecode(b, "TQ2_0+f16head") }
func BenchmarkPrefillTQ2_0F16Head(b *testing.B) { benchPrefill(b, "TQ2_0+f16head") }
func BenchmarkPrefillTQ1_0(b *testing.B)        { benchPrefill(b, "TQ1_0") }
func BenchmarkPrefillHALO2(b *testing.B)        { benchPrefill(b, "halo2") }
func BenchmarkPrefillSherry(b *testing.B)       { benchPrefill(b, "sherry") }
func BenchmarkPrefillTQ1H(b *testing.B)         { benchPrefill(b, "tq1h") }

// BenchmarkAttention2048 times attention alone for one decoded token
// against 2048 cached positions (all 30 layers; the weights' products are
// left out), per token (ns/op) and as a ratio to reading the cache's bytes
// at the probed rate: decode's cost that grows with the context.
func BenchmarkAttention2048(b *testing.B) {
	const cached = 2048
	em, err := New().Load(context.Background(), benchModel(b, "TQ2_0"), engine.LoadOptions{Threads: benchThreads, ContextLength: 4096})
	if err != nil {
		b.Fatal(err)
	}
	defer em.Close()
	m := em.(*model)
	st := newState(m)
	defer st.release()
	chunk := make([]int, 256)
	for st.pos < cached {
		for i := range chunk {
			chunk[i] = (st.pos + i) * 31 % m.arch.vocab
		}
		if _, err := st.forward(context.Background(), chunk); err != nil {
			b.Fatal(err)
		}
	}
	st.pos = cached - 1 // attention(l, 1) then reads all 2048 positions
	ar := &m.arch
	var kv [][]byte
	for l := range ar.layers {
		for h := range ar.kvHeads {
			r := st.kvRun(l, h)
			kv = append(kv, f32Bytes(st.kc[r:r+cached*ar.headDim]), f32Bytes(st.vc[r:r+cached*ar.headDim]))
		}
	}
	bytes := float64(2 * 4 * ar.layers * ar.kvHeads * ar.headDim * cached)
	bw := readRate(m.kern.readSum, kv, benchThreads)
	b.ResetTimer()
	for range b.N {
		for l := range ar.layers {
			st.attention(l, 1)
		}
	}
	b.StopTimer()
	bw = (bw + readRate(m.kern.readSum, kv, benchThreads)) / 2 // probed before and after
	b.ReportMetric(bytes/1e6, "KV-MB/token")
	b.ReportMetric(bytes/bw/(b.Elapsed().Seconds()/float64(b.N)), "roofline-ratio")
}

func f32Bytes(f []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(b))[:min(3, len(strings.Fields(string(b))))], " ")
}

// cpuTime is the process's user+system CPU time. On a shared machine the
// wall clock measures our share of the cores as much as the engine; CPU
// time per token does not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds CPU ms per token and the tok/s the same work would reach
// with benchThreads cores to itself.
func reportCPU(b *testing.B, cpu time.Duration, tokens int) {
	per := cpu.Seconds() / float64(tokens)
	b.ReportMetric(per*1000, "cpu-ms/token")
	b.ReportMetric(benchThreads/per, "tok/s-at-full-cores")
}
