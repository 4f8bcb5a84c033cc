package oci

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/zstd"

	"github.com/edgectl/edgectl/artifact"
	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/progress"
	"github.com/edgectl/edgectl/internal/units"
)

// PullResult says what a pull did.
type PullResult struct {
	Ref      string `json:"ref"` // REPOSITORY@sha256:… that was fetched
	Digest   string `json:"digest"`
	Dir      string `json:"dir"`
	Target   string `json:"target"`
	Files    int    `json:"files"`
	Bytes    int64  `json:"bytes"`
	UpToDate bool   `json:"up_to_date,omitempty"` // dir already held this artifact
}

// tamperErr is content that does not match the digest naming it: a
// checksum error, as for a corrupt Hub download.
func tamperErr(format string, args ...any) error {
	return errkind.Errorf(errkind.Checksum, "content does not match its digest: "+format+" (altered in the registry or in transit: nothing was written; re-push from a trusted OUT/)", args...)
}

// Pull fetches the artifact at ref into dir. Every layer is checked against
// its digest and every file against the sha256 in its annotation and in
// the artifact's manifest.json before dir appears; dir is replaced only
// when it holds an earlier prep artifact, and left alone when it already
// holds this one.
func Pull(ctx context.Context, ref, dir string, o Options) (*PullResult, error) {
	r, err := ParseRef(ref, o.Insecure)
	if err != nil {
		return nil, err
	}
	// Layer fetches use the context the image was opened with: cancelling
	// it stops the other downloads when one fails.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(o.keychain())}
	if o.Transport != nil {
		opts = append(opts, remote.WithTransport(o.Transport))
	}
	img, err := remote.Image(r, opts...)
	if err != nil {
		return nil, registryErr("pull", r.String(), err)
	}
	mf, err := img.Manifest()
	if err != nil {
		return nil, registryErr("pull", r.String(), err)
	}
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	res := &PullResult{Ref: r.Context().Digest(d.String()).String(), Digest: d.String(), Dir: dir, Target: mf.Annotations[AnnotationTarget]}
	if mf.Annotations[AnnotationManifestSHA256] == "" {
		return nil, fmt.Errorf("%s is not an edgectl artifact (no %s annotation): push it with `edgectl push OUT REF`", r, AnnotationManifestSHA256)
	}
	files, err := plan(mf)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", r, err)
	}
	var total int64
	for _, f := range files {
		total += f.size
	}
	res.Files, res.Bytes = len(files), total

	if _, err := os.Lstat(dir); err == nil {
		if upToDate(dir, mf.Annotations[AnnotationManifestSHA256]) {
			res.UpToDate = true
			return res, nil
		}
		if ents, _ := os.ReadDir(dir); len(ents) > 0 {
			if _, err := artifact.ReadManifest(dir); err != nil {
				return nil, fmt.Errorf("%s exists and is not a prep artifact (%v): choose another directory or remove it", dir, err)
			}
		}
	}

	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	// What killed pulls left here goes first; then the artifact must fit.
	atomicfile.CleanStale(parent)
	if free, ok := o.freeSpace(parent); ok && free < total {
		return nil, errkind.Errorf(errkind.DiskFull, "no space left for %s: it needs %s (%d bytes) in %s, which has %s free; free space or pull into a larger disk (--local-dir)",
			r, units.Bytes(total), total, parent, units.Bytes(free))
	}
	staging, err := artifact.NewTempDir(parent, filepath.Base(filepath.Clean(dir)))
	if err != nil {
		return nil, err
	}
	published := false
	defer func() {
		if !published {
			os.RemoveAll(staging)
		}
	}()
	if err := fetchAll(ctx, cancel, img, files, staging, total, r.String(), o); err != nil {
		return nil, err
	}
	sum, _, err := artifact.HashFile(filepath.Join(staging, artifact.ManifestName))
	if err != nil {
		return nil, fmt.Errorf("%s: the artifact has no %s: %v", r, artifact.ManifestName, err)
	}
	if sum != mf.Annotations[AnnotationManifestSHA256] {
		return nil, tamperErr("%s: manifest.json has sha256 %s, the image manifest names %s", r, sum, mf.Annotations[AnnotationManifestSHA256])
	}
	m, err := artifact.ReadManifest(staging)
	if err != nil {
		return nil, err
	}
	// Each file was hashed as it was written and matched its layer's
	// annotation; the manifest must name exactly those files and digests.
	// (Comparing lists instead of re-hashing saves a full read of the model.)
	if err := matchManifest(m, files); err != nil {
		return nil, tamperErr("%s: %v", r, err)
	}
	if err := atomicfile.SyncDir(staging); err != nil {
		return nil, err
	}
	if err := artifact.SwapDir(staging, dir); err != nil {
		return nil, err
	}
	published = true
	return res, nil
}

