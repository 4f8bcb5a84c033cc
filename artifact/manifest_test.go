package artifact

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeArtifact writes files and a manifest listing them into dir.
func writeArtifact(t *testing.T, dir string, files map[string]string) *Manifest {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(body), 0o644))
	}
	list, err := HashTree(dir)
	must(t, err)
	m := &Manifest{Schema: ManifestSchema, Target: "cpu", Key: strings.Repeat("a", 64),
		Options: json.RawMessage(`{"target":"cpu","format":"x"}`), Files: list,
		Steps: []StepRecord{{Name: "import", Key: "k", Options: json.RawMessage(`{}`), Findings: []Finding{}}}}
	b, err := m.Marshal()
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, ManifestName), b, 0o644))
	return m
}

// HashTree lists every file, in subdirectories too, with the digest the
// test computes itself; the manifest's options come back byte for byte
// (in the writer's key order), so a read and a rewrite change nothing.
func TestManifestRoundTripAndHashes(t *testing.T) {
	dir := t.TempDir()
	m := writeArtifact(t, dir, map[string]string{"config.json": "{}", "sub/model.bin": "weights"})
	if len(m.Files) != 2 || m.Files[0].Path != "config.json" || m.Files[1].Path != "sub/model.bin" {
		t.Fatalf("files %+v", m.Files)
	}
	sum := sha256.Sum256([]byte("weights"))
	if f := m.Files[1]; f.Size != 7 || f.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("entry %+v, want size 7 sha256 %x", f, sum)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, ManifestName))
	back, err := ReadManifest(dir)
	must(t, err)
	again, err := back.Marshal()
	must(t, err)
	if !bytes.Equal(raw, again) {
		t.Errorf("rewrite changed the manifest:\n%s\nvs\n%s", raw, again)
	}
	if !strings.Contains(string(raw), `"target": "cpu",`+"\n    "+`"format": "x"`) {
		t.Errorf("options lost their order:\n%s", raw)
	}
	must(t, back.Verify(dir))
	if TreeDigest(back.Files) != TreeDigest(m.Files) || TreeDigest(back.Files[:1]) == TreeDigest(m.Files) {
		t.Error("TreeDigest does not follow the file list")
	}
}

// Verify names a changed file and a file the manifest does not list.
func TestVerifyFindsEdits(t *testing.T) {
	dir := t.TempDir()
	m := writeArtifact(t, dir, map[string]string{"a.bin": "aaaa"})
	must(t, os.WriteFile(filepath.Join(dir, "a.bin"), []byte("aaab"), 0o644))
	if err := m.Verify(dir); err == nil || !strings.Contains(err.Error(), "a.bin") || !strings.Contains(err.Error(), "changed after prep wrote it") {
		t.Errorf("edited file: %v", err)
	}
	must(t, os.WriteFile(filepath.Join(dir, "a.bin"), []byte("aaaa"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "extra.txt"), nil, 0o644))
	if err := m.Verify(dir); err == nil || !strings.Contains(err.Error(), "extra.txt: file not listed") {
		t.Errorf("extra file: %v", err)
	}
}

// A manifest whose paths would leave the directory, or whose digests are
// not digests, or of another schema, is refused with where it came from.
func TestParseManifestRefuses(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"schema":"other/v9"}`, "schema"},
		{`{"schema":"` + ManifestSchema + `","files":[{"path":"../etc/passwd","size":1,"sha256":"` + strings.Repeat("0", 64) + `"}]}`, ".. element"},
		{`{"schema":"` + ManifestSchema + `","files":[{"path":"/abs","size":1,"sha256":"` + strings.Repeat("0", 64) + `"}]}`, "relative slash path"},
		{`{"schema":"` + ManifestSchema + `","files":[{"path":"a","size":1,"sha256":"00"}]}`, "64 hex digits"},
		{`[`, "not a prep manifest"},
	} {
		_, err := ParseManifest([]byte(c.body), "REG/x:1")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "REG/x:1: ") {
			t.Errorf("%s: err = %v, want one mentioning %q", c.body, err, c.want)
		}
	}
}
