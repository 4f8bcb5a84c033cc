package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/internal/testmodel"
)

// TestBadInputOneLineExit1NoOutput feeds each command broken checkpoints and
// checks the error is one line naming the file and the fault, the exit code
// is 1, and nothing is left behind (no output dir, no temp files).
func TestBadInputOneLineExit1NoOutput(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good")
	testmodel.Write(good, testmodel.Spec{Omit: func(n string) bool { return n == "model.norm.weight" }})
	shard := filepath.Join(good, "model.safetensors")
	raw, _ := os.ReadFile(shard)
	hlen := binary.LittleEndian.Uint64(raw)

	overlap := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`
	cases := []struct {
		name  string
		shard []byte
		cfg   []byte
		fault string
		file  string
	}{
		{"truncated safetensors", raw[:len(raw)-100], nil, "file ends at byte", "model.safetensors"},
		{"header length past EOF", append(testmodel.U64(hlen+1<<20), raw[8:]...), nil, "runs past the end of the file", "model.safetensors"},
		{"overlapping offsets", append(append(testmodel.U64(uint64(len(overlap))), overlap...), make([]byte, 12)...), nil, "overlaps the previous tensor", "model.safetensors"},
		{"non-UTF-8 JSON header", append(append(testmodel.U64(9), "{\"\xc3\x28\":1}"...), 0), nil, "not valid UTF-8", "model.safetensors"},
		{"non-UTF-8 config", nil, []byte("{\"model_type\": \"\xff\"}"), "not valid UTF-8", "config.json"},
		{"no config", nil, []byte("DELETE"), "no such file", "config.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "in")
			testmodel.Write(dir, testmodel.Spec{Omit: func(n string) bool { return n == "model.norm.weight" }})
			if c.shard != nil {
				os.WriteFile(filepath.Join(dir, "model.safetensors"), c.shard, 0o644)
			}
			if string(c.cfg) == "DELETE" {
				os.Remove(filepath.Join(dir, "config.json"))
			} else if c.cfg != nil {
				os.WriteFile(filepath.Join(dir, "config.json"), c.cfg, 0o644)
			}
			for _, args := range [][]string{
				{"patch", "layernorm", dir, "-o", filepath.Join(parent, "out")},
				{"patch", "config", dir, "-o", filepath.Join(parent, "out")},
				{"inspect", dir},
			} {
				if c.file == "model.safetensors" && args[1] == "config" {
					continue // patch config does not read weights
				}
				code, stdout, stderr := runCLI(t, args...)
				msg := strings.TrimSpace(stderr)
				if code != 1 || strings.Count(msg, "\n") != 0 || !strings.Contains(msg, c.fault) || !strings.Contains(msg, filepath.Join(dir, c.file)) {
					t.Errorf("%v: exit %d, stderr %q (want one line naming %s and %q)", args, code, msg, c.file, c.fault)
				}
				if stdout != "" {
					t.Errorf("%v: stdout %q", args, stdout)
				}
				entries, _ := os.ReadDir(parent)
				if len(entries) != 1 {
					var names []string
					for _, e := range entries {
						names = append(names, e.Name())
					}
					t.Errorf("%v left output behind: %v", args, names)
				}
			}
		})
	}
}

func TestPatchNeedsADestination(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	testmodel.Write(dir, testmodel.Spec{})
	code, _, stderr := runCLI(t, "patch", "config", dir)
	if code != 2 || !strings.Contains(stderr, "--in-place") {
		t.Fatalf("exit %d %q", code, stderr)
	}
	if code, _, _ := runCLI(t, "patch", "config"); code != 2 {
		t.Fatalf("missing arg: exit %d", code)
	}
	if code, _, _ := runCLI(t, "patch", "config", dir, "--bogus"); code != 2 {
		t.Fatalf("unknown flag: exit %d", code)
	}
}
