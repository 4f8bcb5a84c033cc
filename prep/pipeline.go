// Package prep runs the whole path from a Hugging Face checkpoint to an
// artifact directory a device loads: pull → doctor → patch config →
// inject norms → quantize/pack → (ax650) pulsar2 build → OUT/ with a
// manifest.json. Each step is cached under the hash of its input and
// options, so a rerun skips finished steps and an interrupted run resumes;
// OUT/ is byte-identical for identical inputs and options. Package
// prep/oci moves OUT/ through OCI registries.
package prep

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/edgectl/edgectl/artifact"
	"github.com/edgectl/edgectl/hub"
	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/failpoint"
	"github.com/edgectl/edgectl/internal/pathguard"
	"github.com/edgectl/edgectl/internal/progress"
	"github.com/edgectl/edgectl/internal/version"
	"github.com/edgectl/edgectl/patch"
	"github.com/edgectl/edgectl/pulsar2"
)

// Targets prep builds for.
const (
	TargetCPU   = "cpu"   // a checked float checkpoint for the CPU engine
	TargetGGUF  = "gguf"  // a TQ2_0/TQ1_0 GGUF (llama.cpp, the CPU engine)
	TargetH1B   = "h1b"   // a .h1b + .htok (1bit-systems engine, the CPU engine)
	TargetAX650 = "ax650" // a compiled axllm model directory for AX650/AX8850
)

// ax650Names are the other --target names of TargetAX650 (pulsar2's chip
// table, AX650 rows).
const ax650Names = "ax650n, ax650a, ax8850, ax-m1, llm-8850"

// Targets lists every target, in the order help texts show them.
var Targets = []string{TargetAX650, TargetH1B, TargetGGUF, TargetCPU}

// Options are prep's settings. Every field that changes OUT/ is recorded in
// the manifest; Out, CacheDir, Force and Hub only say where and how.
type Options struct {
	Source string // org/name[@rev] or a local directory
	Target string
	Out    string
	// Format is the packing: tq2_0|tq1_0 (gguf), sherry|halo2|tq1h (h1b),
	// s4|s8 weight type (ax650). Empty picks the target's default.
	Format     string
	KVCacheLen int  // ax650: KV-cache length (normalized to 128·k−1)
	EOS        *int // the id replacing an eos_token_id array
	Ternarize  string
	// ax650: the compiler's chip, container image and runtime (see
	// `edgectl pulsar2 build`).
	Chip, Image, Runtime string

	CacheDir string
	Force    bool       // redo every step, and replace an OUT/ prep wrote before
	Hub      hub.Config // where the Hub and its cache are (zero: from the environment)
}

// Result is what a run produced.
type Result struct {
	Out            string
	Manifest       *artifact.Manifest
	ManifestSHA256 string
	Skipped        []string // steps answered from the cache
}

