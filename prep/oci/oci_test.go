package oci

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/artifact"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/testmodel"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/edgectl/edgectl/prep"
)

// anon keeps tests away from the developer's docker credentials.
var anon = Options{Keychain: authn.NewMultiKeychain()}

func newRegistry(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return srv, u.Host
}

// buildOut runs prep on the repository's tiny Llama to get a real OUT/.
func buildOut(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "OUT")
	_, err := prep.Run(context.Background(), nil, prep.Options{
		Source: "../../testdata/models/tinystories-656k", Target: prep.TargetCPU,
		Out: out, CacheDir: filepath.Join(dir, "cache"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, a, b string) {
	t.Helper()
	ta, tb := testmodel.ReadTree(t, a), testmodel.ReadTree(t, b)
	if len(ta) != len(tb) {
		t.Fatalf("%s has %d files, %s has %d", a, len(ta), b, len(tb))
	}
	for k, v := range ta {
		if !bytes.Equal(v, tb[k]) {
			t.Errorf("%s differs", k)
		}
	}
}

func TestPushPullRoundTrip(t *testing.T) {
	_, host := newRegistry(t)
	tmp := t.TempDir()
	out := buildOut(t, tmp)
	ctx := context.Background()

	res, err := Push(ctx, out, "oci://"+host+"/models/tiny:v1", anon)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Ref, host+"/models/tiny@sha256:") || res.Files != 7 {
		t.Errorf("push result %+v", res)
	}

	// What the registry holds: one zstd layer per file, annotated.
	img, err := remote.Image(mustRef(t, host+"/models/tiny:v1"))
	if err != nil {
		t.Fatal(err)
	}
	mf, _ := img.Manifest()
	if len(mf.Layers) != 7 || mf.Annotations[AnnotationTarget] != "cpu" || !strings.Contains(mf.Annotations[AnnotationManifest], `"schema":"edgectl.prep.manifest/v1"`) {
		t.Errorf("manifest: %d layers, annotations %v", len(mf.Layers), mf.Annotations)
	}
	for _, l := range mf.Layers {
		if l.MediaType != "application/vnd.oci.image.layer.v1.tar+zstd" || l.Annotations[AnnotationTitle] == "" || len(l.Annotations[AnnotationFileSHA256]) != 64 {
			t.Errorf("layer %+v", l)
		}
	}

	// Any OCI tool can unpack it: go-containerregistry's own flattening
	// (what `crane export` does) yields every file with its bytes.
	rc := mutate.Extract(img)
	tr := tar.NewReader(rc)
	exported := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			exported[h.Name], _ = io.ReadAll(tr)
		}
	}
	rc.Close()
	for name, b := range testmodel.ReadTree(t, out) {
		if !bytes.Equal(exported[name], b) {
			t.Errorf("crane-style export of %s differs", name)
		}
	}

	// Pull by digest (what devices do) and by tag.
	byDigest := filepath.Join(tmp, "device", "tiny")
	pr, err := Pull(ctx, "oci://"+res.Ref, byDigest, anon)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Digest != res.Digest || pr.UpToDate {
		t.Errorf("pull result %+v, pushed %s", pr, res.Digest)
	}
	sameTree(t, out, byDigest)
	byTag := filepath.Join(tmp, "device", "tag")
	if _, err := Pull(ctx, host+"/models/tiny:v1", byTag, anon); err != nil {
		t.Fatal(err)
	}
	sameTree(t, out, byTag)

	// A second pull finds the directory up to date.
	pr, err = Pull(ctx, res.Ref, byDigest, anon)
	if err != nil || !pr.UpToDate {
		t.Fatalf("second pull: %+v, %v", pr, err)
	}
	// No staging directories left beside the target.
	ents, _ := os.ReadDir(filepath.Join(tmp, "device"))
	if len(ents) != 2 {
		t.Errorf("device dir holds %d entries, want 2", len(ents))
	}
}

func TestPushIsReproducible(t *testing.T) {
	_, host := newRegistry(t)
	tmp := t.TempDir()
	a := buildOut(t, filepath.Join(tmp, "a"))
	b := buildOut(t, filepath.Join(tmp, "b"))
	ra, err := Push(context.Background(), a, host+"/m/a:1", anon)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := Push(context.Background(), b, host+"/m/b:1", anon)
	if err != nil {
		t.Fatal(err)
	}
	if ra.Digest != rb.Digest {
		t.Errorf("identical OUT/ pushed as %s and %s", ra.Digest, rb.Digest)
	}
}

