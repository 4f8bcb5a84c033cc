package rknnchain

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func chain() *Manifest {
	x := []TensorInfo{{Name: "x", Type: "FLOAT", Shape: []int{1, 4, 8}, Scale: 0.125}}
	h := []TensorInfo{{Name: "h", Type: "FLOAT", Shape: []int{1, 4, 8}, Scale: 0.125}}
	y := []TensorInfo{{Name: "y", Type: "FLOAT", Shape: []int{1, 4, 8}, Scale: 1}}
	return &Manifest{Schema: ManifestSchema, Source: "m.onnx", InputScale: 0.125, OutputScale: 1, Inputs: x, Outputs: y, Cores: 3, Barrier: "pill",
		Budget: Budget{SRAMKB: 32, Bytes: 32768}, Build: BuildConfig{TargetPlatform: "rk3588", FloatDType: "float16", DisableRules: []string{}},
		Shards: []ShardEntry{{File: "shard_00.onnx", Core: 0, Inputs: x, Outputs: h}, {File: "shard_01.onnx", Core: 1, Inputs: h, Outputs: y}}}
}

// TestWriteReadRoundTrip: what Write writes, Read returns field for
// field, before and after a build adds the .rknn entries.
func TestWriteReadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	m := chain()
	for _, built := range []bool{false, true} {
		if built {
			for i := range m.Shards {
				m.Shards[i].RKNN, m.Shards[i].RKNNSHA256, m.Shards[i].RKNNToolkit = strings.Replace(m.Shards[i].File, ".onnx", ".rknn", 1), strings.Repeat("ab", 32), "2.3.2"
			}
		}
		if err := Write(dir, m); err != nil {
			t.Fatal(err)
		}
		got, err := Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, m) || got.Built() != built {
			t.Fatalf("built=%v: read back %+v", built, got)
		}
	}
}

// TestReadRefuses: each inconsistency is refused with the field named.
func TestReadRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		edit func(*Manifest)
		want string
	}{
		"file outside":       {func(m *Manifest) { m.Shards[0].File = "../x.onnx" }, "shards[0].file"},
		"core":               {func(m *Manifest) { m.Shards[1].Core = 3 }, "shards[1].core"},
		"input from nowhere": {func(m *Manifest) { m.Shards[1].Inputs = []TensorInfo{{Name: "z", Type: "FLOAT"}} }, `reads "z"`},
		"half built":         {func(m *Manifest) { m.Shards[1].RKNN, m.Shards[1].RKNNSHA256 = "shard_01.rknn", strings.Repeat("0", 64) }, "all of them or none"},
		"rknn outside": {func(m *Manifest) {
			for i := range m.Shards {
				m.Shards[i].RKNN, m.Shards[i].RKNNSHA256 = "/etc/x.rknn", strings.Repeat("0", 64)
			}
		}, "shards[0].rknn"},
		"bad digest": {func(m *Manifest) {
			for i := range m.Shards {
				m.Shards[i].RKNN, m.Shards[i].RKNNSHA256 = "s.rknn", "XYZ"
			}
		}, "rknn_sha256"},
	} {
		t.Run(name, func(t *testing.T) {
			m := chain()
			c.edit(m)
			dir := t.TempDir()
			if err := Write(dir, m); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Write: %v, want %q", err, c.want)
			}
			// Read checks a hand-written file the same way.
			os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"schema": 1, "shards": []}`), 0o644)
			if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "no shards") {
				t.Fatalf("Read: %v", err)
			}
		})
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"schema": 1, "surprise": 1}`), 0o644)
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "surprise") {
		t.Fatalf("unknown field: %v", err)
	}
}
