package prep

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/edgectl/edgectl/artifact"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/progress"
	"github.com/edgectl/edgectl/internal/testmodel"
)

const tinyStories = "../testdata/models/tinystories-656k"

// eventLog collects a run's events as `prep --json` writes them: one JSON
// line each in out (error events with their message); tool logs, which
// stay off --json stdout, go to errOut.
type eventLog struct {
	mu          sync.Mutex
	out, errOut bytes.Buffer
	// onEvent, when set, sees each event as it is written.
	onEvent func(progress.Event)
}

func (l *eventLog) sink() progress.Func {
	return func(e progress.Event) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if e.Event == progress.ToolLog {
			fmt.Fprintf(&l.errOut, "  | %s\n", e.Message)
			return
		}
		if e.Err != nil {
			e.Error = e.Err.Error()
		}
		b, err := json.Marshal(e)
		if err != nil {
			panic(err)
		}
		l.out.Write(append(b, '\n'))
		if l.onEvent != nil {
			l.onEvent(e)
		}
	}
}

func (l *eventLog) events(t *testing.T) []progress.Event {
	t.Helper()
	var evs []progress.Event
	for _, line := range strings.Split(strings.TrimSpace(l.out.String()), "\n") {
		if line == "" {
			continue
		}
		var e progress.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("stdout line is not a JSON event: %q: %v", line, err)
		}
		evs = append(evs, e)
	}
	return evs
}

// stepsWith lists the steps that have an event of the given type.
func stepsWith(evs []progress.Event, typ string) []string {
	var s []string
	for _, e := range evs {
		if e.Event == typ {
			s = append(s, e.Step)
		}
	}
	return s
}

func cpuOpts(t *testing.T, cache, out string) Options {
	return Options{Source: tinyStories, Target: TargetCPU, Out: out, CacheDir: cache}
}

func TestPrepCPULocalWritesVerifiedManifest(t *testing.T) {
	tmp := t.TempDir()
	out := filepath.Join(tmp, "OUT")
	var log eventLog
	res, err := Run(context.Background(), log.sink(), cpuOpts(t, filepath.Join(tmp, "cache"), out))
	if err != nil {
		t.Fatal(err)
	}
	m, err := artifact.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	// Every model file of the source is in OUT, unchanged, and listed
	// with the digest the test computes itself.
	src := testmodel.ReadTree(t, tinyStories)
	got := testmodel.ReadTree(t, out)
	if len(got) != len(src)+1 {
		t.Fatalf("OUT has %d files, want the source's %d plus manifest.json", len(got), len(src))
	}
	listed := map[string]artifact.FileEntry{}
	for _, f := range m.Files {
		listed[f.Path] = f
	}
	for name, b := range src {
		if !bytes.Equal(got[name], b) {
			t.Errorf("%s differs from the source", name)
		}
		sum := sha256.Sum256(b)
		if f := listed[name]; f.SHA256 != hex.EncodeToString(sum[:]) || f.Size != int64(len(b)) {
			t.Errorf("manifest entry for %s = %+v, want size %d sha256 %x", name, f, len(b), sum)
		}
	}
	if m.Target != "cpu" || m.Source.Dir != "tinystories-656k" || len(m.Source.TreeSHA256) != 64 || m.EdgectlVersion == "" {
		t.Errorf("manifest header = %+v", m)
	}
	if len(m.Steps) != 2 || m.Steps[0].Name != "check" || m.Steps[1].Name != "import" || len(m.Steps[0].Findings) == 0 {
		t.Errorf("manifest steps = %+v", m.Steps)
	}
	if b, _ := os.ReadFile(filepath.Join(out, artifact.ManifestName)); !strings.Contains(string(b), `"options": {`) || bytes.Contains(b, []byte(tmp)) {
		t.Errorf("manifest.json has no options or mentions the temp dir:\n%s", b)
	}
	sum := sha256.Sum256(got[artifact.ManifestName])
	if res.ManifestSHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("result manifest sha256 %s, file has %x", res.ManifestSHA256, sum)
	}
	evs := log.events(t)
	if s := stepsWith(evs, "done"); strings.Join(s, ",") != "source,check,import,out" {
		t.Errorf("done events for %v", s)
	}
	if s := stepsWith(evs, "start"); strings.Join(s, ",") != "source,check,import,out" {
		t.Errorf("start events for %v", s)
	}
	if len(stepsWith(evs, "finding")) == 0 {
		t.Error("no finding events")
	}
}

