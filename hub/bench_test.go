package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgectl/edgectl/hub/hubtest"
)

// BenchmarkPullVsPlainGET pulls a ≥1 GiB LFS file from a loopback fake Hub
// (content generated on the fly) and compares it with a plain GET of the
// same bytes from the same server into io.Discard. The pull also writes the
// blob to disk, hashes it and fsyncs it, so the ratio is what verification
// and durability cost. It reports throughputs, their ratio, the sha256 rate
// of this CPU (the pull's other ceiling), and peak Go heap during the pull.
//
//	go test -run '^$' -bench PullVsPlainGET -benchtime 1x ./hub/
//	EDGECTL_BENCH_PULL_BYTES=4294967296 … for a larger file
func BenchmarkPullVsPlainGET(b *testing.B) {
	size := int64(1 << 30)
	if v, err := strconv.ParseInt(os.Getenv("EDGECTL_BENCH_PULL_BYTES"), 10, 64); err == nil && v > 0 {
		size = v
	}
	srv := hubtest.New()
	defer srv.Close()
	content := hubtest.Generated(99, size)
	h := sha256.New()
	io.Copy(h, io.NewSectionReader(content, 0, size))
	sum := hex.EncodeToString(h.Sum(nil))
	srv.AddRepo("bench/big", &hubtest.File{Path: "model.safetensors", Content: content, LFS: true, SHA256: sum})

	var getSec, pullSec float64
	var peakHeap uint64
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		// Plain GET of the CDN URL to io.Discard.
		t0 := time.Now()
		resp, err := http.Get(srv.CDNURL(sum))
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != size {
			b.Fatalf("plain GET: %d bytes, %v", n, err)
		}
		getSec += time.Since(t0).Seconds()

		// The pull, into a fresh cache.
		cache := b.TempDir()
		c, err := NewClient(Config{Endpoint: srv.URL(), CacheDir: cache})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		stop := sampleHeap(&peakHeap)
		t0 = time.Now()
		snap, err := c.Snapshot(context.Background(), "bench/big", "main", SnapshotOptions{})
		pullSec += time.Since(t0).Seconds()
		stop()
		if err != nil || snap.Files[0].Downloaded != size || snap.Files[0].SHA256 != sum {
			b.Fatalf("pull: %+v %v", snap, err)
		}
		os.RemoveAll(cache)
	}
	b.StopTimer()
	mb := float64(size) * float64(b.N) / 1e6
	b.ReportMetric(mb/getSec, "get-MB/s")
	b.ReportMetric(mb/pullSec, "pull-MB/s")
	b.ReportMetric(getSec/pullSec, "pull/get")
	b.ReportMetric(sha256Rate(), "sha256-MB/s")
	disk := diskRate(b, min(size, 512<<20))
	b.ReportMetric(disk, "disk-MB/s")
	b.ReportMetric(mb/pullSec/disk, "pull/disk")
	b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MiB")
	if rss, ok := maxRSSMiB(); ok {
		b.ReportMetric(rss, "maxrss-MiB") // the whole test process, fake Hub included
	}
}

// sampleHeap records the largest live heap seen until stop is called.
func sampleHeap(peak *uint64) (stop func()) {
	var done atomic.Bool
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for !done.Load() {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > *peak {
				*peak = v
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return func() { done.Store(true); <-finished }
}

// sha256Rate measures this CPU's sha256 throughput in MB/s.
func sha256Rate() float64 {
	buf := make([]byte, 8<<20)
	h := sha256.New()
	t0 := time.Now()
	for range 32 {
		h.Write(buf)
	}
	return float64(len(buf)) * 32 / 1e6 / time.Since(t0).Seconds()
}

// diskRate measures writing n bytes to a new file in the benchmark's temp
// directory and fsyncing it: the ceiling for a verified, durable download.
func diskRate(b *testing.B, n int64) float64 {
	f, err := os.Create(b.TempDir() + "/disk")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	t0 := time.Now()
	for w := int64(0); w < n; w += int64(len(buf)) {
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	return float64(n) / 1e6 / time.Since(t0).Seconds()
}
