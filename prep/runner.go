package prep

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/failpoint"
	"github.com/edgectl/edgectl/internal/version"
)

// Step is one stage of the pipeline. Its output depends only on its input
// directory and Options, which is what makes it cacheable.
type Step struct {
	Name string
	// Version changes whenever the step's output for the same input and
	// options changes, so old cache entries stop matching.
	Version int
	// Options are every setting that changes the output. They go into the
	// cache key and into the manifest.
	Options map[string]any
	// Check steps write no files (doctor): the next step reads their input.
	Check bool
	Run   func(ctx context.Context, sc *StepContext) error
}

// StepContext is what a running step sees.
type StepContext struct {
	Name string
	// In is the input directory. It belongs to the cache or the Hub cache:
	// read it, never write it.
	In string
	// Out is where the step creates its output directory (it does not exist
	// yet, so library calls that refuse to overwrite can write it directly).
	// Empty for Check steps.
	Out string

	findings []Finding
	rep      *Reporter
}

// Finding records something the step noticed or changed; it goes to the
// events now and to the manifest later.
func (sc *StepContext) Finding(f Finding) {
	sc.findings = append(sc.findings, f)
	sc.rep.Emit(Event{Event: "finding", Step: sc.Name, Finding: &f})
}

// Progress reports how far the step is.
func (sc *StepContext) Progress(done, total int64, unit string) {
	sc.rep.Progress(sc.Name, done, total, unit)
}

// Logf writes a line for people.
func (sc *StepContext) Logf(format string, args ...any) {
	sc.rep.Emit(Event{Event: "log", Step: sc.Name, Message: fmt.Sprintf(format, args...)})
}

// LinkInput fills Out with the input's files (hard links where possible),
// leaving out the names in skip so the step can write its own versions.
func (sc *StepContext) LinkInput(skip ...string) error {
	names, err := listFiles(sc.In)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(sc.Out, 0o755); err != nil {
		return err
	}
	for _, n := range names {
		if contains(skip, n) {
			continue
		}
		if err := linkOrCopy(filepath.Join(sc.In, filepath.FromSlash(n)), filepath.Join(sc.Out, filepath.FromSlash(n))); err != nil {
			return err
		}
	}
	return nil
}

// runner executes steps in order, skipping those already in the cache.
type runner struct {
	cache *Cache
	rep   *Reporter
	force bool
	// srcDir is the source as the steps see it; srcShow is how errors name
	// it. A step reading a cache entry derived from the source has that
	// entry's path replaced by srcShow in its errors: the user knows
	// ./model/config.json, not steps/3fa9…/out/config.json.
	srcDir, srcShow string
}

// stepResult is a step's place in the finished chain.
type stepResult struct {
	Record StepRecord
	Dir    string // the directory the next step reads
}

// run executes steps on the source directory whose identity is srcKey and
// returns each step's record, the final directory and the final key.
func (r *runner) run(ctx context.Context, srcDir, srcKey string, steps []Step) ([]StepRecord, string, string, error) {
	dir, key := srcDir, srcKey
	var records []StepRecord
	for _, st := range steps {
		if err := ctx.Err(); err != nil {
			return nil, "", "", err
		}
		k, err := stepKey(st.Name, st.Version, buildID(), st.Options, key)
		if err != nil {
			return nil, "", "", inStep(st.Name, err)
		}
		res, err := r.runStep(ctx, st, dir, k)
		if err != nil {
			return nil, "", "", err
		}
		records = append(records, res.Record)
		dir, key = res.Dir, k
	}
	return records, dir, key, nil
}

func (r *runner) runStep(ctx context.Context, st Step, in, key string) (stepResult, error) {
	outOf := func(rec *cachedStep) string {
		if rec.Check {
			return in
		}
		return filepath.Join(r.cache.entry(key), "out")
	}
	record := func(findings []Finding) StepRecord {
		if findings == nil {
			findings = []Finding{}
		}
		return StepRecord{Name: st.Name, Key: key, Options: st.Options, Findings: findings}
	}
	if !r.force {
		if rec := r.cache.lookup(key); rec != nil {
			r.rep.Emit(Event{Event: "skip", Step: st.Name, Key: key, Reason: "cached"})
			// Findings are replayed so the events of a rerun tell the same story.
			for i := range rec.Findings {
				r.rep.Emit(Event{Event: "finding", Step: st.Name, Finding: &rec.Findings[i]})
			}
			return stepResult{Record: record(rec.Findings), Dir: outOf(rec)}, nil
		}
	}

	start := time.Now()
	r.rep.Emit(Event{Event: "start", Step: st.Name, Key: key})
	// An entry that exists here is either being redone (--force) or failed
	// lookup's checks (damaged): either way it is replaced.
	d, err := r.cache.begin(key, true)
	if err != nil {
		return stepResult{}, inStep(st.Name, fmt.Errorf("cache: %w", err))
	}
	defer d.Abort()
	sc := &StepContext{Name: st.Name, In: in, rep: r.rep}
	if !st.Check {
		sc.Out = filepath.Join(d.Path, "out")
	}
	err = st.Run(ctx, sc)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		err = inStep(st.Name, err)
		if in != r.srcDir && r.srcShow != "" {
			err = showPath(err, in, r.srcShow)
		}
		r.rep.Emit(Event{Event: "error", Step: st.Name, Key: key, Error: err.Error(), ExitCode: exitCode(err)})
		return stepResult{}, err
	}

	rec := cachedStep{Step: st.Name, Key: key, Check: st.Check, Findings: sc.findings}
	if rec.Findings == nil {
		rec.Findings = []Finding{}
	}
	if !st.Check {
		if fi, err := os.Stat(sc.Out); err != nil || !fi.IsDir() {
			return stepResult{}, inStep(st.Name, errNoOutput)
		}
		names, err := listFiles(sc.Out)
		if err != nil {
			return stepResult{}, inStep(st.Name, err)
		}
		for _, n := range names {
			fi, err := os.Stat(filepath.Join(sc.Out, filepath.FromSlash(n)))
			if err != nil {
				return stepResult{}, inStep(st.Name, err)
			}
			rec.Files = append(rec.Files, FileEntry{Path: n, Size: fi.Size()})
		}
	}
	failpoint.Hit("prep.step") // crash tests: kill -9 with the step's output written, not committed
	b, _ := json.MarshalIndent(rec, "", "  ")
	if err := atomicfile.WriteFile(filepath.Join(d.Path, stepRecordFile), append(b, '\n'), 0o644); err != nil {
		return stepResult{}, inStep(st.Name, err)
	}
	if err := r.cache.commit(d, key); err != nil {
		return stepResult{}, inStep(st.Name, fmt.Errorf("cache: %w", err))
	}
	r.rep.Emit(Event{Event: "done", Step: st.Name, Key: key, DurationMS: time.Since(start).Milliseconds()})
	return stepResult{Record: record(rec.Findings), Dir: outOf(&rec)}, nil
}

// exitCode is the code an error will exit with (for error events).
func exitCode(err error) int { return cli.CodeOf(err) }

var (
	buildIDOnce sync.Once
	buildIDVal  string
)

// buildID is what step keys record of edgectl itself: the release version,
// or for a development build ("dev") also a digest of the running binary,
// so that rebuilding edgectl with changed code does not reuse steps the
// old code produced.
func buildID() string {
	buildIDOnce.Do(func() {
		buildIDVal = version.String()
		if buildIDVal != "dev" {
			return
		}
		if exe, err := os.Executable(); err == nil {
			if sum, _, err := HashFile(exe); err == nil {
				buildIDVal += "+" + sum[:16]
			}
		}
	})
	return buildIDVal
}