func TestPrepTwoRunsByteIdentical(t *testing.T) {
	tmp := t.TempDir()
	bitnet := filepath.Join(tmp, "bitnet-tiny")
	writeBitNet(t, bitnet)
	llama := filepath.Join(tmp, "llama-tiny")
	writeLlama(t, llama)
	cases := []Options{
		{Source: tinyStories, Target: TargetCPU},
		{Source: bitnet, Target: TargetGGUF, Format: "tq1_0"},
		{Source: bitnet, Target: TargetH1B, Format: "sherry"},
		{Source: llama, Target: TargetAX650, Image: "pulsar2:5.2"},
	}
	for i, o := range cases {
		t.Run(o.Target, func(t *testing.T) {
			if o.Target == TargetAX650 {
				fakeBins(t)
			}
			// Separate caches and output paths: nothing shared but the input.
			a, b := o, o
			a.Out, a.CacheDir = filepath.Join(tmp, fmt.Sprint(i), "a", "OUT"), filepath.Join(tmp, fmt.Sprint(i), "cache-a")
			b.Out, b.CacheDir = filepath.Join(tmp, fmt.Sprint(i), "b", "elsewhere"), filepath.Join(tmp, fmt.Sprint(i), "cache-b")
			if _, err := Run(context.Background(), nil, a); err != nil {
				t.Fatal(err)
			}
			if _, err := Run(context.Background(), nil, b); err != nil {
				t.Fatal(err)
			}
			ta, tb := testmodel.ReadTree(t, a.Out), testmodel.ReadTree(t, b.Out)
			if len(ta) != len(tb) || len(ta) < 2 {
				t.Fatalf("%d files vs %d", len(ta), len(tb))
			}
			for name, x := range ta {
				if !bytes.Equal(x, tb[name]) {
					t.Errorf("%s differs between two runs", name)
				}
			}
		})
	}
}

func TestPrepRerunSkipsFinishedSteps(t *testing.T) {
	tmp := t.TempDir()
	opts := cpuOpts(t, filepath.Join(tmp, "cache"), filepath.Join(tmp, "OUT"))
	if _, err := Run(context.Background(), nil, opts); err != nil {
		t.Fatal(err)
	}
	first := testmodel.ReadTree(t, opts.Out)

	var log eventLog
	res, err := Run(context.Background(), log.sink(), opts)
	if err != nil {
		t.Fatal(err)
	}
	evs := log.events(t)
	if s := stepsWith(evs, "skip"); strings.Join(s, ",") != "check,import,out" {
		t.Errorf("skipped %v, want check,import,out", s)
	}
	if s := stepsWith(evs, "start"); strings.Join(s, ",") != "source" {
		t.Errorf("started %v on a rerun, want only the source hash", s)
	}
	if strings.Join(res.Skipped, ",") != "check,import,out" {
		t.Errorf("Result.Skipped = %v", res.Skipped)
	}
	// Findings are replayed from the cache.
	if len(stepsWith(evs, "finding")) == 0 {
		t.Error("rerun lost the findings")
	}
	second := testmodel.ReadTree(t, opts.Out)
	for k, v := range first {
		if !bytes.Equal(v, second[k]) {
			t.Errorf("%s changed on a rerun", k)
		}
	}

	// --force redoes everything and may replace the OUT it wrote.
	log = eventLog{}
	opts.Force = true
	if _, err := Run(context.Background(), log.sink(), opts); err != nil {
		t.Fatal(err)
	}
	evs = log.events(t)
	if s := stepsWith(evs, "skip"); len(s) != 0 {
		t.Errorf("--force skipped %v", s)
	}
	if s := stepsWith(evs, "done"); strings.Join(s, ",") != "source,check,import,out" {
		t.Errorf("--force done %v", s)
	}
}

func TestPrepInterruptedRunResumes(t *testing.T) {
	tmp := t.TempDir()
	opts := cpuOpts(t, filepath.Join(tmp, "cache"), filepath.Join(tmp, "OUT"))
	// Interrupt (as Ctrl-C does) the moment the import step starts.
	ctx, cancel := context.WithCancel(context.Background())
	log := eventLog{onEvent: func(e progress.Event) {
		if e.Event == "start" && e.Step == "import" {
			cancel()
		}
	}}
	if _, err := Run(ctx, log.sink(), opts); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run returned %v", err)
	}
	if _, err := os.Stat(opts.Out); !os.IsNotExist(err) {
		t.Fatalf("an interrupted run left OUT behind: %v", err)
	}
	log = eventLog{}
	if _, err := Run(context.Background(), log.sink(), opts); err != nil {
		t.Fatal(err)
	}
	evs := log.events(t)
	if s := stepsWith(evs, "skip"); strings.Join(s, ",") != "check" {
		t.Errorf("resumed run skipped %v, want check", s)
	}
	if s := stepsWith(evs, "done"); strings.Join(s, ",") != "source,import,out" {
		t.Errorf("resumed run did %v", s)
	}
	if _, err := artifact.ReadManifest(opts.Out); err != nil {
		t.Fatal(err)
	}
}

