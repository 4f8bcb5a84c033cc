package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/edgectl/edgectl/engine/axcl"
	"github.com/edgectl/edgectl/engine/upstream"
	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/serve/api"
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
	Name          string // "name:latest"
	Path          string // directory, file, or upstream.Path(name)
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
	dirs      []string
	upstreams []upstream.Config

	mu      sync.RWMutex
	entries map[string]*Entry
	warn    []string
}

// NewRegistry scans dirs once.
func NewRegistry(dirs []string, ups []upstream.Config) *Registry {
	r := &Registry{dirs: dirs, upstreams: ups}
	r.Rescan()
	return r
}

// Rescan rebuilds the model list from disk.
func (r *Registry) Rescan() {
	entries := map[string]*Entry{}
	var warn []string
	add := func(e *Entry) {
		if old, dup := entries[e.Name]; dup {
			warn = append(warn, fmt.Sprintf("%s and %s are both named %q; serving the first", old.Path, e.Path, e.Name))
			return
		}
		entries[e.Name] = e
	}
	for _, d := range r.dirs {
		if e := probe(d); e != nil {
			add(e)
			continue
		}
		ents, err := os.ReadDir(d)
		if err != nil {
			warn = append(warn, fmt.Sprintf("models dir %s: %v", d, err))
			continue
		}
		for _, de := range ents {
			p := filepath.Join(d, de.Name())
			if e := probe(p); e != nil {
				add(e)
				continue
			}
			if de.IsDir() { // one level down: a folder holding a .gguf / .h1b
				sub, _ := os.ReadDir(p)
				for _, s := range sub {
					if e := probe(filepath.Join(p, s.Name())); e != nil && !s.IsDir() {
						add(e)
					}
				}
			}
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
	r.mu.Lock()
	r.entries, r.warn = entries, warn
	r.mu.Unlock()
}

// Warnings are problems the last scan found (duplicates, unreadable dirs).
func (r *Registry) Warnings() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]string(nil), r.warn...)
}

// Lookup finds a model by name, with or without ":latest". A miss triggers
// one rescan, so models copied in while serving are found.
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
	e, ok := r.entries[canonical(name)]
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
	e := &Entry{Name: nameFor(path), Path: path, Modified: fi.ModTime()}
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
