package main

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/edgectl/edgectl/artifact"
	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/axcl"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/hub"
	"github.com/edgectl/edgectl/serve"
)

// The models on this machine, as `ls` lists them and `rm` finds them: the
// Hugging Face cache (hub.ScanCache: every revision, blobs counted once),
// and what serve would find in its model directories (serve's registry,
// which asks the engines' Probe what each path is), each either a prep
// output (an artifact directory: artifact.ReadManifest) or a plain model.
// A model directory that is, or lies in, a Hub cache is listed as that
// cache. This file only puts the libraries' answers together.

// Where a local model lives.
const (
	sourceHub  = "hub-cache"
	sourcePrep = "prep"
	sourceDir  = "dir"
)

// localModel is one row of `ls`.
type localModel struct {
	Name     string    `json:"name"`   // ORG/NAME in the Hub cache; serve's name otherwise
	Source   string    `json:"source"` // hub-cache, prep or dir
	Revision string    `json:"revision,omitempty"`
	Commit   string    `json:"commit,omitempty"`
	Refs     []string  `json:"refs,omitempty"`
	Target   string    `json:"target,omitempty"` // prep: what it was built for
	Format   string    `json:"format"`           // what the engine that runs it says; "" when none does
	Lane     string    `json:"lane,omitempty"`
	Size     int64     `json:"size"` // bytes on disk (a Hub revision: its blobs, each once)
	Modified time.Time `json:"modified"`
	Path     string    `json:"path"`
	// ServeNames are the names serve answers to for it (ps and the API).
	ServeNames []string `json:"serve_names,omitempty"`

	cache string // hub-cache: the cache directory
	root  string // prep, dir: the models directory it was found in ("" when it was given itself)
}

// cacheSummary is one Hub cache in `ls --json`.
type cacheSummary struct {
	Dir          string `json:"dir"`
	Repos        int    `json:"repos"`
	SizeOnDisk   int64  `json:"size_on_disk"`
	Unreferenced int64  `json:"unreferenced,omitempty"`
}

// localModels is `ls --json`.
type localModels struct {
	Models   []localModel   `json:"models"`
	Caches   []cacheSummary `json:"hub_caches"`
	Dirs     []string       `json:"dirs"`
	Size     int64          `json:"size"` // on disk, every file once
	Warnings []string       `json:"warnings,omitempty"`
}

// probeEngines are the engines serve asks what a path is (serve.go builds
// the same set with their runtime options, which Probe does not use).
func probeEngines() map[string]engine.Engine {
	return map[string]engine.Engine{serve.LaneCPU: cpu.New(), serve.LaneAxcl: axcl.New(axcl.Options{})}
}

// findLocal lists the models in the Hub cache (HF_HUB_CACHE, as pull uses
// it) and in the model directories dirs (serve's --models values).
func findLocal(dirs []string) (*localModels, error) {
	out := &localModels{Models: []localModel{}, Caches: []cacheSummary{}, Dirs: []string{}}
	caches := []string{hub.FromEnv().CacheDir}
	var specs, roots []string
	for _, d := range dirs {
		_, p := serve.ParseModelSpec(d)
		p = filepath.Clean(p)
		if _, err := os.Stat(p); err != nil {
			if _, _, isHub := hubRef(p); !isHub { // a Hub id is in the cache, listed there
				out.Warnings = append(out.Warnings, "models dir "+p+": "+err.Error())
			}
			continue
		}
		if root, ok := inHubCache(p); ok { // a repository folder or a snapshot
			caches = addCache(caches, root)
			continue
		}
		if holdsHubRepos(p) { // a cache as a models dir: its repositories are listed from the cache
			caches = addCache(caches, absPath(p))
		}
		spec := absPath(p) // paths in ls are absolute: rm takes them as ls prints them
		if name, _ := serve.ParseModelSpec(d); name != "" {
			spec = name + "=" + spec
		}
		specs, roots = append(specs, spec), append(roots, absPath(p))
		out.Dirs = append(out.Dirs, absPath(p))
	}
	seen := &fileSet{}
	engines := probeEngines()
	if len(specs) > 0 {
		out.Warnings = append(out.Warnings, serve.NewRegistry(specs, engines, nil).Warnings()...) // names serve gives twice
		byPath := map[string]int{}
		for _, e := range servable(specs, engines) {
			if root, ok := inHubCache(e.Path); ok {
				caches = addCache(caches, root)
				continue
			}
			m := localModel{Name: e.Name, Source: sourceDir, Format: e.Details.Format, Lane: e.Lane, Path: e.Path,
				ServeNames: append([]string{e.Name}, e.Aliases...)}
			if dir, man := prepOutput(e.Path); man != nil {
				m.Source, m.Path, m.Target, m.Revision = sourcePrep, dir, man.Target, prepSourceOf(man)
			}
			if i, dup := byPath[m.Path]; dup { // two models in one prep output, or one dir given twice
				o := &out.Models[i]
				o.Format = joinNew(o.Format, m.Format)
				o.ServeNames = appendNew(o.ServeNames, m.ServeNames...)
				continue
			}
			byPath[m.Path] = len(out.Models)
			out.Models = append(out.Models, m)
		}
		out.Models = append(out.Models, unservedPrep(out.Dirs, byPath)...)
		for i := range out.Models {
			m := &out.Models[i]
			m.root = rootOf(roots, m.Path)
			m.Size, m.Modified = seen.size(m.Path, caches)
		}
	}
	for _, c := range caches {
		info, err := hub.ScanCache(c)
		if err != nil {
			return nil, err
		}
		out.Warnings = append(out.Warnings, info.Warnings...)
		s := cacheSummary{Dir: c, Repos: len(info.Repos), SizeOnDisk: info.SizeOnDisk}
		for _, r := range info.Repos {
			s.Unreferenced += r.Unreferenced
			for _, rev := range r.Revisions {
				out.Models = append(out.Models, hubRow(c, r, rev, engines))
			}
		}
		out.Caches = append(out.Caches, s)
		out.Size += info.SizeOnDisk
	}
	out.Size += seen.total
	slices.SortStableFunc(out.Models, func(a, b localModel) int {
		if (a.Source == sourceHub) != (b.Source == sourceHub) { // the Hub cache first, as ls prints it
			if a.Source == sourceHub {
				return -1
			}
			return 1
		}
		return cmp.Or(strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)), b.Modified.Compare(a.Modified))
	})
	return out, nil
}