func TestPrepRefusesForeignOut(t *testing.T) {
	tmp := t.TempDir()
	out := filepath.Join(tmp, "OUT")
	os.MkdirAll(out, 0o755)
	os.WriteFile(filepath.Join(out, "notes.txt"), []byte("mine"), 0o644)
	opts := cpuOpts(t, filepath.Join(tmp, "cache"), out)
	opts.Force = true
	_, err := Run(context.Background(), nil, opts)
	if err == nil || errkind.Of(err) != errkind.Input || !strings.Contains(err.Error(), "not written by prep") {
		t.Fatalf("err = %v (kind %v)", err, errkind.Of(err))
	}
	if b, _ := os.ReadFile(filepath.Join(out, "notes.txt")); string(b) != "mine" {
		t.Error("a foreign OUT was touched")
	}
}

func TestPrepInputErrors(t *testing.T) {
	tmp := t.TempDir()
	empty := filepath.Join(tmp, "empty")
	os.MkdirAll(empty, 0o755)
	broken := filepath.Join(tmp, "broken")
	os.MkdirAll(broken, 0o755)
	os.WriteFile(filepath.Join(broken, "config.json"), nil, 0o644)
	os.WriteFile(filepath.Join(broken, "model.safetensors"), []byte("12345678"), 0o644)
	cases := []struct {
		name string
		opts Options
		code errkind.Kind
		want string
	}{
		{"no target", Options{Source: tinyStories}, errkind.Usage, "--target"},
		{"bad target", Options{Source: tinyStories, Target: "tpu"}, errkind.Usage, "unknown --target"},
		{"missing dir", Options{Source: filepath.Join(tmp, "nope"), Target: "cpu"}, errkind.Input, "no such file"},
		{"not a repo", Options{Source: "just-a-name", Target: "cpu"}, errkind.Input, "neither an existing directory"},
		{"no model files", Options{Source: empty, Target: "cpu"}, errkind.Input, "no model files"},
		{"empty config", Options{Source: broken, Target: "cpu"}, errkind.Input, "config.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Out = filepath.Join(tmp, "out-"+strings.ReplaceAll(c.name, " ", "-"))
			c.opts.CacheDir = filepath.Join(tmp, "cache")
			_, err := Run(context.Background(), nil, c.opts)
			if err == nil || errkind.Of(err) != c.code || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v (kind %v), want kind %v mentioning %q", err, errkind.Of(err), c.code, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			if _, err := os.Stat(c.opts.Out); !os.IsNotExist(err) {
				t.Errorf("a failed run left %s", c.opts.Out)
			}
		})
	}
}

// A development build keys its steps by its own digest, so changed code
// never reuses what older code cached.
func TestBuildIDOfDevBuilds(t *testing.T) {
	id := buildID()
	exe, _ := os.Executable()
	sum, _, err := artifact.HashFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if id != "dev+"+sum[:16] {
		t.Errorf("buildID() = %q, want dev+%s", id, sum[:16])
	}
}

// A damaged cache entry (a file truncated behind prep's back) is not
// trusted: the step runs again and replaces it.
func TestPrepRedoesDamagedCacheEntry(t *testing.T) {
	tmp := t.TempDir()
	opts := cpuOpts(t, filepath.Join(tmp, "cache"), filepath.Join(tmp, "OUT"))
	res, err := Run(context.Background(), nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	damaged := filepath.Join(opts.CacheDir, "steps", res.Manifest.Steps[1].Key, "out", "model.safetensors")
	if err := os.Truncate(damaged, 100); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(opts.Out)
	var log eventLog
	if _, err := Run(context.Background(), log.sink(), opts); err != nil {
		t.Fatal(err)
	}
	evs := log.events(t)
	if s := stepsWith(evs, "done"); strings.Join(s, ",") != "source,import,out" {
		t.Errorf("after damage, done %v (check stays cached: its key is unchanged)", s)
	}
	m, err := artifact.ReadManifest(opts.Out)
	if err != nil || m.Verify(opts.Out) != nil {
		t.Fatalf("OUT after repair: %v", err)
	}
	if st, _ := os.Stat(damaged); st.Size() == 100 {
		t.Error("the damaged entry was not replaced")
	}
}
