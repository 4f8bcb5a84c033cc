// Package artifact is the one home of an artifact directory's record: the
// manifest.json that lists every file with its size and sha256, the
// hashing that fills it, and the whole-directory swap that publishes a
// finished directory. prep writes artifacts with it; prep/oci pushes and
// pulls them with it, without depending on the pipeline that made them.
package artifact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ManifestName is the file at the root of an artifact directory.
const ManifestName = "manifest.json"

// ManifestSchema names the manifest's layout; a reader refuses others.
const ManifestSchema = "edgectl.prep.manifest/v1"

// Manifest describes an artifact directory: what it was built from, how,
// and every file's digest. It holds no timestamps, host names or absolute
// paths, so identical inputs and options give identical bytes.
type Manifest struct {
	Schema         string `json:"schema"`
	EdgectlVersion string `json:"edgectl_version"`
	Target         string `json:"target"`
	Source         Source `json:"source"`
	// Options are the run's options as the pipeline encoded them
	// (canonical JSON of its options struct): recorded, never interpreted
	// here.
	Options json.RawMessage `json:"options"`
	// Key is the cache key of the whole pipeline: equal keys mean equal files.
	Key   string       `json:"key"`
	Steps []StepRecord `json:"steps"`
	Files []FileEntry  `json:"files"`
}

// Source says where the checkpoint came from.
type Source struct {
	// Repo and Commit for a Hugging Face source; Revision as asked.
	Repo     string `json:"repo,omitempty"`
	Revision string `json:"revision,omitempty"`
	Commit   string `json:"commit,omitempty"`
	// Dir (base name only) and TreeSHA256 for a local directory.
	Dir        string `json:"dir,omitempty"`
	TreeSHA256 string `json:"tree_sha256,omitempty"`
}

// StepRecord is one pipeline step as the manifest keeps it.
type StepRecord struct {
	Name string `json:"name"`
	Key  string `json:"key"`
	// Options are exactly the bytes the step's cache key hashed: the
	// canonical JSON of its options struct.
	Options  json.RawMessage `json:"options,omitempty"`
	Findings []Finding       `json:"findings"`
}

// Finding is something a step noticed or changed: a doctor verdict, a
// config fix, a norm tensor added.
type Finding struct {
	Severity string `json:"severity"` // info, fixed, warning, fixable, blocking, fatal
	Code     string `json:"code"`
	Message  string `json:"message"`
	Evidence string `json:"evidence,omitempty"`
	Fix      string `json:"fix,omitempty"`
}

// FileEntry is one file of the directory (manifest.json itself excluded).
type FileEntry struct {
	Path   string `json:"path"` // slash-separated, relative to the directory
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Marshal encodes m canonically: fixed field order, raw options
// re-indented (their key order is the writer's), two-space indent,
// trailing newline.
func (m *Manifest) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ReadManifest reads and checks dir/manifest.json.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestName)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseManifest(b, path)
}

// ParseManifest decodes a manifest, naming where it came from in errors.
func ParseManifest(b []byte, where string) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: not a prep manifest: %v", where, err)
	}
	if m.Schema != ManifestSchema {
		return nil, fmt.Errorf("%s: schema %q, want %q: written by another tool or edgectl version", where, m.Schema, ManifestSchema)
	}
	for _, f := range m.Files {
		if err := CheckPath(f.Path); err != nil {
			return nil, fmt.Errorf("%s: file %q: %v", where, f.Path, err)
		}
		if len(f.SHA256) != 64 {
			return nil, fmt.Errorf("%s: file %q: sha256 %q is not 64 hex digits", where, f.Path, f.SHA256)
		}
	}
	return &m, nil
}

// CheckPath refuses a file path, as a manifest or a registry names it,
// that would land outside the artifact directory: it must be relative,
// slash-separated, without empty, . or .. elements.
func CheckPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return errors.New("not a relative slash path")
	}
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." || part == ".." {
			return errors.New("has an empty, . or .. element")
		}
	}
	return nil
}

// Verify checks that dir holds exactly the manifest's files with their
// sizes and digests (manifest.json itself aside).
func (m *Manifest) Verify(dir string) error {
	names, err := ListFiles(dir)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, f := range m.Files {
		want[f.Path] = true
		sum, size, err := HashFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			return err
		}
		if size != f.Size || sum != f.SHA256 {
			return fmt.Errorf("%s: size %d sha256 %s, manifest says size %d sha256 %s: the file was changed after prep wrote it", filepath.Join(dir, f.Path), size, sum, f.Size, f.SHA256)
		}
	}
	for _, n := range names {
		if n != ManifestName && !want[n] {
			return fmt.Errorf("%s: file not listed in %s", filepath.Join(dir, n), ManifestName)
		}
	}
	return nil
}
