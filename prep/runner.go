package prep

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/edgectl/edgectl/artifact"
	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/failpoint"
	"github.com/edgectl/edgectl/internal/progress"
	"github.com/edgectl/edgectl/internal/version"
)

// runner executes steps in order, skipping those already in the cache.
type runner struct {
	cache *Cache
	emit  progress.Func
	force bool
	// srcDir is the source as the steps see it; srcShow is how errors name
	// it. A step reading a cache entry derived from the source has that
	// entry's path replaced by srcShow in its errors: the user knows
	// ./model/config.json, not steps/3fa9…/out/config.json.
	srcDir, srcShow string
}

// stepResult is a step's place in the finished chain.
type stepResult struct {
	Record artifact.StepRecord
	Dir    string // the directory the next step reads
}

// run executes steps on the source directory whose identity is srcKey and
// returns each step's record, the final directory and the final key.
func (r *runner) run(ctx context.Context, srcDir, srcKey string, steps []Step) ([]artifact.StepRecord, string, string, error) {
	dir, key := srcDir, srcKey
	var records []artifact.StepRecord
	for _, st := range steps {
		if err := ctx.Err(); err != nil {
			return nil, "", "", err
		}
		k, err := stepKey(st.Name, st.Version, buildID(), st.options, key)
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
	record := func(findings []artifact.Finding) artifact.StepRecord {
		if findings == nil {
			findings = []artifact.Finding{}
		}
		return artifact.StepRecord{Name: st.Name, Key: key, Options: st.options, Findings: findings}
	}
	if !r.force {
		if rec := r.cache.lookup(key); rec != nil {
			r.emit.Emit(progress.Event{Event: progress.Skip, Step: st.Name, Key: key, Reason: "cached"})
			// Findings are replayed so the events of a rerun tell the same story.
			for i := range rec.Findings {
				r.emit.Emit(progress.Event{Event: progress.Finding, Step: st.Name, Finding: findingRecord(rec.Findings[i])})
			}
			return stepResult{Record: record(rec.Findings), Dir: outOf(rec)}, nil
		}
	}

	start := time.Now()
	r.emit.Emit(progress.Event{Event: progress.Start, Step: st.Name, Key: key})
	// An entry that exists here is either being redone (--force) or failed
	// lookup's checks (damaged): either way it is replaced.
	d, err := r.cache.begin(key, true)
	if err != nil {
		return stepResult{}, inStep(st.Name, fmt.Errorf("cache: %w", err))
	}
	defer d.Abort()
	sc := &StepContext{Name: st.Name, In: in, emit: r.emit}
	if !st.Check {
		sc.Out = filepath.Join(d.Path, "out")
	}
	err = st.run(ctx, sc)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		err = inStep(st.Name, err)
		if in != r.srcDir && r.srcShow != "" {
			err = showPath(err, in, r.srcShow)
		}
		r.emit.Emit(progress.Event{Event: progress.Error, Step: st.Name, Key: key, Err: err})
		return stepResult{}, err
	}

	rec := cachedStep{Step: st.Name, Key: key, Check: st.Check, Findings: sc.findings}
	if rec.Findings == nil {
		rec.Findings = []artifact.Finding{}
	}
	if !st.Check {
		if fi, err := os.Stat(sc.Out); err != nil || !fi.IsDir() {
			return stepResult{}, inStep(st.Name, errNoOutput)
		}
		names, err := artifact.ListFiles(sc.Out)
		if err != nil {
			return stepResult{}, inStep(st.Name, err)
		}
		for _, n := range names {
			fi, err := os.Stat(filepath.Join(sc.Out, filepath.FromSlash(n)))
			if err != nil {
				return stepResult{}, inStep(st.Name, err)
			}
			rec.Files = append(rec.Files, artifact.FileEntry{Path: n, Size: fi.Size()})
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
	r.emit.Emit(progress.Event{Event: progress.Done, Step: st.Name, Key: key, DurationMS: time.Since(start).Milliseconds()})
	return stepResult{Record: record(rec.Findings), Dir: outOf(&rec)}, nil
}

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
			if sum, _, err := artifact.HashFile(exe); err == nil {
				buildIDVal += "+" + sum[:16]
			}
		}
	})
	return buildIDVal
}
