package mmapfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestSliceReleaseAndBounds(t *testing.T) {
	p := filepath.Join(t.TempDir(), "w.bin")
	data := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB, several pages
	os.WriteFile(p, data, 0o644)
	f, err := Open(p, "a weight file")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := f.Slice(5000, 20000)
	if err != nil || !bytes.Equal(b, data[5000:25000]) {
		t.Fatalf("slice: %v", err)
	}
	f.Release(0, f.Size())
	// Pages dropped from the resident set read back from the file.
	if !bytes.Equal(b, data[5000:25000]) {
		t.Fatal("released pages did not read back")
	}
	if _, err := f.Slice(60000, 10000); err == nil {
		t.Fatal("slice past EOF accepted")
	}
	if _, err := Open(t.TempDir(), "a weight file"); err == nil {
		t.Fatal("opened a directory")
	}
}
