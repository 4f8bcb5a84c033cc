package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine/axcl"
	"github.com/edgectl/edgectl/engine/upstream"
	"github.com/edgectl/edgectl/format/hfconfig"
)

// Lane names of the built-in lanes. Upstreams get "upstream:NAME" unless
// their config groups them.
const (
	LaneCPU  = "cpu"
	LaneAxcl = "axcl"
)

// Entry is one servable model: where it is, which lane runs it, and what
// /api/tags says about it before it is loaded.
type Entry struct {
	Name          string   // "name:latest"
	Aliases       []string // other names Lookup accepts ("org/name:latest" for a Hub repo)
	Path          string   // directory, file, or upstream.Path(name)
	Lane          string
	Engine        string // engine that loads it, when not the lane's own ("upstream" on a shared lane)
	Size          int64  // bytes it will hold while loaded (estimate until loaded)
	Modified      time.Time
	Digest        string
	Details       api.ModelDetails
	ContextLength int
	Arch          string
}

// Registry is the set of models found in the model directories plus the
// configured upstreams. Rescan picks up models added while serving.
type Registry struct {
	specs     []modelSpec
	upstreams []upstream.Config

	mu      sync.RWMutex
	entries map[string]*Entry
	aliases map[string]*Entry
	warn    []string
}

// NewRegistry scans dirs once. Each is a --models value: a directory of
// models, one model, or NAME=PATH (see ParseModelSpec).
func NewRegistry(dirs []string, ups []upstream.Config) *Registry {
	r := &Registry{specs: parseSpecs(dirs), upstreams: ups}
	r.Rescan()
	return r
}

// Rescan rebuilds the model list from disk.
func (r *Registry) Rescan() {
	entries, aliases := map[string]*Entry{}, map[string]*Entry{}
	var warn []string
	add := func(e *Entry) {
		if old, dup := entries[e.Name]; dup {
			warn = append(warn, fmt.Sprintf("%s and %s are both named %q; serving the first (name one with --models NAME=PATH)", old.Path, e.Path, e.Name))
			return
		}
		entries[e.Name] = e
		for _, a := range e.Aliases {
			if _, taken := aliases[a]; !taken {
				aliases[a] = e
			}
		}
	}
	// scanDir adds the models in d and one level below (a folder holding a
	// .gguf / .h1b, or a Hub cache's models--ORG--NAME folder).
	scanDir := func(d string) {
		ents, err := os.ReadDir(d)
		if err != nil {
			warn = append(warn, fmt.Sprintf("models dir %s: %v", d, err))
			return
		}
		for _, de := range ents {
			p := filepath.Join(d, de.Name())
			if snap, ok := hubRepoSnapshot(p); ok && de.IsDir() {
				p = snap
			}
			if e := probe(p); e != nil {
				add(e)
				continue
			}
			if fi, err := os.Stat(p); err == nil && fi.IsDir() {
				sub, _ := os.ReadDir(p)
				for _, s := range sub {
					if e := probe(filepath.Join(p, s.Name())); e != nil && !s.IsDir() {
						add(e)
					}
				}
			}
		}
	}
	for _, sp := range r.specs {
		d := sp.path
		if snap, ok := hubRepoSnapshot(d); ok {
			d = snap // a models--ORG--NAME folder: its current snapshot
		}
		e := probe(d)
		switch {
		case sp.name != "" && e == nil:
			warn = append(warn, fmt.Sprintf("--models %s=%s: %s is not one model (a checkpoint dir, .gguf, .h1b or compiled model dir); NAME=PATH names a single model", sp.name, sp.path, sp.path))
		case sp.name != "":
			e.Name, e.Aliases = canonical(sp.name), nil
			add(e)
		case e != nil:
			add(e)
		default:
			scanDir(d)
		}
	}
	for _, u := range r.upstreams {
		lane := u.Lane
		if lane == "" {
			lane = "upstream:" + u.Name
		}
		add(&Entry{Name: canonical(u.Name), Path: upstream.Path(u.Name), Lane: lane, Engine: "upstream", Size: u.SizeMB << 20,
			Modified: time.Now(), Digest: digest(upstream.Path(u.Name), 0, time.Time{}), ContextLength: u.ContextLength,
			Details: api.ModelDetails{Format: "upstream", Families: []string{}}})
	}
	for a, e := range aliases {
		if _, isName := entries[a]; isName {
			delete(aliases, a) // a model's own name wins over another's alias
			e.Aliases = slices.DeleteFunc(e.Aliases, func(s string) bool { return s == a })
		}
	}
	r.mu.Lock()
	r.entries, r.aliases, r.warn = entries, aliases, warn
	r.mu.Unlock()
}