// defaults fills target-dependent defaults and checks the options.
func (o *Options) defaults() error {
	o.Target = strings.ToLower(o.Target)
	if o.Source == "" {
		return errkind.Errorf(errkind.Usage, "prep needs SOURCE: a Hugging Face repository org/name[@revision] or a checkpoint directory")
	}
	if o.Out == "" {
		return errkind.Errorf(errkind.Usage, "prep needs -o OUT, the artifact directory to write")
	}
	if o.Target == "" {
		return errkind.Errorf(errkind.Usage, "prep needs --target: one of %s", strings.Join(Targets, ", "))
	}
	if !slices.Contains(Targets, o.Target) && o.Target != "" && pulsar2.IsAX650(o.Target) {
		// AX8850, AX-M1, AX650N, …: pulsar2's chip table names the same NPU.
		o.Target = TargetAX650
	}
	if o.Target == TargetAX650 && o.Chip != "" {
		c, ok := pulsar2.ParseChip(o.Chip)
		if !ok {
			return errkind.Errorf(errkind.Usage, "unknown --chip %q: use %s", o.Chip, pulsar2.ChipNames)
		}
		o.Chip = c.Compiler // one spelling, so the step cache and manifest agree
	}
	if o.Target != TargetAX650 && slices.Contains(Targets, o.Target) {
		for _, f := range []struct {
			flag string
			set  bool
		}{{patch.KVLenFlag, o.KVCacheLen != 0}, {"--eos", o.EOS != nil}, {"--chip", o.Chip != ""}, {"--image", o.Image != ""}, {"--runtime", o.Runtime != ""}} {
			if f.set {
				return errkind.Errorf(errkind.Usage, "%s applies to --target ax650 only", f.flag)
			}
		}
	}
	if o.Ternarize != "" && (o.Target == TargetCPU || o.Target == TargetAX650) {
		return errkind.Errorf(errkind.Usage, "--ternarize applies to --target gguf and h1b only")
	}
	switch o.Target {
	case TargetCPU:
		if o.Format != "" {
			return errkind.Errorf(errkind.Usage, "--format %q: target cpu keeps the checkpoint's own weights and takes no --format", o.Format)
		}
	case TargetAX650:
		// prep records the length itself (patch-config), so config.json's
		// own value is not consulted: the flag or the default, rounded down.
		kv, err := patch.NewKVLen(o.KVCacheLen, nil).Budget()
		if err != nil {
			return errkind.Errorf(errkind.Usage, "%v", err)
		}
		o.KVCacheLen = kv
		if err := oneOf("--format", &o.Format, "s4", "s8"); err != nil {
			return err
		}
	case TargetGGUF:
		if err := oneOf("--format", &o.Format, "tq2_0", "tq1_0"); err != nil {
			return err
		}
		if err := oneOf("--ternarize", &o.Ternarize, "auto", "absmean", "none"); err != nil {
			return err
		}
	case TargetH1B:
		if err := oneOf("--format", &o.Format, "sherry", "halo2", "tq1h"); err != nil {
			return err
		}
		if err := oneOf("--ternarize", &o.Ternarize, "auto", "absmean", "none"); err != nil {
			return err
		}
	case "":
		return errkind.Errorf(errkind.Usage, "prep needs --target: one of %s", strings.Join(Targets, ", "))
	default:
		return errkind.Errorf(errkind.Usage, "unknown --target %q: choose one of %s (ax650 also as %s)", o.Target, strings.Join(Targets, ", "), ax650Names)
	}
	if o.CacheDir == "" {
		o.CacheDir = DefaultCacheDir()
	}
	if o.Hub.CacheDir == "" {
		o.Hub = hub.FromEnv()
	}
	return nil
}

// oneOf checks *v against the allowed values; empty takes the first.
func oneOf(flag string, v *string, allowed ...string) error {
	*v = strings.ToLower(*v)
	if *v == "" {
		*v = allowed[0]
		return nil
	}
	if slices.Contains(allowed, *v) {
		return nil
	}
	return errkind.Errorf(errkind.Usage, "%s %q: this target takes %s", flag, *v, strings.Join(allowed, ", "))
}

// runOptions are the options as the manifest records them: every setting
// that changes OUT/ (its fields in alphabetical order of their JSON names,
// as the manifest has always shown them).
type runOptions struct {
	Chip       string `json:"chip,omitempty"`
	EOS        *int   `json:"eos,omitempty"`
	Format     string `json:"format,omitempty"`
	Image      string `json:"image,omitempty"`
	KVCacheLen int    `json:"kv_cache_len,omitempty"` // ax650 only
	Target     string `json:"target"`
	Ternarize  string `json:"ternarize,omitempty"`
}

// record returns the options the manifest records.
func (o *Options) record() runOptions {
	r := runOptions{Target: o.Target, Format: o.Format, EOS: o.EOS, Ternarize: o.Ternarize}
	if o.Target == TargetAX650 {
		r.Chip, r.Image, r.KVCacheLen = o.Chip, o.Image, o.KVCacheLen
	}
	return r
}

