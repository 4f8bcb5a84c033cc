package pulsar2

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

const (
	testSite       = "usr/local/lib/python3.10/site-packages"
	origPulsar2    = "#!/usr/local/bin/python3.10\nfrom yamain.main import main\nmain()\n"
	origSiteCust   = "import sys\nsys.stderr.write('image sitecustomize ran\\n')\n"
	debianSite     = "usr/lib/python3/dist-packages"
	condaDecoySite = "opt/other/lib/python3.12/site-packages"
)

type tfile struct {
	name string
	mode int64
	body string
	dir  bool
	link string
}

func tarLayer(t *testing.T, files []tfile) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: time.Unix(1700000000, 0), Typeflag: tar.TypeReg, Size: int64(len(f.body))}
		switch {
		case f.dir:
			h.Typeflag, h.Size = tar.TypeDir, 0
		case f.link != "":
			h.Typeflag, h.Size, h.Linkname = tar.TypeSymlink, 0, f.link
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f.body))
	}
	tw.Close()
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// baseImage is random layers plus one with a fake compiler install: its
// packages in /usr/local/lib/python3.10/site-packages (a directory with a
// non-default mode, to see it kept), an own sitecustomize.py, decoy
// site-packages elsewhere, and a pulsar2 console script on PATH.
func baseImage(t *testing.T, withPulsar2 bool) v1.Image {
	t.Helper()
	img, err := random.Image(2048, 2)
	if err != nil {
		t.Fatal(err)
	}
	files := []tfile{
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/lib/", mode: 0o755, dir: true},
		{name: "usr/local/lib/python3.10/", mode: 0o755, dir: true},
		{name: testSite + "/", mode: 0o2775, dir: true},
		{name: testSite + "/yamain/__init__.py", mode: 0o644},
		{name: testSite + "/sitecustomize.py", mode: 0o640, body: origSiteCust},
		{name: debianSite + "/apt_pkg.py", mode: 0o644},
		{name: condaDecoySite + "/numpy/__init__.py", mode: 0o644},
	}
	if withPulsar2 {
		files = append(files, tfile{name: "usr/local/bin/pulsar2", mode: 0o755, body: origPulsar2})
	}
	img, err = mutate.Append(img, mutate.Addendum{Layer: tarLayer(t, files), History: v1.History{CreatedBy: "pip install pulsar2"}})
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.Config.Env = []string{"PATH=/opt/other/bin:/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}
	cf.Config.WorkingDir = "/data"
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

type layerEntry struct {
	hdr  *tar.Header
	body string
}

func readLayer(t *testing.T, l v1.Layer) map[string]layerEntry {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]layerEntry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[strings.TrimSuffix(h.Name, "/")] = layerEntry{h, string(b)}
	}
	return out
}

// checkPatched compares the patched image with its base: old layers and
// config unchanged, one new layer with the shim and the wrapper.
func checkPatched(t *testing.T, base, patched v1.Image, sameDigests bool) map[string]layerEntry {
	t.Helper()
	bl, _ := base.Layers()
	pl, err := patched.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(pl) != len(bl)+1 {
		t.Fatalf("%d layers, want %d", len(pl), len(bl)+1)
	}
	for i := range bl {
		bd, _ := bl[i].DiffID()
		pd, _ := pl[i].DiffID()
		if bd != pd {
			t.Errorf("layer %d diff_id %s, was %s", i, pd, bd)
		}
		if sameDigests {
			bg, _ := bl[i].Digest()
			pg, _ := pl[i].Digest()
			if bg != pg {
				t.Errorf("layer %d digest %s, was %s", i, pg, bg)
			}
		}
	}
	bc, _ := base.ConfigFile()
	pc, _ := patched.ConfigFile()
	trimmed := pc.DeepCopy()
	trimmed.RootFS.DiffIDs = trimmed.RootFS.DiffIDs[:len(bc.RootFS.DiffIDs)]
	trimmed.History = trimmed.History[:len(bc.History)]
	if !reflect.DeepEqual(trimmed, bc) {
		t.Errorf("config changed beyond diff_ids/history:\nbase    %+v\npatched %+v", bc, trimmed)
	}
	if h := pc.History[len(pc.History)-1]; !strings.Contains(h.CreatedBy, "edgectl pulsar2 image patch") || h.EmptyLayer {
		t.Errorf("new history entry %+v", h)
	}
	return readLayer(t, pl[len(pl)-1])
}