// fetchAll downloads the files o.Jobs at a time (default 4), largest
// first, and returns the first failure (cancelling the rest).
func fetchAll(ctx context.Context, cancel context.CancelFunc, img v1.Image, files []layerFile, dir string, total int64, ref string, o Options) error {
	jobs := o.Jobs
	if jobs <= 0 {
		jobs = 4
	}
	order := append([]layerFile(nil), files...)
	sort.SliceStable(order, func(i, j int) bool { return order[i].size > order[j].size })
	queue := make(chan layerFile)
	var (
		done     atomic.Int64
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		emit     = progress.Every(progress.Interval, o.OnEvent)
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	for range min(jobs, len(order)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range queue {
				l, err := img.LayerByDigest(f.desc.Digest)
				if err != nil {
					fail(registryErr("pull", ref, err))
					continue
				}
				var last int64
				err = fetchFile(l, f, dir, func(n int64) {
					d := done.Add(n - last)
					last = n
					if emit != nil {
						mu.Lock()
						emit(progress.Event{Event: progress.Progress, Step: "pull", Done: d, Total: total, Unit: "bytes"})
						mu.Unlock()
					}
				})
				if err != nil {
					if errkind.Of(err) == errkind.None {
						err = registryErr("pull "+f.path+" from", ref, err)
					}
					fail(err)
				}
			}
		}()
	}
	for _, f := range order {
		if ctx.Err() != nil {
			break
		}
		queue <- f
	}
	close(queue)
	wg.Wait()
	if firstErr != nil {
		// A download cancelled because another failed reports the cause.
		return firstErr
	}
	return ctx.Err()
}

// matchManifest checks that manifest.json lists exactly the files the
// layers carried, with the same sizes and digests.
func matchManifest(m *artifact.Manifest, files []layerFile) error {
	got := map[string]layerFile{}
	for _, f := range files {
		if f.path != artifact.ManifestName {
			got[f.path] = f
		}
	}
	if len(m.Files) != len(got) {
		return fmt.Errorf("manifest.json lists %d files, the image carries %d", len(m.Files), len(got))
	}
	for _, e := range m.Files {
		f, ok := got[e.Path]
		if !ok {
			return fmt.Errorf("manifest.json lists %s, which the image does not carry", e.Path)
		}
		if f.sha256 != e.SHA256 || f.size != e.Size {
			return fmt.Errorf("%s: the image carries %d bytes sha256 %s, manifest.json says %d bytes %s", e.Path, f.size, f.sha256, e.Size, e.SHA256)
		}
	}
	return nil
}

// layerFile is one file the image carries, as its layer descriptor says.
type layerFile struct {
	desc   v1.Descriptor
	path   string
	size   int64
	sha256 string
}

// plan reads the file list from the layer annotations and refuses paths
// that would land outside the directory.
func plan(mf *v1.Manifest) ([]layerFile, error) {
	seen := map[string]bool{}
	var files []layerFile
	for i, l := range mf.Layers {
		p := l.Annotations[AnnotationTitle]
		if err := artifact.CheckPath(p); err != nil {
			return nil, fmt.Errorf("layer %d (%s): path %q: %v", i, l.Digest, p, err)
		}
		if seen[p] {
			return nil, fmt.Errorf("layer %d (%s): %s appears twice", i, l.Digest, p)
		}
		seen[p] = true
		size, err := strconv.ParseInt(l.Annotations[AnnotationFileSize], 10, 64)
		sum := l.Annotations[AnnotationFileSHA256]
		if err != nil || size < 0 || len(sum) != 64 {
			return nil, fmt.Errorf("layer %d (%s): missing or bad %s/%s annotations", i, p, AnnotationFileSize, AnnotationFileSHA256)
		}
		files = append(files, layerFile{desc: l, path: p, size: size, sha256: sum})
	}
	if !seen[artifact.ManifestName] {
		return nil, fmt.Errorf("no layer holds %s", artifact.ManifestName)
	}
	return files, nil
}