// servable is every model serve finds in the model dirs specs, named as
// serve names it. serve's registry finds them (through the engines' Probe)
// but serves only the first of two models with one name; ls lists both,
// so each entry of a models directory is asked about on its own, to the
// depth serve looks: the entry, or the files directly in it.
func servable(specs []string, engines map[string]engine.Engine) []*serve.Entry {
	var out []*serve.Entry
	for _, spec := range specs {
		name, p := serve.ParseModelSpec(spec)
		all := serve.NewRegistry([]string{spec}, engines, nil).List()
		if name != "" || slices.ContainsFunc(all, func(e *serve.Entry) bool { return filepath.Clean(e.Path) == filepath.Clean(p) }) {
			out = append(out, all...) // the spec is one model
			continue
		}
		ents, _ := os.ReadDir(p)
		for _, de := range ents {
			c := filepath.Join(p, de.Name())
			for _, e := range serve.NewRegistry([]string{c}, engines, nil).List() {
				_, inHub := inHubCache(e.Path)
				if fi, err := os.Stat(e.Path); e.Path == c || inHub || (err == nil && !fi.IsDir() && filepath.Dir(e.Path) == c) {
					out = append(out, e)
				}
			}
		}
	}
	return out
}

// hubRow is one revision of a cached repository, described by the engines
// as serve would describe its snapshot directory.
func hubRow(cache string, r hub.CachedRepo, rev hub.CachedRevision, engines map[string]engine.Engine) localModel {
	m := localModel{Name: r.Repo, Source: sourceHub, Commit: rev.Commit, Refs: rev.Refs, Size: rev.Size,
		Modified: rev.Modified, Path: rev.Path, cache: cache}
	m.Revision = rev.Commit[:12]
	if len(rev.Refs) > 0 {
		m.Revision = strings.Join(rev.Refs, ",")
	}
	for _, e := range serve.NewRegistry([]string{rev.Path}, engines, nil).List() {
		m.Format, m.Lane = joinNew(m.Format, e.Details.Format), joinNew(m.Lane, e.Lane)
		m.ServeNames = appendNew(m.ServeNames, append([]string{e.Name}, e.Aliases...)...)
	}
	return m
}

// prepOutput is the artifact directory path is (or is a file of), with its
// manifest.
func prepOutput(path string) (string, *artifact.Manifest) {
	for _, d := range []string{path, filepath.Dir(path)} {
		if m, err := artifact.ReadManifest(d); err == nil {
			return d, m
		}
	}
	return "", nil
}

// prepSourceOf says what a prep output was built from: ORG/NAME@commit or
// the source directory's name.
func prepSourceOf(m *artifact.Manifest) string {
	if m.Source.Repo != "" {
		if len(m.Source.Commit) >= 12 {
			return m.Source.Repo + "@" + m.Source.Commit[:12]
		}
		return m.Source.Repo
	}
	return m.Source.Dir
}