// Warnings are problems the last scan found (duplicates, unreadable dirs).
func (r *Registry) Warnings() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]string(nil), r.warn...)
}

// Lookup finds a model by name or alias, with or without ":latest". A miss
// triggers one rescan, so models copied in while serving are found.
func (r *Registry) Lookup(name string) (*Entry, bool) {
	if e, ok := r.get(name); ok {
		return e, true
	}
	r.Rescan()
	return r.get(name)
}

func (r *Registry) get(name string) (*Entry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	n := canonical(name)
	if e, ok := r.entries[n]; ok {
		return e, true
	}
	e, ok := r.aliases[n]
	return e, ok
}

// List returns the entries sorted by name.
func (r *Registry) List() []*Entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Entry, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

var nameSafe = regexp.MustCompile(`[^a-z0-9._-]+`)

// canonical is Ollama's model:tag form, tag "latest" by default.
func canonical(name string) string {
	name = strings.ToLower(strings.TrimSpace(name))
	if !strings.Contains(name, ":") {
		name += ":latest"
	}
	return name
}

func nameFor(path string) string {
	base := strings.ToLower(filepath.Base(path))
	base = strings.TrimSuffix(strings.TrimSuffix(base, ".gguf"), ".h1b")
	return canonical(strings.Trim(nameSafe.ReplaceAllString(base, "-"), "-"))
}

// digest identifies a model version for /api/tags: a hash of where it is,
// how big and when it changed (not of its bytes: hashing GiBs at startup
// would make serve slow to start).
func digest(path string, size int64, mod time.Time) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", path, size, mod.UnixNano()))
	return hex.EncodeToString(h[:])
}

// probe recognizes a model at path, or returns nil.
func probe(path string) *Entry {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	e := &Entry{Path: path, Modified: fi.ModTime()}
	switch {
	case !fi.IsDir() && strings.HasSuffix(path, ".gguf"):
		e.Lane, e.Size = LaneCPU, fi.Size()
		e.Details = api.ModelDetails{Format: "gguf", Families: []string{}}
	case !fi.IsDir() && strings.HasSuffix(path, ".h1b"):
		e.Lane, e.Size = LaneCPU, fi.Size()
		e.Details = api.ModelDetails{Format: "h1b", Families: []string{}}
	case fi.IsDir() && axcl.IsModelDir(path):
		e.Lane, e.Size = LaneAxcl, axcl.Footprint(path)
		e.Details = api.ModelDetails{Format: "axmodel", Families: []string{}}
	case fi.IsDir() && isCheckpoint(path):
		e.Lane = LaneCPU
		e.Size = filesSize(path, "*.safetensors")
		e.Details = api.ModelDetails{Format: "safetensors", Families: []string{}}
		if c, err := hfconfig.Load(filepath.Join(path, "config.json")); err == nil {
			t := c.Text()
			e.Arch = t.Arch()
			e.ContextLength = t.MaxPositionEmbeddings
			e.Details.Family = t.ModelType
			if t.ModelType != "" {
				e.Details.Families = []string{t.ModelType}
			}
			e.Details.QuantizationLevel = dtypeLevel(t.WeightDType())
		}
	default:
		return nil
	}
	e.Name, e.Aliases = foundName(path, fi.IsDir()) // only for models: it may read a manifest
	e.Digest = digest(path, e.Size, e.Modified)
	return e
}

func isCheckpoint(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
		return false
	}
	st, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	return len(st) > 0
}

func filesSize(dir, pattern string) int64 {
	var n int64
	ms, _ := filepath.Glob(filepath.Join(dir, pattern))
	for _, m := range ms {
		if fi, err := os.Stat(m); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// dtypeLevel spells a torch dtype the way the engines report quantization.
func dtypeLevel(d string) string {
	switch strings.ToLower(d) {
	case "float32":
		return "F32"
	case "float16":
		return "F16"
	case "bfloat16":
		return "BF16"
	}
	return strings.ToUpper(d)
}