// tamperingProxy forwards to the registry but flips one byte in the body
// of the blob whose digest is victim.
func tamperingProxy(t *testing.T, regURL string, victim *string) string {
	u, _ := url.Parse(regURL)
	p := httputil.NewSingleHostReverseProxy(u)
	p.ModifyResponse = func(r *http.Response) error {
		if *victim != "" && r.Request.Method == http.MethodGet && strings.HasSuffix(r.Request.URL.Path, "/blobs/"+*victim) {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 0x01
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		return nil
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	pu, _ := url.Parse(srv.URL)
	return pu.Host
}

func TestPullRejectsTamperedLayer(t *testing.T) {
	reg, host := newRegistry(t)
	var victim string
	proxy := tamperingProxy(t, reg.URL, &victim)
	tmp := t.TempDir()
	out := buildOut(t, tmp)
	res, err := Push(context.Background(), out, host+"/m/tiny:1", anon)
	if err != nil {
		t.Fatal(err)
	}
	img, _ := remote.Image(mustRef(t, res.Ref))
	mf, _ := img.Manifest()
	for _, l := range mf.Layers {
		if l.Annotations[AnnotationTitle] == "model.safetensors" {
			victim = l.Digest.String()
		}
	}
	dst := filepath.Join(tmp, "pulled")
	_, err = Pull(context.Background(), strings.Replace(res.Ref, host, proxy, 1), dst, anon)
	t.Logf("tampered: %v", err)
	if !errors.Is(err, errkind.Checksum) || !strings.Contains(err.Error(), "model.safetensors") {
		t.Fatalf("pull of a tampered layer: %v (kind %v)", err, errkind.Of(err))
	}
	if _, serr := os.Stat(dst); !os.IsNotExist(serr) {
		t.Error("a rejected pull left the target directory")
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 2 { // cache and OUT only
		t.Errorf("staging left behind: %d entries in %s", len(ents), tmp)
	}
}

// A registry can serve a consistent image whose file annotation lies (a
// re-push by someone who edited a file): the file digest check refuses it.
func TestPullRejectsFileNotMatchingAnnotation(t *testing.T) {
	_, host := newRegistry(t)
	tmp := t.TempDir()
	out := buildOut(t, tmp)
	spool := t.TempDir()
	img, _, err := Build(out, spool)
	if err != nil {
		t.Fatal(err)
	}
	// Rebuild it with the tokenizer layer's annotation naming other content.
	ref := pushForged(t, img, host+"/m/forged:1", func(anns map[string]string) {
		if anns[AnnotationTitle] == "tokenizer.json" {
			anns[AnnotationFileSHA256] = strings.Repeat("0", 64)
		}
	})
	dst := filepath.Join(tmp, "pulled")
	_, err = Pull(context.Background(), ref.String(), dst, anon)
	t.Logf("forged: %v", err)
	if !errors.Is(err, errkind.Checksum) || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Fatalf("pull of a forged annotation: %v", err)
	}
	if _, serr := os.Stat(dst); !os.IsNotExist(serr) {
		t.Error("a rejected pull left the target directory")
	}
}

func TestPushRefusesEditedOut(t *testing.T) {
	_, host := newRegistry(t)
	out := buildOut(t, t.TempDir())
	os.WriteFile(filepath.Join(out, "config.json"), []byte("{}"), 0o644)
	_, err := Push(context.Background(), out, host+"/m/x:1", anon)
	if err == nil || !strings.Contains(err.Error(), "config.json") || !strings.Contains(err.Error(), "changed after prep") {
		t.Fatalf("push of an edited OUT: %v", err)
	}
}

func TestPullRefusesForeignDirectory(t *testing.T) {
	_, host := newRegistry(t)
	tmp := t.TempDir()
	out := buildOut(t, tmp)
	res, err := Push(context.Background(), out, host+"/m/x:1", anon)
	if err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(tmp, "mine")
	os.MkdirAll(mine, 0o755)
	os.WriteFile(filepath.Join(mine, "notes.txt"), []byte("keep"), 0o644)
	if _, err := Pull(context.Background(), res.Ref, mine, anon); err == nil || !strings.Contains(err.Error(), "not a prep artifact") {
		t.Fatalf("pull into a foreign dir: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(mine, "notes.txt")); string(b) != "keep" {
		t.Error("foreign directory touched")
	}
}

func TestRegistryAuthFromDockerConfig(t *testing.T) {
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ci" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	out := buildOut(t, t.TempDir())

	cfgDir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", cfgDir)
	os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(`{"auths":{}}`), 0o600)
	_, err := Push(context.Background(), out, host+"/m/x:1", Options{})
	if errkind.Of(err) != errkind.Auth || !strings.Contains(err.Error(), "docker login") {
		t.Fatalf("push without credentials: %v (kind %v)", err, errkind.Of(err))
	}

	auth := base64.StdEncoding.EncodeToString([]byte("ci:s3cret"))
	os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(`{"auths":{"`+host+`":{"auth":"`+auth+`"}}}`), 0o600)
	res, err := Push(context.Background(), out, host+"/m/x:1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "pulled")
	if _, err := Pull(context.Background(), res.Ref, dst, Options{}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, out, dst)
}

func TestPullErrors(t *testing.T) {
	_, host := newRegistry(t)
	dst := filepath.Join(t.TempDir(), "x")
	_, err := Pull(context.Background(), host+"/nope/nothing:1", dst, anon)
	if errkind.Of(err) != errkind.NotFound {
		t.Errorf("missing tag: %v (kind %v)", err, errkind.Of(err))
	}
	if _, err := Pull(context.Background(), "oci://UPPER CASE", dst, anon); err == nil || !strings.Contains(err.Error(), "not an OCI reference") {
		t.Errorf("bad ref: %v", err)
	}
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// An image whose every layer matches its annotation but whose manifest.json
// describes other files (a mixed-up or hand-assembled artifact) is refused.
func TestPullRejectsManifestNotMatchingLayers(t *testing.T) {
	_, host := newRegistry(t)
	tmp := t.TempDir()
	out := buildOut(t, tmp)
	img, _, err := Build(out, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mf, _ := img.Manifest()
	layers, _ := img.Layers()

	// A manifest.json that claims another digest for config.json.
	m, err := artifact.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.Files {
		if m.Files[i].Path == "config.json" {
			m.Files[i].SHA256 = strings.Repeat("ab", 32)
		}
	}
	lie := t.TempDir()
	raw, _ := m.Marshal()
	os.WriteFile(filepath.Join(lie, artifact.ManifestName), raw, 0o644)
	sum, size, _ := artifact.HashFile(filepath.Join(lie, artifact.ManifestName))
	lieLayer, err := spoolLayer(lie, artifact.ManifestName, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	var adds []mutate.Addendum
	for i, l := range layers {
		anns := mf.Layers[i].Annotations
		if anns[AnnotationTitle] == artifact.ManifestName {
			l = lieLayer
			anns = map[string]string{AnnotationTitle: artifact.ManifestName, AnnotationFileSHA256: sum, AnnotationFileSize: strconv.FormatInt(size, 10)}
		}
		adds = append(adds, mutate.Addendum{Layer: l, Annotations: anns})
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	forged, err := mutate.Append(base, adds...)
	if err != nil {
		t.Fatal(err)
	}
	anns := map[string]string{}
	for k, v := range mf.Annotations {
		anns[k] = v
	}
	anns[AnnotationManifestSHA256] = sum
	ref := mustRef(t, host+"/m/mixed:1")
	if err := remote.Write(ref, mutate.Annotations(forged, anns).(v1.Image)); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(tmp, "pulled")
	_, err = Pull(context.Background(), ref.String(), dst, anon)
	if !errors.Is(err, errkind.Checksum) || !strings.Contains(err.Error(), "config.json") {
		t.Fatalf("pull of a mismatched manifest: %v", err)
	}
	if _, serr := os.Stat(dst); !os.IsNotExist(serr) {
		t.Error("a rejected pull left the target directory")
	}
}

// pushForged pushes img again as ref, each layer's annotations passed
// through edit first: a consistent image whose annotations lie.
func pushForged(t *testing.T, img v1.Image, ref string, edit func(anns map[string]string)) name.Reference {
	t.Helper()
	mf, _ := img.Manifest()
	layers, _ := img.Layers()
	var adds []mutate.Addendum
	for i, l := range layers {
		anns := map[string]string{}
		for k, v := range mf.Layers[i].Annotations {
			anns[k] = v
		}
		edit(anns)
		adds = append(adds, mutate.Addendum{Layer: l, Annotations: anns})
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	forged, err := mutate.Append(base, adds...)
	if err != nil {
		t.Fatal(err)
	}
	r := mustRef(t, ref)
	if err := remote.Write(r, mutate.Annotations(forged, mf.Annotations).(v1.Image)); err != nil {
		t.Fatal(err)
	}
	return r
}
