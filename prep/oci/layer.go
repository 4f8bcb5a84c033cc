package oci

import (
	"archive/tar"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/compression"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/zstd"
)

// zstdEncoderOptions are fixed, not derived from the machine, so the same
// file compresses to the same bytes everywhere and the image digest is
// reproducible. One encoder goroutine at the fastest level: weights barely
// compress at any level (bf16 ≈ 100%), and measured on this project's
// 2-core machines a single fastest stream runs at ~500 MB/s while
// WithConcurrentBlocks managed 30–60 MB/s (its job copies dominate).
// Configs, tokenizers and compiled models still shrink.
func zstdEncoderOptions() []zstd.EOption {
	return []zstd.EOption{
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1),
	}
}

// epoch is the modification time of every tar entry: content, not the
// moment of packing, decides the digest.
var epoch = time.Unix(0, 0).UTC()

// writeFileTar writes a tar stream holding rel (and its parent
// directories) with src's bytes, in a fixed form: USTAR/PAX headers with
// no owner names, uid/gid 0, mode 0644 (dirs 0755), mtime 0.
func writeFileTar(w io.Writer, rel string, src *os.File, size int64) error {
	tw := tar.NewWriter(w)
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		if err := tw.WriteHeader(&tar.Header{
			Typeflag: tar.TypeDir, Name: path.Join(parts[:i]...) + "/", Mode: 0o755,
			ModTime: epoch, Format: tar.FormatPAX,
		}); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg, Name: rel, Mode: 0o644, Size: size,
		ModTime: epoch, Format: tar.FormatPAX,
	}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, io.NewSectionReader(src, 0, size)); err != nil {
		return err
	}
	return tw.Close()
}

// spoolLayer compresses file rel of dir into a temporary file under spool
// and returns a layer over it. Compressing once to disk (rather than on
// every read) matters for multi-GB weights: go-containerregistry reads a
// layer several times (digest, diff id, upload).
func spoolLayer(dir, rel, spool string) (v1.Layer, error) {
	src, err := os.Open(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(spool, "layer-*.tar.zst")
	if err != nil {
		return nil, err
	}
	defer tmp.Close()
	enc, err := zstd.NewWriter(tmp, zstdEncoderOptions()...)
	if err != nil {
		return nil, err
	}
	if err := writeFileTar(enc, rel, src, st.Size()); err != nil {
		enc.Close()
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	name := tmp.Name()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return os.Open(name) },
		tarball.WithCompression(compression.ZStd), tarball.WithMediaType(types.OCILayerZStd))
}
