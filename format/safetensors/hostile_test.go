package safetensors

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Red-team inputs: sizes read from a file that would allocate or address
// far more than the file holds.
func TestHostileSizesAreFormatErrors(t *testing.T) {
	cases := []struct {
		name string
		file []byte
		want string
	}{
		// A 2^40-byte header length in a tiny file: no 1 TB allocation.
		{"header length 2^40", append(u64(1<<40), []byte("{}")...), "exceeds"},
		{"header length 2^64-1", append(u64(^uint64(0)), make([]byte, 8)...), "exceeds"},
		{"offsets past the end", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,1099511627776]}}`, make([]byte, 4)), "needs 4 bytes"},
		{"offsets near 2^57", rawFile(`{"a":{"dtype":"U8","shape":[144115188075855871],"data_offsets":[0,144115188075855871]}}`, nil), "file ends at byte"},
		{"shape overflows", rawFile(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, nil), "too large to address"},
		{"zero dim hides huge ones", rawFile(`{"a":{"dtype":"F32","shape":[0,4611686018427387904,4611686018427387904],"data_offsets":[0,0]}}`, nil), "too large to address"},
		{"offset not an integer", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,1e30]}}`, nil), "entry is not"},
		{"negative dim", rawFile(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, make([]byte, 4)), "negative dimension"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeTemp(t, "bad.safetensors", c.file)
			_, err := Open(p)
			var fe *FormatError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), p+": byte ") {
				t.Fatalf("error %v: want a FormatError naming the file and byte offset, containing %q", err, c.want)
			}
		})
	}
	// A zero-element tensor of modest shape is still fine.
	p := writeTemp(t, "ok.safetensors", rawFile(`{"a":{"dtype":"F32","shape":[0,1024],"data_offsets":[0,0]}}`, nil))
	if f, err := Open(p); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
}

// shardDir writes a one-shard checkpoint with the given weight_map, two
// levels below a temporary root (so "../../x" stays in the test's files).
func shardDir(t *testing.T, weightMap string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "hub", "model")
	os.MkdirAll(dir, 0o755)
	var buf bytes.Buffer
	Write(&buf, nil, []Source{{Name: "a", DType: U8, Shape: []int64{1}, WriteTo: FromBytes([]byte{1})},
		{Name: "b", DType: U8, Shape: []int64{1}, WriteTo: FromBytes([]byte{2})}})
	os.WriteFile(filepath.Join(dir, "model.safetensors"), buf.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, IndexName), []byte(`{"metadata":{"total_size":2},"weight_map":`+weightMap+`}`), 0o644)
	return dir
}

// openCheckpointWithin fails instead of hanging when an open blocks.
func openCheckpointWithin(t *testing.T, dir string) (*Checkpoint, error) {
	t.Helper()
	type result struct {
		c   *Checkpoint
		err error
	}
	done := make(chan result, 1)
	go func() { c, err := OpenCheckpoint(dir); done <- result{c, err} }()
	select {
	case r := <-done:
		return r.c, r.err
	case <-time.After(10 * time.Second):
		t.Fatalf("OpenCheckpoint(%s) blocked", dir)
		return nil, nil
	}
}

func TestIndexEntriesMustStayInsideTheModelDirectory(t *testing.T) {
	for _, shard := range []string{"../../fifo", "../model.safetensors", "/etc/passwd", "", "sub/../../x.safetensors"} {
		t.Run(shard, func(t *testing.T) {
			dir := shardDir(t, `{"a":"model.safetensors","b":`+quote(shard)+`}`)
			// A FIFO where "../../fifo" points: the old reader blocked on it forever.
			syscall.Mkfifo(filepath.Join(dir, "..", "..", "fifo"), 0o644)
			_, err := openCheckpointWithin(t, dir)
			if err == nil || !strings.Contains(err.Error(), IndexName) || !strings.Contains(err.Error(), `weight_map["b"]`) ||
				!strings.Contains(err.Error(), "inside") {
				t.Fatalf("error %v: want the index, the entry and the rule named", err)
			}
		})
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

func TestIndexEntryNamingAFIFOInsideIsRefusedWithoutBlocking(t *testing.T) {
	dir := shardDir(t, `{"a":"model.safetensors","b":"shard.safetensors"}`)
	if err := syscall.Mkfifo(filepath.Join(dir, "shard.safetensors"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	_, err := openCheckpointWithin(t, dir)
	if err == nil || !strings.Contains(err.Error(), "shard.safetensors is a named pipe (FIFO), not a regular file") {
		t.Fatalf("error %v", err)
	}
	// A FIFO matched by the no-index glob is refused the same way.
	os.Remove(filepath.Join(dir, IndexName))
	if _, err := openCheckpointWithin(t, dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("glob: %v", err)
	}
}

func TestIndexEntryNamingADirectoryOrDeviceIsRefused(t *testing.T) {
	dir := shardDir(t, `{"a":"model.safetensors","b":"sub.safetensors"}`)
	os.Mkdir(filepath.Join(dir, "sub.safetensors"), 0o755)
	if _, err := openCheckpointWithin(t, dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("directory: %v", err)
	}
	os.Remove(filepath.Join(dir, "sub.safetensors"))
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "sub.safetensors")); err != nil {
		t.Fatal(err)
	}
	if _, err := openCheckpointWithin(t, dir); err == nil || !strings.Contains(err.Error(), "a device, not a regular file") {
		t.Fatalf("device: %v", err)
	}
}

func TestIndexItselfAsAFIFOIsRefused(t *testing.T) {
	dir := shardDir(t, `{}`)
	os.Remove(filepath.Join(dir, IndexName))
	if err := syscall.Mkfifo(filepath.Join(dir, IndexName), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if _, err := openCheckpointWithin(t, dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("error %v", err)
	}
}

// The Hugging Face cache: snapshot entries are symlinks into ../../blobs/.
// Following them to regular files is allowed, for the index and shards.
func TestIndexAndShardsMayBeSymlinksToRegularFiles(t *testing.T) {
	src := shardDir(t, `{"a":"model-00001-of-00001.safetensors","b":"model-00001-of-00001.safetensors"}`)
	root := t.TempDir()
	blobs, snap := filepath.Join(root, "blobs"), filepath.Join(root, "snapshots", "rev")
	os.MkdirAll(blobs, 0o755)
	os.MkdirAll(snap, 0o755)
	for blob, name := range map[string]string{"b1": "model.safetensors", "b2": IndexName} {
		b, _ := os.ReadFile(filepath.Join(src, name))
		os.WriteFile(filepath.Join(blobs, blob), b, 0o644)
	}
	os.Symlink("../../blobs/b1", filepath.Join(snap, "model-00001-of-00001.safetensors"))
	os.Symlink("../../blobs/b2", filepath.Join(snap, IndexName))
	c, err := openCheckpointWithin(t, snap)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if f, tn, ok := c.Lookup("b"); !ok || tn.Size() != 1 || f == nil {
		t.Fatalf("lookup b: %v", ok)
	}
}

// Shards in a subdirectory are local names too, and the index check
// compares the whole relative name.
func TestIndexShardInSubdirectory(t *testing.T) {
	dir := shardDir(t, `{"a":"w/model.safetensors","b":"w/model.safetensors"}`)
	os.Mkdir(filepath.Join(dir, "w"), 0o755)
	os.Rename(filepath.Join(dir, "model.safetensors"), filepath.Join(dir, "w", "model.safetensors"))
	c, err := openCheckpointWithin(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}
