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
	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/upstream"
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
	probers   []laneProber
	upstreams []upstream.Config

	mu      sync.RWMutex
	entries map[string]*Entry
	aliases map[string]*Entry
	warn    []string
}

// NewRegistry scans dirs once. Each is a --models value: a directory of
// models, one model, or NAME=PATH (see ParseModelSpec). engines maps lane
// names to the engine that runs them (Options.Engines): those implementing
// engine.Prober say which paths are models, and a model runs on the lane of
// the engine that recognized it (see probeOrder).
func NewRegistry(dirs []string, engines map[string]engine.Engine, ups []upstream.Config) *Registry {
	r := &Registry{specs: parseSpecs(dirs), probers: probeOrder(engines), upstreams: ups}
	r.Rescan()
	return r
}

// laneProber is an engine that says what it loads, and its lane.
type laneProber struct {
	lane string
	engine.Prober
}

// probeOrder is the order engines are asked about a path, the first yes
// winning: every lane but the CPU one in name order, then the CPU lane,
// the general-purpose fallback, so a path an accelerator's engine claims
// runs there. (The built-in engines claim disjoint paths: a compiled ax-llm
// directory's config.json is not a Hugging Face one.) Engines that are not
// Probers (the upstream engine) find no models on disk.
func probeOrder(engines map[string]engine.Engine) []laneProber {
	var out []laneProber
	for lane, eng := range engines {
		if p, ok := eng.(engine.Prober); ok {
			out = append(out, laneProber{lane, p})
		}
	}
	slices.SortFunc(out, func(a, b laneProber) int {
		if (a.lane == LaneCPU) != (b.lane == LaneCPU) {
			if a.lane == LaneCPU {
				return 1
			}
			return -1
		}
		return strings.Compare(a.lane, b.lane)
	})
	return out
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
			if e := r.probe(p); e != nil {
				add(e)
				continue
			}
			if fi, err := os.Stat(p); err == nil && fi.IsDir() {
				sub, _ := os.ReadDir(p)
				for _, s := range sub {
					if e := r.probe(filepath.Join(p, s.Name())); e != nil && !s.IsDir() {
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
		e := r.probe(d)
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

// probe asks the engines, in probeOrder, what the model at path is, and
// returns nil when none runs it.
func (r *Registry) probe(path string) *Entry {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	for _, p := range r.probers {
		f, ok := p.Probe(path)
		if !ok {
			continue
		}
		e := &Entry{Path: path, Modified: fi.ModTime(), Lane: p.lane, Size: f.Size, Arch: f.Arch, ContextLength: f.ContextLength,
			Details: api.ModelDetails{Format: f.Format, Family: f.Family, Families: []string{}, QuantizationLevel: f.Quantization}}
		if f.Family != "" {
			e.Details.Families = []string{f.Family}
		}
		e.Name, e.Aliases = foundName(path, fi.IsDir()) // only for models: it may read a manifest
		e.Digest = digest(path, e.Size, e.Modified)
		return e
	}
	return nil
}
