package serve

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// How a model found on disk is named. People know models by their Hub
// repository, not by the commit hash a Hugging Face cache keeps them under
// or the OUT/ directory prep wrote, so:
//
//   - NAME=PATH on --models names the model at PATH NAME;
//   - a directory inside a Hub cache snapshot (…/models--ORG--NAME/snapshots/<commit>)
//     is named NAME, and ORG/NAME is accepted as an alias;
//   - a prep output (a directory holding prep's manifest.json) is named
//     after the manifest's source: the repository's NAME (alias ORG/NAME)
//     or the source directory's name; the output directory's own name is
//     an alias too;
//   - anything else after its file or directory name.
//
// Names are lower-cased with tag "latest", as Ollama's are.

// modelSpec is one --models value.
type modelSpec struct {
	name string // given with NAME=PATH; "" to name what is found
	path string
}

// specName is what NAME=PATH accepts as NAME: Ollama's [NAMESPACE/]NAME[:TAG].
var specName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)?(:[a-z0-9][a-z0-9._-]*)?$`)

// ParseModelSpec splits a --models value into the name it gives (or "")
// and the path. A value that exists on disk is a path, '=' and all; any
// other value with a valid model name before its first '=' is NAME=PATH
// (so "qwen=./a=b" names the directory "./a=b"); the rest is a path.
func ParseModelSpec(s string) (name, path string) {
	if _, err := os.Stat(s); err == nil {
		return "", s
	}
	if n, p, ok := strings.Cut(s, "="); ok && p != "" && specName.MatchString(strings.ToLower(n)) {
		return n, p
	}
	return "", s
}

func parseSpecs(vals []string) []modelSpec {
	out := make([]modelSpec, 0, len(vals))
	for _, v := range vals {
		n, p := ParseModelSpec(v)
		out = append(out, modelSpec{name: n, path: p})
	}
	return out
}

// foundName names what probe found at path: its name and the other names
// Lookup accepts for it.
func foundName(path string, isDir bool) (string, []string) {
	if isDir {
		if org, name, ok := hubSnapshotRepo(path); ok {
			return repoNames(org, name)
		}
		if org, name, ok := prepSource(path); ok {
			// The directory the user gave prep -o stays a name too.
			n, aliases := repoNames(org, name)
			if d := nameFor(path); d != n {
				aliases = append(aliases, d)
			}
			return n, aliases
		}
	} else if org, name, ok := prepSource(filepath.Dir(path)); ok {
		return repoNames(org, name)
	}
	return nameFor(path), nil
}

// repoNames is NAME, with ORG/NAME as an alias when there is an org.
func repoNames(org, name string) (string, []string) {
	n := safeName(name)
	if org == "" {
		return canonical(n), nil
	}
	return canonical(n), []string{canonical(safeName(org) + "/" + n)}
}

func safeName(s string) string {
	return strings.Trim(nameSafe.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// hubSnapshotRepo recognizes CACHE/models--ORG--NAME/snapshots/<commit> (the
// layout huggingface_hub and `edgectl pull` write) and returns the repo.
func hubSnapshotRepo(dir string) (org, name string, ok bool) {
	dir = filepath.Clean(dir)
	commit := filepath.Base(dir)
	snaps := filepath.Dir(dir)
	if !commitHex.MatchString(commit) || filepath.Base(snaps) != "snapshots" {
		return "", "", false
	}
	return repoFolder(filepath.Base(filepath.Dir(snaps)))
}

var commitHex = regexp.MustCompile(`^[0-9a-f]{40}$`)

// repoFolder splits a cache folder name, models--ORG--NAME or models--NAME
// (Hub ids cannot hold "--", so the split is unambiguous).
func repoFolder(folder string) (org, name string, ok bool) {
	rest, ok := strings.CutPrefix(folder, "models--")
	if !ok || rest == "" {
		return "", "", false
	}
	parts := strings.Split(rest, "--")
	switch {
	case len(parts) == 1:
		return "", parts[0], true
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return parts[0], parts[1], true
	}
	return "", "", false
}

// hubRepoSnapshot is the snapshot to serve from a cache folder
// models--ORG--NAME: the one refs/main points at, else the newest.
func hubRepoSnapshot(folder string) (string, bool) {
	if _, _, ok := repoFolder(filepath.Base(filepath.Clean(folder))); !ok {
		return "", false
	}
	snaps := filepath.Join(folder, "snapshots")
	if b, err := readSmall(filepath.Join(folder, "refs", "main"), 64); err == nil {
		if c := strings.TrimSpace(string(b)); commitHex.MatchString(c) {
			if fi, err := os.Stat(filepath.Join(snaps, c)); err == nil && fi.IsDir() {
				return filepath.Join(snaps, c), true
			}
		}
	}
	ents, err := os.ReadDir(snaps)
	if err != nil {
		return "", false
	}
	type snap struct {
		dir string
		mod int64
	}
	var all []snap
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && e.IsDir() && commitHex.MatchString(e.Name()) {
			all = append(all, snap{filepath.Join(snaps, e.Name()), fi.ModTime().UnixNano()})
		}
	}
	if len(all) == 0 {
		return "", false
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mod > all[j].mod })
	return all[0].dir, true
}

// The file name and schema of prep's manifest (prep/manifest.go). serve
// reads only the source from it; names_test.go writes one with prep itself
// so the two stay in step.
const (
	prepManifestName   = "manifest.json"
	prepManifestSchema = "edgectl.prep.manifest/v1"
	maxManifestBytes   = 16 << 20
)

// prepSource returns the source a prep output in dir was built from: the
// Hub repository (ORG and NAME) or the source directory's name.
func prepSource(dir string) (org, name string, ok bool) {
	b, err := readSmall(filepath.Join(dir, prepManifestName), maxManifestBytes)
	if err != nil {
		return "", "", false
	}
	var m struct {
		Schema string `json:"schema"`
		Source struct {
			Repo string `json:"repo"`
			Dir  string `json:"dir"`
		} `json:"source"`
	}
	if json.Unmarshal(b, &m) != nil || m.Schema != prepManifestSchema {
		return "", "", false
	}
	if m.Source.Repo != "" {
		org, name, _ := strings.Cut(m.Source.Repo, "/")
		if name == "" {
			org, name = "", org
		}
		if safeName(name) != "" {
			return org, name, true
		}
	}
	if safeName(m.Source.Dir) != "" {
		return "", m.Source.Dir, true
	}
	return "", "", false
}

// readSmall reads a regular file of at most limit bytes.
func readSmall(path string, limit int64) ([]byte, error) {
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return nil, os.ErrInvalid // a FIFO would block the open
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > limit {
		return nil, os.ErrInvalid
	}
	return io.ReadAll(io.LimitReader(f, limit))
}
