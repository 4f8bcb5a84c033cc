package prep

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ManifestName is the file prep writes at the root of OUT/.
const ManifestName = "manifest.json"

// ManifestSchema names the manifest's layout; a reader refuses others.
const ManifestSchema = "edgectl.prep.manifest/v1"

// Manifest describes an OUT/ directory: what it was built from, how, and
// every file's digest. It holds no timestamps, host names or absolute
// paths, so identical inputs and options give identical bytes.
type Manifest struct {
	Schema         string         `json:"schema"`
	EdgectlVersion string         `json:"edgectl_version"`
	Target         string         `json:"target"`
	Source         Source         `json:"source"`
	Options        map[string]any `json:"options"`
	// Key is the cache key of the whole pipeline: equal keys mean equal OUT/.
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

// StepRecord is one step as the manifest keeps it.
type StepRecord struct {
	Name     string         `json:"name"`
	Key      string         `json:"key"`
	Options  map[string]any `json:"options,omitempty"`
	Findings []Finding      `json:"findings"`
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

// FileEntry is one file of OUT/ (manifest.json itself excluded).
type FileEntry struct {
	Path   string `json:"path"` // slash-separated, relative to OUT/
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Marshal encodes m canonically: fixed field order, sorted map keys,
// two-space indent, trailing newline.
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
		if err := checkRelPath(f.Path); err != nil {
			return nil, fmt.Errorf("%s: file %q: %v", where, f.Path, err)
		}
		if len(f.SHA256) != 64 {
			return nil, fmt.Errorf("%s: file %q: sha256 %q is not 64 hex digits", where, f.Path, f.SHA256)
		}
	}
	return &m, nil
}

// checkRelPath refuses paths that would escape the artifact directory.
func checkRelPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return errors.New("not a relative slash path")
	}
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." || part == ".." {
			return errors.New("path has an empty, . or .. element")
		}
	}
	return nil
}

// HashFile returns the sha256 (hex) and size of the file at path.
func HashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// listFiles returns every regular file under dir (following a symlinked
// file, as the Hub cache's snapshots are), as sorted slash paths.
func listFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		if d.Type()&fs.ModeSymlink != 0 {
			st, err := os.Stat(path)
			if err != nil {
				return fmt.Errorf("%s: broken symlink: %w", path, err)
			}
			if st.IsDir() {
				return fmt.Errorf("%s: symlink to a directory is not supported", path)
			}
			if !st.Mode().IsRegular() {
				return nil // a FIFO or device would block or never end: not model data
			}
		} else if !d.Type().IsRegular() {
			return nil
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	sort.Strings(out)
	return out, err
}

// HashTree lists dir's files with their sizes and digests, skipping the
// names in skip (top-level only).
func HashTree(dir string, skip ...string) ([]FileEntry, error) {
	names, err := listFiles(dir)
	if err != nil {
		return nil, err
	}
	files := make([]FileEntry, 0, len(names))
	for _, n := range names {
		if contains(skip, n) {
			continue
		}
		sum, size, err := HashFile(filepath.Join(dir, filepath.FromSlash(n)))
		if err != nil {
			return nil, err
		}
		files = append(files, FileEntry{Path: n, Size: size, SHA256: sum})
	}
	return files, nil
}

// TreeDigest is one sha256 over a file list: paths, sizes and digests.
func TreeDigest(files []FileEntry) string {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00%s\n", f.Path, f.Size, f.SHA256)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Verify checks that dir holds exactly the manifest's files with their
// sizes and digests (manifest.json itself aside).
func (m *Manifest) Verify(dir string) error {
	names, err := listFiles(dir)
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
