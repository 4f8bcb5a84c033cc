package oci

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/internal/errkind"
)

// A pull that cannot fit stops before the first layer with exit 14, naming
// the sizes and the directory; nothing is written.
func TestPullChecksFreeSpace(t *testing.T) {
	_, host := newRegistry(t)
	tmp := t.TempDir()
	out := buildOut(t, tmp)
	res, err := Push(context.Background(), out, host+"/m/tiny:1", anon)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(tmp, "device", "tiny")
	o := anon
	o.FreeSpace = func(string) (int64, bool) { return 4096, true }
	_, err = Pull(context.Background(), res.Ref, dst, o)
	want := fmt.Sprintf("(%d bytes) in %s, which has 4.0 KiB free", res.Bytes+manifestSize(t, out), filepath.Dir(dst))
	if errkind.Of(err) != errkind.DiskFull || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v (kind %v), want exit 14 with %q", err, errkind.Of(err), want)
	}
	if es, _ := os.ReadDir(filepath.Dir(dst)); len(es) != 0 {
		t.Errorf("a refused pull wrote %d entries", len(es))
	}
}

func manifestSize(t *testing.T, out string) int64 {
	fi, err := os.Stat(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// A layer whose tar entry is larger than its annotated size is refused at
// the entry's header: a small layer that inflates past what the manifest
// promised never reaches the disk.
func TestPullRefusesEntryLargerThanAnnounced(t *testing.T) {
	_, host := newRegistry(t)
	tmp := t.TempDir()
	out := buildOut(t, tmp)
	img, _, err := Build(out, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ref := pushForged(t, img, host+"/m/inflated:1", func(anns map[string]string) {
		if anns[AnnotationTitle] == "model.safetensors" {
			anns[AnnotationFileSize] = "1000"
		}
	})
	dst := filepath.Join(tmp, "pulled")
	_, err = Pull(context.Background(), ref.String(), dst, anon)
	if !errors.Is(err, errkind.Checksum) || !strings.Contains(err.Error(), "model.safetensors: its tar entry is 2626168 bytes, annotated 1000") {
		t.Fatalf("err = %v", err)
	}
	if _, serr := os.Stat(dst); !os.IsNotExist(serr) {
		t.Error("a rejected pull left the target directory")
	}
	if es, _ := os.ReadDir(tmp); len(es) != 2 { // cache and OUT
		t.Errorf("staging left behind: %d entries in %s", len(es), tmp)
	}
}