// unservedPrep finds prep outputs in the model directories (or given as
// one) that no engine claims, so ls still shows them and rm can remove them.
func unservedPrep(dirs []string, listed map[string]int) []localModel {
	var out []localModel
	for _, d := range dirs {
		cands := []string{d}
		if ents, err := os.ReadDir(d); err == nil {
			for _, e := range ents {
				if e.IsDir() {
					cands = append(cands, filepath.Join(d, e.Name()))
				}
			}
		}
		for _, c := range cands {
			man, err := artifact.ReadManifest(c)
			if _, ok := listed[c]; ok || err != nil {
				continue
			}
			listed[c] = -1
			out = append(out, localModel{Name: filepath.Base(c), Source: sourcePrep, Path: c, Target: man.Target, Revision: prepSourceOf(man)})
		}
	}
	return out
}

// inHubCache reports the Hub cache a path lies in: …/CACHE/models--ORG--NAME
// or anything below it.
func inHubCache(path string) (string, bool) {
	for d := absPath(path); filepath.Dir(d) != d; d = filepath.Dir(d) {
		if strings.HasPrefix(filepath.Base(d), "models--") {
			if fi, err := os.Stat(filepath.Join(d, "snapshots")); err == nil && fi.IsDir() {
				return filepath.Dir(d), true
			}
		}
	}
	return "", false
}

// addCache adds a Hub cache to the list unless it is there under another
// spelling (HF_HUB_CACHE through a symlink, say).
func addCache(caches []string, c string) []string {
	if slices.ContainsFunc(caches, func(o string) bool { return resolved(absPath(o)) == resolved(c) }) {
		return caches
	}
	return append(caches, c)
}

// holdsHubRepos reports whether dir is a Hub cache: models--*/snapshots in it.
func holdsHubRepos(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "models--*", "snapshots"))
	return len(m) > 0
}

// rootOf is the models directory (a --dir value) path was found in: the
// longest that holds it. A path given itself has none.
func rootOf(roots []string, path string) string {
	best := ""
	p := absPath(path)
	for _, r := range roots {
		if p != r && strings.HasPrefix(p, r+string(filepath.Separator)) && len(r) > len(best) {
			best = r
		}
	}
	return best
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}

// appendNew appends the values of vs that list does not hold yet.
func appendNew(list []string, vs ...string) []string {
	for _, v := range vs {
		if v != "" && !slices.Contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}

// joinNew adds v to a comma-separated list unless it is there.
func joinNew(list, v string) string {
	if v == "" || slices.Contains(strings.Split(list, ","), v) {
		return list
	}
	if list == "" {
		return v
	}
	return list + "," + v
}

// fileSet counts bytes on disk, each file once: a model directory whose
// files are links (into another model, or into a Hub cache) adds to its own
// size what it links to, and to the total only what no other row counts.
type fileSet struct {
	bySize map[int64][]os.FileInfo
	total  int64
}

// size walks path (a file or directory; links to files followed) and
// returns its bytes and newest modification time, adding to the total the
// files not seen before and not in one of the Hub caches (counted there).
func (s *fileSet) size(path string, caches []string) (int64, time.Time) {
	if s.bySize == nil {
		s.bySize = map[int64][]os.FileInfo{}
	}
	var n int64
	var mod time.Time
	own := &fileSet{bySize: map[int64][]os.FileInfo{}}
	walkRoot := path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		walkRoot = r // a model directory that is a link: what it links to
	}
	var cacheRoots []string
	for _, c := range caches {
		cacheRoots = append(cacheRoots, absPath(c), resolved(c))
	}
	inCache := func(p string) bool { return rootOf(cacheRoots, p) != "" }
	filepath.WalkDir(walkRoot, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || !own.add(fi) {
			return nil
		}
		n += fi.Size()
		if fi.ModTime().After(mod) {
			mod = fi.ModTime()
		}
		r := p
		if d.Type()&os.ModeSymlink != 0 {
			r, _ = filepath.EvalSymlinks(p)
		}
		if !inCache(r) && s.add(fi) {
			s.total += fi.Size()
		}
		return nil
	})
	return n, mod
}

// add reports whether fi is a file the set has not seen, and records it.
func (s *fileSet) add(fi os.FileInfo) bool {
	for _, o := range s.bySize[fi.Size()] {
		if os.SameFile(o, fi) {
			return false
		}
	}
	s.bySize[fi.Size()] = append(s.bySize[fi.Size()], fi)
	return true
}
