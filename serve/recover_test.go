package serve

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
)

// panicky is the CPU engine, except that it panics loading a model whose
// directory is named panic-load, and generating on one named panic-gen.
type panicky struct{ engine.Engine }

// Probe is the wrapped engine's: the registry lists what it runs.
func (p panicky) Probe(path string) (engine.Found, bool) { return p.Engine.(engine.Prober).Probe(path) }

func (p panicky) Load(ctx context.Context, path string, o engine.LoadOptions) (engine.Model, error) {
	if filepath.Base(path) == "panic-load" {
		var m map[string]int
		m["x"]++ // a nil-map write: the kind of bug a malformed file reaches
	}
	m, err := p.Engine.Load(ctx, path, o)
	if err != nil || filepath.Base(path) != "panic-gen" {
		return m, err
	}
	return panickyModel{m}, nil
}

type panickyModel struct{ engine.Model }

func (m panickyModel) NewSession() (engine.Session, error) {
	s, err := m.Model.NewSession()
	return panickySession{s}, err
}

type panickySession struct{ engine.Session }

func (panickySession) Generate(context.Context, engine.Request, func(engine.Token) error) (engine.Result, error) {
	var xs []int
	_ = xs[len(xs)+3] // index out of range
	return engine.Result{}, nil
}

// An engine panic on one model is that model's 500, with no stack in the
// body; the server and its other models go on.
func TestEnginePanicFailsOnlyItsModel(t *testing.T) {
	root := t.TempDir()
	ts := start(t, Options{ModelDirs: []string{root}, Engines: map[string]engine.Engine{LaneCPU: panicky{cpu.New()}}})
	tinyDir(t, root, "tinystories")
	tinyDir(t, root, "panic-load")
	tinyDir(t, root, "panic-gen")
	ts.reg.Rescan()
	for _, name := range []string{"panic-load", "panic-gen", "panic-gen"} {
		code, _, b := post(t, ts.URL+"/v1/completions", `{"model":"`+name+`","prompt":"Once","max_tokens":2}`)
		if code != http.StatusInternalServerError || !strings.Contains(string(b), "engine failed on this model") || strings.Contains(string(b), "goroutine") {
			t.Fatalf("%s: %d %s", name, code, b)
		}
		code, _, b = post(t, ts.URL+"/v1/completions", `{"model":"tinystories","prompt":"Once upon a time","max_tokens":4,"temperature":0}`)
		if code != http.StatusOK {
			t.Fatalf("normal model after %s: %d %s", name, code, b)
		}
	}
}