// steps returns the target's steps after check and import.
func (o *Options) steps() ([]Step, error) {
	name := sourceName(o.Source)
	switch o.Target {
	case TargetCPU:
		return nil, nil
	case TargetGGUF:
		return []Step{quantStep(quantOptions{Format: o.Format, Ternarize: o.Ternarize, File: name + ".gguf"})}, nil
	case TargetH1B:
		return []Step{quantStep(quantOptions{Format: o.Format, Ternarize: o.Ternarize, File: name + ".h1b"})}, nil
	case TargetAX650:
		steps := []Step{
			doctorStep(doctorOptions{Target: TargetAX650, KVCacheLen: o.KVCacheLen}),
			patchConfigStep(patchConfigOptions{KVCacheLen: o.KVCacheLen, EOS: o.EOS}),
			layerNormStep(),
		}
		if o.Format == "s4" {
			steps = append(steps, gptqStep())
		}
		return append(steps, pulsar2Step(pulsar2Options{
			Chip: o.Chip, Image: o.Image,
			KVCacheLen: o.KVCacheLen, WeightType: o.Format, ModelName: name,
		}, o.Runtime)), nil
	}
	return nil, errkind.Errorf(errkind.Usage, "unknown --target %q", o.Target)
}

// sourceName names the artifact files: the repository's or directory's
// last element ("Qwen/Qwen3-1.7B@main" → "Qwen3-1.7B").
func sourceName(src string) string {
	src, _, _ = strings.Cut(src, "@")
	base := filepath.Base(filepath.Clean(src))
	if base == "." || base == "/" || base == "" {
		return "model"
	}
	return base
}

// Run executes the pipeline and writes OUT/, reporting to events (nil:
// nowhere).
func Run(ctx context.Context, events progress.Func, o Options) (*Result, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	res := &Result{Out: o.Out}
	emit := emitter(events, func(e progress.Event) {
		if e.Event == progress.Skip {
			res.Skipped = append(res.Skipped, e.Step)
		}
	})
	steps, err := o.steps()
	if err != nil {
		return nil, err
	}
	options, err := json.Marshal(o.record())
	if err != nil {
		return nil, err
	}
	if err := guardOut(o); err != nil {
		return nil, err
	}
	cache, err := OpenCache(o.CacheDir)
	if err != nil {
		return nil, err
	}

	var src *resolved
	local := isLocal(o.Source)
	if local {
		start := time.Now()
		emit.Emit(progress.Event{Event: progress.Start, Step: "source", Message: o.Source})
		if src, err = resolveLocal(cache, o.Source); err != nil {
			emit.Emit(progress.Event{Event: progress.Error, Step: "source", Err: err})
			return nil, err
		}
		emit.Emit(progress.Event{Event: progress.Done, Step: "source", Key: src.Key, DurationMS: time.Since(start).Milliseconds()})
	} else if src, err = resolveHub(ctx, o.Hub, o.Source, emit); err != nil {
		return nil, err
	}

	// check reads the source where the user has it, so its errors name
	// the user's files; later steps read prep's cache, and the runner
	// names the source in their errors instead.
	all := append([]Step{checkStep(o.Target), importStep(local)}, steps...)
	r := &runner{cache: cache, emit: emit, force: o.Force, srcDir: src.Dir, srcShow: src.Dir}
	records, dir, key, err := r.run(ctx, src.Dir, src.Key, all)
	if errors.Is(err, context.Canceled) {
		return nil, fmt.Errorf("prep interrupted: finished steps are cached, run the same command again to resume: %w", err)
	}
	if err != nil {
		return nil, err
	}

	m := &artifact.Manifest{
		Schema:         artifact.ManifestSchema,
		EdgectlVersion: version.String(),
		Target:         o.Target,
		Source:         src.Source,
		Options:        options,
		Key:            key,
		Steps:          records,
	}
	sum, err := writeOut(ctx, emit, dir, o.Out, m, o.Force)
	if err != nil {
		return nil, err
	}
	res.Manifest, res.ManifestSHA256 = m, sum
	return res, nil
}

// guardOut refuses an OUT that is, holds or lies inside what prep reads:
// the source directory, the step cache, the Hub cache. Replacing OUT (with
// --force) removes the old directory whole, and with it anything inside.
func guardOut(o Options) error {
	inputs := []string{o.CacheDir}
	if isLocal(o.Source) {
		inputs = append(inputs, o.Source)
	} else {
		inputs = append(inputs, o.Hub.CacheDir)
	}
	return pathguard.Dir(o.Out, inputs...)
}