func checkNewLayer(t *testing.T, files map[string]layerEntry) {
	t.Helper()
	want := map[string]int64{
		testSite + "/sitecustomize.py":       0o644,
		testSite + "/" + ShimOrigFileName:    0o640,
		"usr/local/bin/pulsar2":              0o755,
		"usr/local/bin/pulsar2" + origSuffix: 0o755,
		testSite:                             0o2775, // the image's own mode, kept
		"usr/local/lib/python3.10":           0o755,
	}
	for p, mode := range want {
		e, ok := files[p]
		if !ok {
			t.Errorf("new layer lacks %s; has %v", p, keys(files))
			continue
		}
		if e.hdr.Mode&0o7777 != mode {
			t.Errorf("%s mode %o, want %o", p, e.hdr.Mode, mode)
		}
	}
	shim := files[testSite+"/sitecustomize.py"].body
	if !IsShim([]byte(shim)) || !strings.Contains(shim, `"gate": "`+ShimGate+`"`) || !strings.Contains(shim, `"relax_groupn": True`) {
		t.Errorf("shim in the layer is not a gated edgectl shim:\n%.300s", shim)
	}
	if files[testSite+"/"+ShimOrigFileName].body != origSiteCust {
		t.Error("image's sitecustomize.py not kept for chaining")
	}
	if files["usr/local/bin/pulsar2"+origSuffix].body != origPulsar2 {
		t.Error("original pulsar2 not kept")
	}
	w := files["usr/local/bin/pulsar2"].body
	if !strings.Contains(w, "exec /usr/local/bin/pulsar2"+origSuffix+` "$@"`) || !strings.Contains(w, ShimGate+"=1") {
		t.Errorf("wrapper does not forward with the gate set:\n%s", w)
	}
	for p, e := range files {
		if e.hdr.Typeflag != tar.TypeDir && !e.hdr.ModTime.Equal(epoch) {
			t.Errorf("%s mtime %v, want the fixed epoch (a reproducible layer)", p, e.hdr.ModTime)
		}
	}
}

func keys(m map[string]layerEntry) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestPatchImageRegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	base := baseImage(t, true)
	src, dst := host+"/axera/pulsar2:5.2", host+"/axera/pulsar2:5.2-edgectl"
	ref, _ := name.ParseReference(src)
	if err := remote.Write(ref, base, remote.WithContext(context.Background())); err != nil {
		t.Fatal(err)
	}
	res, err := PatchImage(context.Background(), src, dst, PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.SitePackages != "/"+testSite || res.Wrapper != "/usr/local/bin/pulsar2" {
		t.Errorf("site %s wrapper %s", res.SitePackages, res.Wrapper)
	}
	dref, _ := name.ParseReference(dst)
	patched, err := remote.Image(dref)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := patched.Digest(); d.String() != res.Digest {
		t.Errorf("pushed digest %s, result says %s", d, res.Digest)
	}
	checkNewLayer(t, checkPatched(t, base, patched, true))

	// The source is untouched, and patching again is stable and keeps the
	// image's original pulsar2 (not the wrapper) as the forward target.
	if _, err := remote.Image(ref); err != nil {
		t.Fatal(err)
	}
	res2, err := PatchImage(context.Background(), dst, host+"/axera/pulsar2:twice", PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tref, _ := name.ParseReference(host + "/axera/pulsar2:twice")
	twice, _ := remote.Image(tref)
	files := checkPatched(t, patched, twice, true)
	if _, ok := files["usr/local/bin/pulsar2"+origSuffix]; ok {
		t.Error("re-patch overwrote the kept original")
	}
	if _, ok := files[testSite+"/"+ShimOrigFileName]; ok {
		t.Error("re-patch saved the edgectl shim as the image's own sitecustomize")
	}
	if len(res2.Files) != 2 {
		t.Errorf("re-patch layer files %v, want the wrapper and the shim", res2.Files)
	}
	// The flattened filesystem has the wrapper on top.
	rc := mutate.Extract(twice)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatal("wrapper not in the flattened filesystem")
		}
		if h.Name == "usr/local/bin/pulsar2" {
			b, _ := io.ReadAll(tr)
			if !strings.Contains(string(b), wrapperMarker) {
				t.Error("flattened pulsar2 is not the wrapper")
			}
			break
		}
	}
}

