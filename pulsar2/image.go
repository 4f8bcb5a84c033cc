package pulsar2

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/pathguard"
)

// ShimGate is the variable the patched image's pulsar2 wrapper sets, so the
// shim in site-packages acts for pulsar2 only.
const ShimGate = "EDGECTL_PULSAR2_SHIM"

// origSuffix names the image's own pulsar2, kept beside the wrapper.
const origSuffix = ".edgectl-orig"

const wrapperMarker = "# edgectl pulsar2 wrapper"

// PatchOptions configure PatchImage.
type PatchOptions struct {
	// Shim selects the hooks; with none selected all three are enabled.
	// Gate is set by PatchImage when it installs the wrapper.
	Shim ShimOptions
	// Tag names the image inside a tarball DST (docker load uses it).
	// Default: SRC's tag with "-edgectl" appended.
	Tag      string
	Insecure bool // allow plain-HTTP registries
	Log      io.Writer
}

// PatchResult describes the patched image.
type PatchResult struct {
	Source       string   `json:"source"`
	Destination  string   `json:"destination"`
	Tag          string   `json:"tag,omitempty"` // the tag inside a tarball destination
	SitePackages string   `json:"site_packages"` // where the shim went (absolute, in the image)
	Wrapper      string   `json:"wrapper,omitempty"`
	Original     string   `json:"original,omitempty"` // the image's pulsar2, kept for the wrapper
	Files        []string `json:"files"`              // everything in the new layer
	Layer        string   `json:"layer_digest"`
	LayerDiffID  string   `json:"layer_diff_id"`
	Digest       string   `json:"digest"` // the new image's manifest digest
	Warnings     []string `json:"warnings,omitempty"`
}

// PatchImage reads the pulsar2 image at src (a `docker save` tarball, gzipped
// or not, or a registry reference), appends one layer with the shim in the
// image's Python site-packages and a forwarding pulsar2 wrapper, and writes
// the result to dst (a tarball path or a registry reference). Earlier layers
// and the config stay as they were, apart from the new diff_id and history
// entry.
func PatchImage(ctx context.Context, src, dst string, opts PatchOptions) (*PatchResult, error) {
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	nameOpts := []name.Option{}
	if opts.Insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	if isTarballPath(dst) {
		if err := guardTarball(src, dst); err != nil {
			return nil, err
		}
	}
	img, srcTag, cleanup, err := loadImage(ctx, src, nameOpts, logw)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("%s: config: %w", src, err)
	}
	fmt.Fprintf(logw, "edgectl: reading the filesystem of %s\n", src)
	fsi, err := scanImage(img, pathDirs(cf.Config.Env))
	if err != nil {
		return nil, fmt.Errorf("%s: read filesystem: %w", src, err)
	}
	site, err := fsi.chooseSite()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	res := &PatchResult{Source: src, Destination: dst, SitePackages: "/" + site}
	shim := opts.Shim
	if !shim.Any() {
		shim.AliasLambert, shim.RelaxGroupN, shim.FP32AsBF16 = true, true, true
	}
	layerTar, err := fsi.layer(site, shim, res)
	if err != nil {
		return nil, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return nil, err
	}
	layerMT := types.DockerLayer
	if mt == types.OCIManifestSchema1 {
		layerMT = types.OCILayer
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(layerMT))
	if err != nil {
		return nil, err
	}
	// History carries the base image's creation time, so patching the same
	// image twice gives the same digest.
	out, err := mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: layerMT, History: v1.History{
		Created:   cf.Created,
		CreatedBy: fmt.Sprintf("edgectl pulsar2 image patch (shim v%d: %s)", ShimVersion, strings.Join(shim.Hooks(), ", ")),
		Comment:   "edgectl",
	}})
	if err != nil {
		return nil, err
	}
	if res.Tag, err = writeImage(ctx, out, dst, srcTag, opts.Tag, nameOpts); err != nil {
		return nil, err
	}
	d, _ := layer.Digest()
	di, _ := layer.DiffID()
	id, err := out.Digest()
	if err != nil {
		return nil, err
	}
	res.Layer, res.LayerDiffID, res.Digest = d.String(), di.String(), id.String()
	return res, nil
}

// isTarballPath decides whether a SRC/DST argument names a file: an existing
// file, a .tar/.tar.gz/.tgz name, or an explicit path.
func isTarballPath(s string) bool {
	if st, err := os.Stat(s); err == nil && !st.IsDir() {
		return true
	}
	l := strings.ToLower(s)
	return strings.HasSuffix(l, ".tar") || strings.HasSuffix(l, ".tar.gz") || strings.HasSuffix(l, ".tgz") ||
		strings.HasPrefix(s, "/") || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../")
}

