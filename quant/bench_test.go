//go:build linux

package quant

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edgectl/edgectl/format/safetensors"
)

// BenchmarkPack1GiB packs a generated ≥1 GiB bf16 BitNet-shaped checkpoint
// (float weights → absmean → TQ2_0) and reports input GB/s against a plain
// sequential read of the same file, plus peak memory:
//
//	go test ./quant -run x -bench Pack1GiB -benchtime 1x
//
// Set EDGECTL_BENCH_FORMAT to try another format (sherry, gptq-int4, …).
func BenchmarkPack1GiB(b *testing.B) {
	dir := b.TempDir()
	in := writeBigCheckpoint(b, dir)
	st, _ := os.Stat(filepath.Join(in, "model.safetensors"))
	size := st.Size()
	format := os.Getenv("EDGECTL_BENCH_FORMAT")
	if format == "" {
		format = FormatTQ2_0
	}

	// Plain read: the same bytes through a 1 MiB buffer, nothing else.
	t0 := time.Now()
	f, _ := os.Open(filepath.Join(in, "model.safetensors"))
	n, _ := io.CopyBuffer(io.Discard, f, make([]byte, 1<<20))
	f.Close()
	readGBs := float64(n) / 1e9 / time.Since(t0).Seconds()

	out := filepath.Join(dir, "out")
	if format != FormatGPTQInt4 {
		out += ".bin"
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		os.RemoveAll(out)
		resetPeakRSS()
		stop := sampleAnon()
		t1, c1, s1 := time.Now(), cpuSeconds(), sysSeconds()
		res, err := Pack(context.Background(), Options{Input: in, Output: out, Format: format})
		el, cpu, sys := time.Since(t1).Seconds(), cpuSeconds()-c1, sysSeconds()-s1
		peakAnon := stop()
		if err != nil {
			b.Fatal(err)
		}
		packGBs := float64(size) / 1e9 / el
		b.ReportMetric(packGBs, "in-GB/s")
		b.ReportMetric(readGBs, "read-GB/s")
		b.ReportMetric(packGBs/readGBs, "ratio")
		b.ReportMetric(float64(peakAnon)/(1<<20), "peak-anon-MiB")
		b.ReportMetric(float64(size)/1e9/cpu, "in-GB/cpu-s")
		b.ReportMetric(float64(procStatus("VmHWM"))/(1<<10), "VmHWM-MiB")
		b.Logf("%s: input %.2f GiB, output %.1f MiB, %d threads; pack %.2f GB/s wall (%.1f CPU-s of which %.1f system, %.2f GB per CPU-s), plain read %.2f GB/s wall (ratio %.2f); peak anon RSS %.0f MiB, VmHWM %.0f MiB (includes mmapped input pages, which the kernel can drop)",
			format, float64(size)/(1<<30), float64(res.OutputBytes)/(1<<20), runtime.GOMAXPROCS(0), packGBs, cpu, sys, float64(size)/1e9/cpu, readGBs, packGBs/readGBs,
			float64(peakAnon)/(1<<20), float64(procStatus("VmHWM"))/(1<<10))
	}
}

// writeBigCheckpoint streams a 2B-like (hidden 2048, ffn 5632, 12 layers,
// vocab 32000) bf16 checkpoint of about 1.2 GB without holding it in memory.
func writeBigCheckpoint(b *testing.B, dir string) string {
	in := filepath.Join(dir, "big")
	os.MkdirAll(in, 0o755)
	const hs, is, layers, vocab, nh, nkv = 2048, 5632, 12, 32000, 16, 4
	hd := hs / nh
	var srcs []safetensors.Source
	add := func(name string, shape ...int64) {
		src := safetensors.Source{Name: name, DType: safetensors.BF16, Shape: shape}
		seed := uint32(len(srcs)*7919 + 1)
		src.WriteTo = func(w io.Writer) error {
			bw := bufio.NewWriterSize(w, 1<<20)
			n := src.Size() / 2
			x := seed
			var buf [2]byte
			for i := int64(0); i < n; i++ {
				x ^= x << 13
				x ^= x >> 17
				x ^= x << 5
				// bf16 of a small float in ±[2^-8, 2^-6): sign, exponent 119..120, random mantissa.
				v := uint16(x&0x8000) | uint16(119+(x>>8)%2)<<7 | uint16(x>>16)&0x7F
				binary.LittleEndian.PutUint16(buf[:], v)
				bw.Write(buf[:])
			}
			return bw.Flush()
		}
		srcs = append(srcs, src)
	}
	add("model.embed_tokens.weight", vocab, hs)
	add("model.norm.weight", hs)
	for l := 0; l < layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		add(p+"input_layernorm.weight", hs)
		add(p+"post_attention_layernorm.weight", hs)
		add(p+"self_attn.attn_sub_norm.weight", hs)
		add(p+"mlp.ffn_sub_norm.weight", is)
		add(p+"self_attn.q_proj.weight", int64(nh*hd), hs)
		add(p+"self_attn.k_proj.weight", int64(nkv*hd), hs)
		add(p+"self_attn.v_proj.weight", int64(nkv*hd), hs)
		add(p+"self_attn.o_proj.weight", hs, int64(nh*hd))
		add(p+"mlp.gate_proj.weight", is, hs)
		add(p+"mlp.up_proj.weight", is, hs)
		add(p+"mlp.down_proj.weight", hs, is)
	}
	f, err := os.Create(filepath.Join(in, "model.safetensors"))
	if err != nil {
		b.Fatal(err)
	}
	if err := safetensors.Write(f, nil, srcs); err != nil {
		b.Fatal(err)
	}
	f.Close()
	cfg := fmt.Sprintf(`{"architectures":["BitNetForCausalLM"],"model_type":"bitnet","hidden_size":%d,"intermediate_size":%d,"num_hidden_layers":%d,"num_attention_heads":%d,"num_key_value_heads":%d,"vocab_size":%d,"hidden_act":"relu2","tie_word_embeddings":true}`, hs, is, layers, nh, nkv, vocab)
	os.WriteFile(filepath.Join(in, "config.json"), []byte(cfg), 0o644)
	return in
}

// cpuSeconds is the process's user+system CPU time so far. On a shared
// machine wall-clock GB/s depends on the neighbours; GB per CPU-second
// does not.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// sysSeconds is the system (kernel) part of cpuSeconds: page faults on
// the mmapped input and write syscalls.
func sysSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Stime.Sec) + float64(ru.Stime.Usec)/1e6
}

// resetPeakRSS resets VmHWM (Linux: write 5 to clear_refs).
func resetPeakRSS() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// procStatus reads a kB field of /proc/self/status.
func procStatus(field string) int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			v, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return v
		}
	}
	return 0
}

// sampleAnon polls RssAnon (heap and stacks, not the mmapped input) every
// 20 ms; stop returns the peak in bytes.
func sampleAnon() (stop func() int64) {
	var mu sync.Mutex
	var peak int64
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			v := procStatus("RssAnon") << 10
			mu.Lock()
			peak = max(peak, v)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}
