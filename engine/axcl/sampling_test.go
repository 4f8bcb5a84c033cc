package axcl

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/axllm"
)

// The request's fields laid over the model's post_config, per
// LLMPostprocess::apply (sampling.go).
func TestPostFor(t *testing.T) {
	base := axllm.PostConfig{EnableTopKSampling: true, TopK: 20, Temperature: 0.6, EnableTemperature: true, TopP: 0.8, RepetitionPenalty: 1, PenaltyWindow: 20}
	f := func(v float64) *float64 { return &v }
	p, _ := postFor(greedyPost, engine.Sampling{Temperature: f(0.7)}, 100)
	if !p.EnableTemperature || p.Temperature != 0.7 || !p.EnableTopPSampling || p.TopP != 1 {
		t.Errorf("temperature alone on a greedy model must sample the whole distribution: %+v", p)
	}
	p, _ = postFor(base, engine.Sampling{Temperature: f(0)}, 100)
	if p.EnableTemperature || p.EnableTopPSampling || p.EnableTopKSampling {
		t.Errorf("temperature 0 is greedy: %+v", p)
	}
	p, _ = postFor(base, engine.Sampling{TopP: 0.9}, 100)
	if !p.EnableTopPSampling || p.TopP != 0.9 || p.EnableTopKSampling || p.Temperature != 0.6 {
		t.Errorf("top_p: %+v", p)
	}
	p, _ = postFor(base, engine.Sampling{RepeatPenalty: 1.2, RepeatLastN: 10}, 100)
	if !p.EnableRepetitionPenalty || p.RepetitionPenalty < 1.4399 || p.RepetitionPenalty > 1.4401 || p.PenaltyWindow != 10 {
		t.Errorf("repeat penalty: %+v", p)
	}
	// Ollama's repeat_last_n 0: the model's own penalty is written as off;
	// a model whose penalty is already off keeps its own file.
	penalized := base
	penalized.EnableRepetitionPenalty, penalized.RepetitionPenalty = true, 1.21
	p, _ = postFor(penalized, engine.Sampling{PenaltiesOff: true}, 100)
	if p.EnableRepetitionPenalty || p.TopK != 20 || p.Temperature != 0.6 {
		t.Errorf("penalties off: %+v", p)
	}
	if p, _ := postFor(base, engine.Sampling{PenaltiesOff: true}, 100); p != base {
		t.Errorf("penalties off on a model without one: %+v, want the model's own", p)
	}
	if p, _ := postFor(base, engine.Sampling{}, 100); p != base {
		t.Errorf("no fields: %+v, want the model's own", p)
	}
	for _, s := range []engine.Sampling{{TopK: 5, TopP: 0.5}, {TopK: 101}} {
		if _, err := postFor(base, s, 100); !errors.Is(err, engine.ErrInvalidRequest) {
			t.Errorf("%+v: %v, want a refusal", s, err)
		}
	}
}

// Legacy main_* binaries get --post_config_path naming a file edgectl
// wrote; the model directory is not touched.
func TestLegacyCommandGetsPostConfigPath(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir := modelDir(t, `{}`)
	m := &Model{dir: dir, opts: Options{Command: []string{"main_axcl_x86", "--system_prompt", "hi", "--template_filename_axmodel", "{dir}/x"}}, sysVia: sysFlag}
	post := &axllm.PostConfig{EnableTopKSampling: true, TopK: 3}
	args, shadow, err := m.commandFor("sys", post)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(shadow)
	n := len(args)
	if n < 2 || args[n-2] != "--post_config_path" || args[2] != "sys" {
		t.Fatalf("args %q", args)
	}
	got, err := axllm.ReadPostConfig(args[n-1])
	if err != nil || *got != *post {
		t.Errorf("written %+v, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, axllm.PostConfigName)); !os.IsNotExist(err) {
		t.Errorf("model directory written: %v", err)
	}
}