// gunzipName is the base name of the decompressed copy of a gzipped SRC
// (a temporary in the system's temp directory).
const gunzipName = "edgectl-pulsar2-image.tar"

// guardTarball refuses a DST tarball that is SRC (the vendor's image would
// be replaced by the patched one) and removes what killed runs writing DST
// left beside it.
func guardTarball(src, dst string) error {
	if err := pathguard.File(dst, src); err != nil {
		var pe *pathguard.Error
		if errors.As(err, &pe) {
			pe.Flag = "" // DST is positional
		}
		return err
	}
	_, err := atomicfile.CleanStale(filepath.Dir(filepath.Clean(dst)), filepath.Base(filepath.Clean(dst)))
	return err
}

// gunzipped returns a path to the uncompressed tarball: src itself, or,
// when src is gzipped (docker load takes the vendor's .tar.gz as it is), a
// temporary copy. ggcr reopens the tarball for every layer it reads, so
// decompressing once is linear where a gzip opener would be quadratic.
func gunzipped(src string, logw io.Writer) (string, func(), error) {
	f, err := os.Open(src)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	if magic, _ := br.Peek(2); len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
		return src, func() {}, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", src, err)
	}
	// Killed runs left theirs: a decompressed vendor image is gigabytes.
	if _, err := atomicfile.CleanStale(os.TempDir(), gunzipName); err != nil {
		return "", nil, err
	}
	tmp, err := os.CreateTemp("", atomicfile.TempPattern(gunzipName))
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { tmp.Close(); os.Remove(tmp.Name()) }
	fmt.Fprintf(logw, "edgectl: decompressing %s to %s\n", src, tmp.Name())
	if _, err := io.Copy(tmp, zr); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("%s: gunzip: %w", src, err)
	}
	return tmp.Name(), cleanup, nil
}

func loadImage(ctx context.Context, src string, nameOpts []name.Option, logw io.Writer) (v1.Image, string, func(), error) {
	if isTarballPath(src) {
		path, cleanup, err := gunzipped(src, logw)
		if err != nil {
			return nil, "", nil, err
		}
		img, tag, err := tarballImage(src, path)
		if err != nil {
			cleanup()
			return nil, "", nil, err
		}
		return img, tag, cleanup, nil
	}
	ref, err := name.ParseReference(src, nameOpts...)
	if err != nil {
		return nil, "", nil, fmt.Errorf("%q is neither a tarball nor an image reference: %w", src, err)
	}
	img, err := remote.Image(ref, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return nil, "", nil, fmt.Errorf("pull %s: %w", src, err)
	}
	tag := ""
	if t, ok := ref.(name.Tag); ok {
		tag = t.String()
	}
	return img, tag, func() {}, nil
}

// tarballImage opens the one image of a `docker save` tarball at path
// (named src in errors) and returns it with its first tag.
func tarballImage(src, path string) (v1.Image, string, error) {
	opener := func() (io.ReadCloser, error) { return os.Open(path) }
	m, err := tarball.LoadManifest(opener)
	if err != nil {
		return nil, "", fmt.Errorf("%s: not a `docker save` tarball: %w", src, err)
	}
	if len(m) != 1 {
		return nil, "", fmt.Errorf("%s: holds %d images; save one image per tarball", src, len(m))
	}
	img, err := tarball.Image(opener, nil)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", src, err)
	}
	tag := ""
	if len(m[0].RepoTags) > 0 {
		tag = m[0].RepoTags[0]
	}
	return img, tag, nil
}

func writeImage(ctx context.Context, img v1.Image, dst, srcTag, tag string, nameOpts []name.Option) (string, error) {
	if !isTarballPath(dst) {
		ref, err := name.ParseReference(dst, nameOpts...)
		if err != nil {
			return "", fmt.Errorf("%q is neither a tarball path nor an image reference: %w", dst, err)
		}
		if err := remote.Write(ref, img, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return "", fmt.Errorf("push %s: %w", dst, err)
		}
		return "", nil
	}
	if tag == "" {
		tag = "pulsar2:edgectl"
		if srcTag != "" {
			tag = srcTag + "-edgectl"
		}
	}
	t, err := name.NewTag(tag, nameOpts...)
	if err != nil {
		return "", fmt.Errorf("--tag %q: %w", tag, err)
	}
	f, err := atomicfile.Create(dst, 0o644)
	if err != nil {
		return "", err
	}
	defer f.Abort()
	var w io.Writer = f.File
	var zw *gzip.Writer
	if l := strings.ToLower(dst); strings.HasSuffix(l, ".gz") || strings.HasSuffix(l, ".tgz") {
		zw = gzip.NewWriter(f.File)
		w = zw
	}
	if err := tarball.Write(t, img, w); err != nil {
		return "", fmt.Errorf("write %s: %w", dst, err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return "", err
		}
	}
	return t.String(), f.Commit()
}