// fetchFile streams one layer into dir: compressed bytes are hashed as they
// arrive and checked against the layer digest, the tar must hold exactly
// the annotated file (directories aside), and the file's sha256 and size
// must match its annotation.
func fetchFile(l v1.Layer, f layerFile, dir string, progress func(int64)) error {
	rc, err := l.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	digest := sha256.New()
	counted := &countingReader{r: io.TeeReader(rc, digest)}
	var tr io.Reader
	switch f.desc.MediaType {
	case types.OCILayerZStd:
		// One decoder goroutine: the stream is then decoded synchronously
		// in this goroutine, so nothing else reads counted while it is
		// drained below (and memory stays at one window).
		zr, err := zstd.NewReader(counted, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return err
		}
		defer zr.Close()
		tr = zr
	case types.OCILayer, types.DockerLayer:
		zr, err := gzip.NewReader(counted)
		if err != nil {
			return tamperErr("layer %s (%s): %v", f.desc.Digest, f.path, err)
		}
		tr = zr
	case types.OCIUncompressedLayer, types.DockerUncompressedLayer:
		tr = counted
	default:
		return fmt.Errorf("layer %s (%s): media type %s is not a tar layer", f.desc.Digest, f.path, f.desc.MediaType)
	}

	fileHash, got, xerr := extract(tar.NewReader(tr), f, dir, progress)
	// Drain what the decompressor left unread so the digest covers the
	// whole blob, then check it. The digest is checked before the
	// extraction error: corrupt bytes usually surface first as a zstd or tar
	// error, and "the registry sent other bytes" is the useful message.
	_, derr := io.Copy(io.Discard, counted)
	if counted.n < f.desc.Size && (xerr != nil || derr != nil) {
		// A short read is a broken connection, not evidence of tampering.
		if xerr == nil {
			xerr = derr
		}
		return xerr
	}
	if sum := "sha256:" + hex.EncodeToString(digest.Sum(nil)); sum != f.desc.Digest.String() || counted.n != f.desc.Size {
		return tamperErr("layer of %s: received %d bytes with digest %s, the manifest names %d bytes %s", f.path, counted.n, sum, f.desc.Size, f.desc.Digest)
	}
	if xerr != nil {
		return xerr
	}
	if fileHash != f.sha256 || got != f.size {
		return tamperErr("%s: %d bytes with sha256 %s, annotated %d bytes %s", f.path, got, fileHash, f.size, f.sha256)
	}
	return nil
}

// extract writes the layer's one regular file and returns its sha256.
func extract(tr *tar.Reader, f layerFile, dir string, progress func(int64)) (string, int64, error) {
	var sum string
	var n int64
	found := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", 0, tamperErr("layer of %s: bad tar stream: %v", f.path, err)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
		switch h.Typeflag {
		case tar.TypeDir:
			if !strings.HasPrefix(f.path, name+"/") {
				return "", 0, fmt.Errorf("layer of %s holds an unexpected directory %q", f.path, h.Name)
			}
		case tar.TypeReg:
			if name != f.path || found {
				return "", 0, fmt.Errorf("layer of %s holds an unexpected file %q", f.path, h.Name)
			}
			// Nothing past the annotated size is written: a small layer
			// that inflates to terabytes is refused before its first byte.
			if h.Size != f.size {
				return "", 0, tamperErr("layer of %s: its tar entry is %d bytes, annotated %d", f.path, h.Size, f.size)
			}
			found = true
			if sum, n, err = writeFile(filepath.Join(dir, filepath.FromSlash(f.path)), tr, progress); err != nil {
				return "", 0, err
			}
		default:
			return "", 0, fmt.Errorf("layer of %s holds %q of tar type %q: only files and directories are allowed", f.path, h.Name, h.Typeflag)
		}
	}
	if !found {
		return "", 0, fmt.Errorf("layer of %s holds no file", f.path)
	}
	return sum, n, nil
}

func writeFile(path string, r io.Reader, progress func(int64)) (string, int64, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", 0, err
	}
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", 0, err
	}
	defer out.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h, progressWriter(progress)), r)
	if err != nil {
		return "", 0, err
	}
	if err := out.Sync(); err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, out.Close()
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// progressWriter reports the running byte count of what is written to it.
func progressWriter(f func(int64)) io.Writer {
	var n int64
	return writerFunc(func(b []byte) (int, error) {
		n += int64(len(b))
		f(n)
		return len(b), nil
	})
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(b []byte) (int, error) { return w(b) }

// upToDate reports whether dir already holds the artifact whose
// manifest.json has sha256 want, unmodified.
func upToDate(dir, want string) bool {
	sum, _, err := artifact.HashFile(filepath.Join(dir, artifact.ManifestName))
	if err != nil || sum != want {
		return false
	}
	m, err := artifact.ReadManifest(dir)
	return err == nil && m.Verify(dir) == nil
}
