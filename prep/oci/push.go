package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/edgectl/edgectl/artifact"
	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/progress"
)

// PushResult names what was pushed.
type PushResult struct {
	Ref    string `json:"ref"`    // REPOSITORY@sha256:…, the reference devices should pull
	Tag    string `json:"tag"`    // the reference as given
	Digest string `json:"digest"` // the image manifest's digest
	Files  int    `json:"files"`
	Bytes  int64  `json:"bytes"` // file bytes (before compression)
}

// Build turns a prep artifact directory into an OCI image. The directory
// must still match its manifest.json: an edited OUT/ is refused rather
// than published under a manifest that no longer describes it. Spool is
// where compressed layers are staged (it must outlive the image's use).
func Build(dir, spool string) (v1.Image, *artifact.Manifest, error) {
	m, err := artifact.ReadManifest(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("%s is not a prep artifact directory: %v", dir, err)
	}
	if err := m.Verify(dir); err != nil {
		return nil, nil, fmt.Errorf("refusing to push: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, artifact.ManifestName))
	if err != nil {
		return nil, nil, err
	}
	mfSum, mfSize, err := artifact.HashFile(filepath.Join(dir, artifact.ManifestName))
	if err != nil {
		return nil, nil, err
	}
	files := append(append([]artifact.FileEntry(nil), m.Files...), artifact.FileEntry{Path: artifact.ManifestName, Size: mfSize, SHA256: mfSum})

	// Files are compressed in parallel (each stream on one core, so the
	// bytes do not depend on the machine); the layer order stays the file
	// order.
	adds := make([]mutate.Addendum, len(files))
	errs := make([]error, len(files))
	sem := make(chan struct{}, max(1, min(4, runtime.GOMAXPROCS(0))))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			l, err := spoolLayer(dir, f.Path, spool)
			if err != nil {
				errs[i] = fmt.Errorf("pack %s: %w", f.Path, err)
				return
			}
			adds[i] = mutate.Addendum{Layer: l, Annotations: map[string]string{
				AnnotationTitle:      f.Path,
				AnnotationFileSHA256: f.SHA256,
				AnnotationFileSize:   strconv.FormatInt(f.Size, 10),
			}}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}

	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		OS:     "linux",
		RootFS: v1.RootFS{Type: "layers"},
		Config: v1.Config{Labels: map[string]string{AnnotationTarget: m.Target}},
	})
	if err != nil {
		return nil, nil, err
	}
	if img, err = mutate.Append(img, adds...); err != nil {
		return nil, nil, err
	}
	anns := map[string]string{
		AnnotationTarget:         m.Target,
		AnnotationKey:            m.Key,
		AnnotationEdgectl:        m.EdgectlVersion,
		AnnotationVersion:        m.Key[:12],
		AnnotationManifestSHA256: mfSum,
	}
	if m.Source.Repo != "" {
		anns[AnnotationSource] = "https://huggingface.co/" + m.Source.Repo
		anns[AnnotationRevision] = m.Source.Commit
	}
	if len(raw) <= maxManifestAnnotation {
		var compact json.RawMessage = raw
		if b, err := json.Marshal(compact); err == nil {
			anns[AnnotationManifest] = string(b)
		}
	}
	return mutate.Annotations(img, anns).(v1.Image), m, nil
}

// Push uploads the artifact directory dir to ref.
func Push(ctx context.Context, dir, ref string, o Options) (*PushResult, error) {
	r, err := ParseRef(ref, o.Insecure)
	if err != nil {
		return nil, err
	}
	// Compressed layers are staged beside OUT/ (its disk has room for a
	// model), not in /tmp, which is often a small tmpfs.
	abs, _ := filepath.Abs(dir)
	atomicfile.CleanStale(filepath.Dir(abs)) // spools of killed pushes
	spool, err := artifact.NewTempDir(filepath.Dir(abs), filepath.Base(abs)+".push")
	if err != nil {
		if spool, err = os.MkdirTemp("", "edgectl-push-*"); err != nil {
			return nil, err
		}
	}
	defer os.RemoveAll(spool)
	img, m, err := Build(dir, spool)
	if err != nil {
		return nil, err
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(o.keychain())}
	if o.Transport != nil {
		opts = append(opts, remote.WithTransport(o.Transport))
	}
	if emit := progress.Every(progress.Interval, o.OnEvent); emit != nil {
		ch := make(chan v1.Update, 16)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for u := range ch {
				emit(progress.Event{Event: progress.Progress, Step: "push", Done: u.Complete, Total: u.Total, Unit: "bytes"})
			}
		}()
		defer func() { <-done }()
		opts = append(opts, remote.WithProgress(ch))
	}
	if err := remote.Write(r, img, opts...); err != nil {
		return nil, registryErr("push to", r.String(), err)
	}
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	res := &PushResult{Ref: r.Context().Digest(d.String()).String(), Tag: r.String(), Digest: d.String(), Files: len(m.Files) + 1}
	for _, f := range m.Files {
		res.Bytes += f.Size
	}
	return res, nil
}