func pathDirs(env []string) []string {
	p := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			p = v
		}
	}
	var out []string
	for _, d := range strings.Split(p, ":") {
		if d = strings.Trim(path.Clean("/"+d), "/"); d != "" {
			out = append(out, d)
		}
	}
	return out
}

// sitePackages matches Python library directories anywhere in the image:
// /usr/lib/python3/dist-packages, /usr/local/lib/python3.X/site-packages,
// conda and venv prefixes.
var sitePackages = regexp.MustCompile(`^(.*/)?lib/python3(\.\d+)?/(site|dist)-packages$`)

// compilerPackages are top-level packages of the pulsar2 compiler; the
// site-packages holding them is the one its Python uses.
var compilerPackages = []string{"yamain", "backend"}

// smallFileLimit bounds what scanImage keeps in memory per file.
const smallFileLimit = 64 << 20

type fileEntry struct {
	hdr  *tar.Header
	data []byte
}

// imageFS is what PatchImage needs to know about an image's filesystem.
type imageFS struct {
	dirs     map[string]*tar.Header // directory headers, path without leading /
	sites    map[string]int         // site-packages dirs → score
	files    map[string]*fileEntry  // files of interest
	pathDirs []string
	pulsar2  string // path of the first pulsar2 on PATH, if any
}

func scanImage(img v1.Image, pathDirs []string) (*imageFS, error) {
	fsi := &imageFS{dirs: map[string]*tar.Header{}, sites: map[string]int{}, files: map[string]*fileEntry{}, pathDirs: pathDirs}
	wanted := map[string]bool{}
	for _, d := range pathDirs {
		wanted[d+"/pulsar2"] = true
		wanted[d+"/pulsar2"+origSuffix] = true
	}
	hasPkg := map[string]bool{}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		p := strings.Trim(path.Clean("/"+h.Name), "/")
		if p == "" {
			continue
		}
		if h.Typeflag == tar.TypeDir {
			fsi.dirs[p] = h
			if sitePackages.MatchString(p) {
				fsi.sites[p] += 0
			}
			continue
		}
		dir := path.Dir(p)
		for d := dir; d != "." && d != "/"; d = path.Dir(d) {
			if sitePackages.MatchString(d) {
				fsi.sites[d] += 0
				rest := strings.TrimPrefix(p, d+"/")
				top, _, _ := strings.Cut(rest, "/")
				for _, pkg := range compilerPackages {
					if top == pkg && strings.Contains(rest, "/") && !hasPkg[d] {
						hasPkg[d] = true
						fsi.sites[d] += 100
					}
				}
				break
			}
		}
		keep := wanted[p] || (path.Base(p) == ShimFileName || path.Base(p) == ShimOrigFileName) && sitePackages.MatchString(dir)
		if !keep {
			continue
		}
		fe := &fileEntry{hdr: h}
		if h.Typeflag == tar.TypeReg {
			if h.Size > smallFileLimit {
				return nil, fmt.Errorf("/%s is %d bytes; edgectl keeps files up to %d bytes when patching", p, h.Size, smallFileLimit)
			}
			if fe.data, err = io.ReadAll(tr); err != nil {
				return nil, err
			}
		}
		fsi.files[p] = fe
	}
	for _, d := range pathDirs {
		if fe, ok := fsi.files[d+"/pulsar2"]; ok && (fe.hdr.Typeflag == tar.TypeReg || fe.hdr.Typeflag == tar.TypeSymlink) {
			fsi.pulsar2 = d + "/pulsar2"
			break
		}
	}
	return fsi, nil
}

// chooseSite picks the site-packages the compiler's Python uses: the one
// holding its packages, else the one under its interpreter's prefix (from
// the pulsar2 script's #! line), else the first by a fixed preference.
func (fsi *imageFS) chooseSite() (string, error) {
	if len(fsi.sites) == 0 {
		return "", errors.New("no Python site-packages or dist-packages directory in the image; is this the pulsar2 image?")
	}
	prefix := ""
	if fe := fsi.files[fsi.pulsar2]; fe != nil && bytes.HasPrefix(fe.data, []byte("#!")) {
		line, _, _ := bytes.Cut(fe.data[2:], []byte("\n"))
		f := strings.Fields(string(line))
		if len(f) > 0 && !strings.HasSuffix(f[0], "/env") {
			prefix = strings.Trim(path.Dir(path.Dir(f[0])), "/") + "/lib/python"
		}
	}
	type cand struct {
		p     string
		score int
	}
	var cs []cand
	for p, s := range fsi.sites {
		if prefix != "" && strings.HasPrefix(p, prefix) {
			s += 50
		}
		if strings.HasSuffix(p, "site-packages") {
			s += 2 // pip's own target beats Debian's dist-packages
		}
		if strings.HasPrefix(p, "usr/local/") || strings.HasPrefix(p, "opt/") {
			s++
		}
		cs = append(cs, cand{p, s})
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].score != cs[j].score {
			return cs[i].score > cs[j].score
		}
		return cs[i].p > cs[j].p // python3.12 before python3.10
	})
	return cs[0].p, nil
}

