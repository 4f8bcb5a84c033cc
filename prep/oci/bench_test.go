package oci

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/edgectl/edgectl/artifact"
)

// benchOut writes an artifact directory holding one weight-like file of
// EDGECTL_BENCH_MB MiB (default 256): random low bytes under a narrow
// exponent byte, so it compresses about as bf16 weights do.
func benchOut(b *testing.B, dir string) (string, int64) {
	mb := 256
	if s := os.Getenv("EDGECTL_BENCH_MB"); s != "" {
		mb, _ = strconv.Atoi(s)
	}
	out := filepath.Join(dir, "OUT")
	if err := os.MkdirAll(out, 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(filepath.Join(out, "model.safetensors"))
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 1<<20)
	for range mb {
		for i := 0; i < len(buf); i += 2 {
			buf[i] = byte(r.Uint32())
			buf[i+1] = 0x3c + byte(r.IntN(4)) // bf16 exponents of small weights
		}
		f.Write(buf)
	}
	f.Close()
	files, err := artifact.HashTree(out)
	if err != nil {
		b.Fatal(err)
	}
	m := &artifact.Manifest{Schema: artifact.ManifestSchema, EdgectlVersion: "bench", Target: "cpu", Key: "0123456789abcdef0123", Files: files, Options: json.RawMessage(`{}`)}
	raw, _ := m.Marshal()
	os.WriteFile(filepath.Join(out, artifact.ManifestName), raw, 0o644)
	return out, int64(mb) << 20
}

// BenchmarkPushPull pushes and pulls the artifact through the in-memory
// registry on loopback. Peers: the same bytes uploaded as one plain blob
// with go-containerregistry (what any client pays this registry), and that
// blob downloaded to /dev/null; plus a plain read+write copy of the file
// (the disk's limit).
//
//	EDGECTL_BENCH_MB=256 go test -run x -bench PushPull -benchtime 1x ./prep/oci/
func BenchmarkPushPull(b *testing.B) {
	tmp := b.TempDir()
	out, size := benchOut(b, tmp)
	_, host := newRegistry(&testing.T{})
	weights := filepath.Join(out, "model.safetensors")
	rate := func(start time.Time) float64 { return float64(size) / 1e6 / time.Since(start).Seconds() }
	for i := range b.N {
		// Peer upload and download of the same bytes.
		data, err := os.ReadFile(weights)
		if err != nil {
			b.Fatal(err)
		}
		repo, _ := name.NewRepository(host + "/bench/peer")
		layer := static.NewLayer(data, types.OCIUncompressedLayer)
		start := time.Now()
		if err := remote.WriteLayer(repo, layer); err != nil {
			b.Fatal(err)
		}
		peerPush := rate(start)
		d, _ := layer.Digest()
		start = time.Now()
		rl, err := remote.Layer(repo.Digest(d.String()))
		if err != nil {
			b.Fatal(err)
		}
		rc, _ := rl.Compressed()
		io.Copy(io.Discard, rc)
		rc.Close()
		peerPull := rate(start)
		data, layer = nil, nil

		start = time.Now()
		in, _ := os.Open(weights)
		dst, _ := os.Create(filepath.Join(tmp, "copy"))
		io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{in}, make([]byte, 1<<20)) // userspace: bytes really move
		dst.Sync()
		in.Close()
		dst.Close()
		os.Remove(filepath.Join(tmp, "copy"))
		cp := rate(start)

		start = time.Now()
		res, err := Push(context.Background(), out, host+"/bench/m:"+strconv.Itoa(i), anon)
		if err != nil {
			b.Fatal(err)
		}
		push := rate(start)
		start = time.Now()
		if _, err := Pull(context.Background(), res.Ref, filepath.Join(tmp, "pulled"), anon); err != nil {
			b.Fatal(err)
		}
		pull := rate(start)
		os.RemoveAll(filepath.Join(tmp, "pulled"))

		b.ReportMetric(push, "push-MB/s")
		b.ReportMetric(peerPush, "blob-upload-MB/s")
		b.ReportMetric(push/peerPush, "push/blob-upload")
		b.ReportMetric(pull, "pull-MB/s")
		b.ReportMetric(peerPull, "blob-download-MB/s")
		b.ReportMetric(pull/peerPull, "pull/blob-download")
		b.ReportMetric(cp, "copy-MB/s")
	}
}
