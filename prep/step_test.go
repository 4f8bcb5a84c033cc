package prep

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/edgectl/edgectl/artifact"
)

// variants returns o with each field changed in turn (strings gain a
// character, numbers grow, booleans flip, pointers go nil ↔ set and change
// their value), so a new field is covered without touching this test.
func variants(t *testing.T, o any) map[string]any {
	t.Helper()
	v := reflect.ValueOf(o)
	out := map[string]any{}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		change := func(name string, set func(reflect.Value)) {
			c := reflect.New(v.Type()).Elem()
			c.Set(v)
			set(c.Field(i))
			out[name] = c.Interface()
		}
		switch fv := v.Field(i); fv.Kind() {
		case reflect.String:
			change(f.Name, func(x reflect.Value) { x.SetString(x.String() + "x") })
		case reflect.Int:
			change(f.Name, func(x reflect.Value) { x.SetInt(x.Int() + 1) })
		case reflect.Bool:
			change(f.Name, func(x reflect.Value) { x.SetBool(!x.Bool()) })
		case reflect.Pointer:
			change(f.Name+"=nil", func(x reflect.Value) { x.SetZero() })
			change(f.Name+"+1", func(x reflect.Value) {
				p := reflect.New(f.Type.Elem())
				if !fv.IsNil() {
					p.Elem().SetInt(fv.Elem().Int() + 1)
				}
				x.Set(p)
			})
		default:
			t.Fatalf("%T.%s: kind %s: teach variants to change it", o, f.Name, fv.Kind())
		}
	}
	return out
}

// keyOf is the cache key of a step with these options on a fixed input,
// built the way the pipeline builds it.
func keyOf(t *testing.T, opts any) (string, json.RawMessage) {
	t.Helper()
	// newStep is generic: one case per options type of the pipeline.
	var st Step
	switch o := opts.(type) {
	case checkOptions:
		st = newStep("s", 1, o, runCheck)
	case doctorOptions:
		st = newStep("s", 1, o, runDoctor)
	case patchConfigOptions:
		st = newStep("s", 1, o, runPatchConfig)
	case layerNormOptions:
		st = newStep("s", 1, o, runLayerNorm)
	case quantOptions:
		st = newStep("s", 1, o, runQuant)
	case pulsar2Options:
		st = newStep("s", 1, o, compiler{}.run)
	default:
		t.Fatalf("no step takes %T", opts)
	}
	k, err := stepKey(st.Name, st.Version, "v1.2.3", st.options, "local:abc")
	if err != nil {
		t.Fatal(err)
	}
	return k, st.options
}

// Every field of every step's options is in its key: changing any one of
// them changes the key (so a cached result is never reused for other
// settings), and equal options give equal keys.
func TestEveryOptionFieldChangesTheKey(t *testing.T) {
	eos := 151645
	for _, base := range []any{
		checkOptions{Norms: true},
		doctorOptions{Target: TargetAX650, KVCacheLen: 2047},
		patchConfigOptions{KVCacheLen: 2047, EOS: &eos},
		layerNormOptions{DType: "F16"},
		quantOptions{Format: "tq2_0", Ternarize: "auto", File: "m.gguf"},
		pulsar2Options{Chip: "AX650", Image: "pulsar2:5.2", KVCacheLen: 2047, WeightType: "s4", ModelName: "m"},
	} {
		k0, raw := keyOf(t, base)
		if again, _ := keyOf(t, base); again != k0 {
			t.Errorf("%T: the same options gave keys %s and %s", base, k0, again)
		}
		seen := map[string]string{k0: "base"}
		for name, v := range variants(t, base) {
			k, vraw := keyOf(t, v)
			if other, dup := seen[k]; dup {
				t.Errorf("%T: changing %s gives the key of %s (%s vs %s)", base, name, other, vraw, raw)
			}
			seen[k] = name
		}
		if len(seen) < 2 {
			t.Errorf("%T: no variants tested", base)
		}
	}
}

// A step runs with the options decoded from the very bytes its key hashed:
// a setting the key leaves out (json:"-") does not reach it.
func TestStepRunsOnlyWithItsKeyedOptions(t *testing.T) {
	type leaky struct {
		Shown  string `json:"shown"`
		Hidden string `json:"-"`
	}
	tmp := t.TempDir()
	cache, err := OpenCache(filepath.Join(tmp, "cache"))
	must(t, err)
	var got leaky
	st := newStep("probe", 1, leaky{Shown: "a", Hidden: "not in the key"}, func(ctx context.Context, sc *StepContext, o leaky) error {
		got = o
		return os.MkdirAll(sc.Out, 0o755)
	})
	r := &runner{cache: cache}
	recs, _, _, err := r.run(context.Background(), tmp, "local:x", []Step{st})
	must(t, err)
	if got != (leaky{Shown: "a"}) {
		t.Errorf("the step ran with %+v, want only what its key holds", got)
	}
	if string(recs[0].Options) != `{"shown":"a"}` {
		t.Errorf("record options %s", recs[0].Options)
	}
}

// manifest.json records each step's options as exactly the bytes of its
// options struct, and each step's key is the hash of those bytes chained
// from the key before it: the record is what the cache keyed.
func TestManifestRecordsExactlyTheOptions(t *testing.T) {
	tmp := t.TempDir()
	bitnet := filepath.Join(tmp, "bitnet-tiny")
	writeBitNet(t, bitnet)
	o := Options{Source: bitnet, Target: TargetGGUF, Format: "tq1_0", Out: filepath.Join(tmp, "OUT"), CacheDir: filepath.Join(tmp, "cache")}
	res, err := Run(context.Background(), nil, o)
	must(t, err)
	m, err := artifact.ReadManifest(o.Out)
	must(t, err)
	want := []struct {
		step Step
		opts any
	}{
		{checkStep(TargetGGUF), checkOptions{Norms: true}},
		{importStep(true), importOptions{}},
		{quantStep(quantOptions{}), quantOptions{Format: "tq1_0", Ternarize: "auto", File: "bitnet-tiny.gguf"}},
	}
	if len(m.Steps) != len(want) {
		t.Fatalf("steps %+v", m.Steps)
	}
	input := "local:" + m.Source.TreeSHA256
	for i, w := range want {
		rec := m.Steps[i]
		b, _ := json.Marshal(w.opts)
		if rec.Name != w.step.Name || !bytes.Equal(compact(t, rec.Options), b) {
			t.Errorf("step %d: %s records %s, want %s %s", i, rec.Name, rec.Options, w.step.Name, b)
		}
		k, err := stepKey(rec.Name, w.step.Version, buildID(), b, input)
		must(t, err)
		if rec.Key != k {
			t.Errorf("step %s: key %s is not the hash of its recorded options (%s)", rec.Name, rec.Key, k)
		}
		input = rec.Key
	}
	if m.Key != input {
		t.Errorf("manifest key %s, want the last step's %s", m.Key, input)
	}
	var ro runOptions
	dec := json.NewDecoder(bytes.NewReader(m.Options))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ro); err != nil || ro != (runOptions{Target: TargetGGUF, Format: "tq1_0", Ternarize: "auto"}) {
		t.Errorf("run options %s: %+v %v", m.Options, ro, err)
	}
	if !bytes.Equal(compact(t, res.Manifest.Options), compact(t, m.Options)) {
		t.Error("the manifest on disk differs from the one Run returned")
	}
}

func compact(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	must(t, json.Compact(&buf, b))
	return buf.Bytes()
}