func TestPatchImageTarball(t *testing.T) {
	dir := t.TempDir()
	base := baseImage(t, true)
	tag, _ := name.NewTag("pulsar2:5.2")
	src := filepath.Join(dir, "ax_pulsar2_5.2.tar")
	if err := tarball.WriteToFile(src, tag, base); err != nil {
		t.Fatal(err)
	}
	// docker load takes the vendor's .tar.gz as it is; so does patch.
	gz := src + ".gz"
	raw, _ := os.ReadFile(src)
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write(raw)
	zw.Close()
	os.WriteFile(gz, zb.Bytes(), 0o644)

	for _, in := range []string{src, gz} {
		out := filepath.Join(dir, filepath.Base(in)+"-patched.tar")
		res, err := PatchImage(context.Background(), in, out, PatchOptions{Shim: ShimOptions{AliasLambert: true}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Tag != "pulsar2:5.2-edgectl" {
			t.Errorf("tag %q", res.Tag)
		}
		m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(out) })
		if err != nil || len(m) != 1 || len(m[0].RepoTags) != 1 || m[0].RepoTags[0] != "pulsar2:5.2-edgectl" {
			t.Fatalf("manifest %+v, %v", m, err)
		}
		patched, err := tarball.ImageFromPath(out, nil)
		if err != nil {
			t.Fatal(err)
		}
		files := checkPatched(t, base, patched, false)
		if s := files[testSite+"/sitecustomize.py"].body; !strings.Contains(s, `"alias_lambert": True`) || !strings.Contains(s, `"relax_groupn": False`) {
			t.Errorf("hooks not as asked:\n%.400s", s)
		}
	}
	if b, _ := os.ReadFile(src); !bytes.Equal(b, raw) {
		t.Error("source tarball modified")
	}
}

// Without a pulsar2 on PATH the shim is installed ungated and the result
// says so; an image without Python is refused with a clear error.
func TestPatchImageWithoutPulsar2OrPython(t *testing.T) {
	dir := t.TempDir()
	tag, _ := name.NewTag("pulsar2:5.2")
	src := filepath.Join(dir, "a.tar")
	tarball.WriteToFile(src, tag, baseImage(t, false))
	res, err := PatchImage(context.Background(), src, filepath.Join(dir, "b.tar"), PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Wrapper != "" || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "ungated") {
		t.Errorf("wrapper %q warnings %q", res.Wrapper, res.Warnings)
	}
	bare, _ := random.Image(512, 1)
	tarball.WriteToFile(src, tag, bare)
	if _, err := PatchImage(context.Background(), src, filepath.Join(dir, "c.tar"), PatchOptions{}); err == nil || !strings.Contains(err.Error(), "no Python site-packages") {
		t.Errorf("image without Python: %v", err)
	}
	if fileExists(filepath.Join(dir, "c.tar")) {
		t.Error("output written for a refused image")
	}
}

// The shim as installed by image patch, run by python3 from the new layer's
// files: gated on EDGECTL_PULSAR2_SHIM like the wrapper sets it, and
// chaining to the image's own sitecustomize.py either way.
func TestPatchedLayerShimRuns(t *testing.T) {
	needPython3(t)
	dir := t.TempDir()
	tag, _ := name.NewTag("pulsar2:5.2")
	src := filepath.Join(dir, "a.tar")
	base := baseImage(t, true)
	tarball.WriteToFile(src, tag, base)
	out := filepath.Join(dir, "b.tar")
	if _, err := PatchImage(context.Background(), src, out, PatchOptions{Shim: ShimOptions{RelaxGroupN: true}}); err != nil {
		t.Fatal(err)
	}
	patched, _ := tarball.ImageFromPath(out, nil)
	layers, _ := patched.Layers()
	root := filepath.Join(dir, "root")
	for p, e := range readLayer(t, layers[len(layers)-1]) {
		if e.hdr.Typeflag == tar.TypeReg {
			os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
			os.WriteFile(filepath.Join(root, p), []byte(e.body), 0o644)
		}
	}
	site := filepath.Join(root, testSite)
	writeTree(t, site, map[string]string{
		"yamain/__init__.py":    "",
		"yamain/conv_common.py": "def get_group_info(n):\n    assert False, 'invalid groupN %d' % n\n",
	})
	script := "import json\nfrom yamain.conv_common import get_group_info\ntry:\n    r = list(get_group_info(3))\nexcept AssertionError:\n    r = 'raised'\nprint(json.dumps({'r': r}))\n"
	for _, c := range []struct {
		env  []string
		want any
	}{{nil, "raised"}, {[]string{ShimGate + "=1"}, []any{0, 0}}} {
		py, _ := exec.LookPath("python3")
		res, stderr := runPy(t, py, []string{site}, c.env, script)
		wantEqual(t, res, "r", c.want)
		if !strings.Contains(stderr, "image sitecustomize ran") {
			t.Errorf("the image's own sitecustomize.py did not run (env %v):\n%s", c.env, stderr)
		}
	}
}