// epoch is the mtime of everything edgectl adds, so the layer is
// reproducible.
var epoch = time.Unix(0, 0).UTC()

// layer builds the tar of the new layer.
func (fsi *imageFS) layer(site string, shim ShimOptions, res *PatchResult) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	written := map[string]bool{}
	dir := func(p string) error {
		var chain []string
		for d := p; d != "." && d != "" && d != "/"; d = path.Dir(d) {
			chain = append([]string{d}, chain...)
		}
		for _, d := range chain {
			if written[d] {
				continue
			}
			written[d] = true
			// Reuse the image's own header: a directory entry in a new layer
			// replaces the directory's mode and owner.
			h := &tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}
			if ih, ok := fsi.dirs[d]; ok {
				h.Mode, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime = ih.Mode, ih.Uid, ih.Gid, ih.Uname, ih.Gname, ih.ModTime
			}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
		}
		return nil
	}
	file := func(p string, mode int64, data []byte, like *tar.Header) error {
		if err := dir(path.Dir(p)); err != nil {
			return err
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: mode, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}
		if like != nil {
			h.Uid, h.Gid, h.Uname, h.Gname = like.Uid, like.Gid, like.Uname, like.Gname
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(data)
		res.Files = append(res.Files, "/"+p)
		return err
	}

	// The wrapper: keep the image's pulsar2 as pulsar2.edgectl-orig and put
	// a script in its place that enables the shim and forwards.
	wrapperOK := false
	if fsi.pulsar2 != "" {
		orig := fsi.pulsar2 + origSuffix
		cur := fsi.files[fsi.pulsar2]
		already := cur.hdr.Typeflag == tar.TypeReg && bytes.Contains(cur.data, []byte(wrapperMarker))
		switch {
		case already && fsi.files[orig] != nil:
			// Patched before: the original is in place; refresh the wrapper only.
		case already:
			return nil, fmt.Errorf("/%s is an edgectl wrapper but /%s is missing; patch the unpatched image instead", fsi.pulsar2, orig)
		case cur.hdr.Typeflag == tar.TypeSymlink:
			if err := dir(path.Dir(orig)); err != nil {
				return nil, err
			}
			h := &tar.Header{Typeflag: tar.TypeSymlink, Name: orig, Linkname: cur.hdr.Linkname, Mode: 0o777, ModTime: epoch, Format: tar.FormatPAX}
			if err := tw.WriteHeader(h); err != nil {
				return nil, err
			}
			res.Files = append(res.Files, "/"+orig)
		default:
			if err := file(orig, cur.hdr.Mode, cur.data, cur.hdr); err != nil {
				return nil, err
			}
		}
		shim.Gate = ShimGate
		wrapper := fmt.Sprintf(`#!/bin/sh
%s (edgectl pulsar2 image patch): runs the image's
# pulsar2 with the edgectl sitecustomize shim in %s enabled.
%s=1
export %s
: "${FLOAT_MATMUL_USE_CONV_EU:=1}"
export FLOAT_MATMUL_USE_CONV_EU
exec /%s "$@"
`, wrapperMarker, "/"+site, ShimGate, ShimGate, orig)
		if err := file(fsi.pulsar2, 0o755, []byte(wrapper), cur.hdr); err != nil {
			return nil, err
		}
		res.Wrapper, res.Original = "/"+fsi.pulsar2, "/"+orig
		wrapperOK = true
	}
	if !wrapperOK {
		res.Warnings = append(res.Warnings, fmt.Sprintf("no pulsar2 on the image's PATH (%s): installed the shim ungated, for every Python program in the image", strings.Join(fsi.pathDirs, ":")))
	}

	// The shim, keeping the image's own sitecustomize.py for it to chain to.
	sc := site + "/" + ShimFileName
	if fe := fsi.files[sc]; fe != nil && fe.hdr.Typeflag == tar.TypeReg && !IsShim(fe.data) {
		if err := file(site+"/"+ShimOrigFileName, fe.hdr.Mode, fe.data, fe.hdr); err != nil {
			return nil, err
		}
	}
	if err := file(sc, 0o644, ShimSource(shim), nil); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