// writeOut publishes OUT/: the final step's files, copied (not linked, so
// editing OUT/ cannot corrupt the cache), plus manifest.json. An OUT/ that
// already holds this exact result is left alone.
func writeOut(ctx context.Context, emit progress.Func, from, out string, m *artifact.Manifest, force bool) (string, error) {
	start := time.Now()
	names, err := artifact.ListFiles(from)
	if err != nil {
		return "", err
	}
	if slices.Contains(names, artifact.ManifestName) {
		return "", inputErr("the model itself has a file named %s, which prep reserves for its manifest: rename it in the source", artifact.ManifestName)
	}

	// Leftovers of killed runs beside OUT (a half-copied OUT, an old OUT
	// that was being replaced) go first: they are what filled disks.
	if _, err := atomicfile.CleanStale(filepath.Dir(filepath.Clean(out))); err != nil {
		emit.Emit(progress.Event{Event: progress.Log, Step: "out", Message: "could not remove a stale temporary: " + err.Error()})
	}
	if ents, err := os.ReadDir(out); err == nil && len(ents) == 0 {
		os.Remove(out) // an empty directory (mkdir in a CI script) holds nothing to keep
	}
	if _, err := os.Lstat(out); err == nil {
		old, rerr := artifact.ReadManifest(out)
		switch {
		case !force && rerr == nil && old.Key == m.Key && old.Verify(out) == nil:
			b, _ := os.ReadFile(filepath.Join(out, artifact.ManifestName))
			*m = *old
			sum := sha256.Sum256(b)
			emit.Emit(progress.Event{Event: progress.Skip, Step: "out", Key: m.Key, Reason: "OUT is up to date"})
			return hex.EncodeToString(sum[:]), nil
		case rerr != nil:
			return "", inputErr("%s exists and was not written by prep (%v): choose another -o or remove it", out, rerr)
		case !force:
			return "", inputErr("%s holds another prep result (key %s…): pass --force to replace it, or choose another -o", out, old.Key[:12])
		}
	}

	emit.Emit(progress.Event{Event: progress.Start, Step: "out", Key: m.Key})
	parent := filepath.Dir(filepath.Clean(out))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", inputErr("-o %s: %v", out, err)
	}
	// OUT is built beside its final place under an edgectl temporary name,
	// so a run killed while writing it leaves something the next run of
	// any edgectl command writing here recognizes and removes.
	tmp, err := artifact.NewTempDir(parent, filepath.Base(filepath.Clean(out)))
	if err != nil {
		return "", err
	}
	published := false
	defer func() {
		if !published {
			os.RemoveAll(tmp)
		}
	}()
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		if err := atomicfile.Copy(filepath.Join(from, filepath.FromSlash(n)), filepath.Join(tmp, filepath.FromSlash(n)), 0o644); err != nil {
			return "", err
		}
	}
	failpoint.Hit("prep.out") // crash tests: kill -9 with OUT half built
	files, err := artifact.HashTree(tmp)
	if err != nil {
		return "", err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	m.Files = files
	// The copy is what users load: check it is whole and readable by the
	// format's own reader before it replaces anything.
	if err := verifyOut(tmp, m.Target); err != nil {
		return "", &stepError{step: "out", err: fmt.Errorf("the artifact is not loadable, OUT was left as it was: %s", strings.ReplaceAll(err.Error(), tmp, out))}
	}
	b, err := m.Marshal()
	if err != nil {
		return "", err
	}
	if err := atomicfile.WriteFile(filepath.Join(tmp, artifact.ManifestName), b, 0o644); err != nil {
		return "", err
	}
	if err := atomicfile.SyncDir(tmp); err != nil {
		return "", err
	}
	if err := artifact.SwapDir(tmp, out); err != nil {
		return "", err
	}
	published = true
	var total int64
	for _, f := range files {
		total += f.Size
	}
	sum := sha256.Sum256(b)
	emit.Emit(progress.Event{Event: progress.Done, Step: "out", Key: m.Key, Files: len(files), Bytes: total, DurationMS: time.Since(start).Milliseconds()})
	return hex.EncodeToString(sum[:]), nil
}
