package cpu

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/internal/envconfig"
)

// setCPUVars sets the variables the CPU engine reads to env's values and
// the others to nothing, whatever the test process was started with.
func setCPUVars(t *testing.T, env map[string]string) {
	t.Helper()
	for _, v := range []envconfig.Var{envconfig.Mmap.Var, envconfig.Head.Var, envconfig.PureGo.Var, envconfig.NoAVX512.Var,
		envconfig.NoDotProd.Var, envconfig.NativePacking.Var, envconfig.I2Plain.Var} {
		t.Setenv(v.Name, env[v.Name])
	}
}

// TestSettingsAreReadAtLoad: each EDGECTL_* variable the engine reads
// takes effect at Load (not at init, so one process can load models with
// different settings), LoadOptions win where they say something, and the
// model holds and runs the kernel table the settings select.
func TestSettingsAreReadAtLoad(t *testing.T) {
	spec := bitnetSpec{hidden: 256, ffn: 512, layers: 1, heads: 4, kv: 2, vocab: 512, seed: 3}
	path := filepath.Join(t.TempDir(), "m.gguf")
	must(t, spec.writeGGUF(path, gguf.TypeTQ2_0))
	cpu := detectFeatures()
	noAVX512, noDotProd := cpu, cpu
	noAVX512.avx512, noAVX512.vnni = false, false
	noDotProd.dotProd = false
	for _, c := range []struct {
		env      map[string]string
		opts     engine.LoadOptions
		features cpuFeatures // the table's
		layers   string      // the layers' packing in memory ("": I2x4 where the table has its kernels, else I2)
		floatHd  bool
		mmap     bool
	}{
		{features: cpu},
		{env: map[string]string{"EDGECTL_PUREGO": "1"}},
		{env: map[string]string{"EDGECTL_NO_AVX512": "1"}, features: noAVX512},
		{env: map[string]string{"EDGECTL_NO_DOTPROD": "1"}, features: noDotProd},
		{env: map[string]string{"EDGECTL_NATIVE_PACKING": "1"}, features: cpu, layers: "TQ2_0"},
		{env: map[string]string{"EDGECTL_I2_PLAIN": "1"}, features: cpu, layers: "I2"},
		{env: map[string]string{"EDGECTL_HEAD": "float"}, features: cpu, floatHd: true},
		{env: map[string]string{"EDGECTL_HEAD": "float"}, opts: engine.LoadOptions{Head: "q8"}, features: cpu},
		{env: map[string]string{"EDGECTL_MMAP": "1"}, features: cpu, mmap: true},
		{opts: engine.LoadOptions{Mmap: true}, features: cpu, mmap: true},
	} {
		setCPUVars(t, c.env)
		want := newKernels(c.features)
		if c.layers == "" {
			c.layers = "I2" // BitNet's per-tensor α: every row has one scale
			if want.hasI2x4() {
				c.layers = "I2x4"
			}
		}
		em, err := New().Load(context.Background(), path, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		m := em.(*model)
		_, floatHd := m.w.head.(*floatRows)
		layers := m.w.layers[0].gate.(*ternLinear).kind
		if m.kern.name != want.name || layers != c.layers || floatHd != c.floatHd || m.mem.mmap != c.mmap {
			t.Errorf("%v %+v: kernels %s, layers %s, float head %v, mmap %v; want %s, %s, %v, %v",
				c.env, c.opts, m.kern.name, layers, floatHd, m.mem.mmap, want.name, c.layers, c.floatHd, c.mmap)
		}
		// The packing and the activations' layout are the table's: a
		// forward pass runs with them.
		st := newState(m)
		if _, err := st.forward(context.Background(), []int{1, 2, 3, 4, 5}); err != nil {
			t.Errorf("%v: %v", c.env, err)
		}
		st.release()
		m.Close()
	}
}

// TestSettingsSelectFeatures: the switches take features away from what
// the CPU has, never add any.
func TestSettingsSelectFeatures(t *testing.T) {
	all := cpuFeatures{avx2: true, avx512: true, vnni: true, neon: true, dotProd: true}
	for _, c := range []struct {
		set  settings
		want cpuFeatures
	}{
		{settings{}, all},
		{settings{pureGo: true}, cpuFeatures{}},
		{settings{pureGo: true, noAVX512: true}, cpuFeatures{}},
		{settings{noAVX512: true}, cpuFeatures{avx2: true, neon: true, dotProd: true}},
		{settings{noDotProd: true}, cpuFeatures{avx2: true, avx512: true, vnni: true, neon: true}},
	} {
		if got := c.set.features(all); got != c.want {
			t.Errorf("%+v: %+v, want %+v", c.set, got, c.want)
		}
		if got := c.set.features(cpuFeatures{}); got != (cpuFeatures{}) {
			t.Errorf("%+v on a CPU without extensions: %+v", c.set, got)
		}
	}
}
