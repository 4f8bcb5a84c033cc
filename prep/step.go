package prep

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/edgectl/edgectl/artifact"
	"github.com/edgectl/edgectl/internal/progress"
)

// Step is one stage of the pipeline. Its output depends only on its input
// directory and its options, which is what makes it cacheable. Steps are
// built by newStep, which ties the options to what the step runs with.
type Step struct {
	Name string
	// Version changes whenever the step's output for the same input and
	// options changes, so old cache entries stop matching.
	Version int
	// Check steps write no files (doctor): the next step reads their input.
	Check bool
	// options is the canonical JSON of the step's options struct: every
	// setting that changes the output. The cache key hashes these bytes and
	// the manifest records them as they are.
	options json.RawMessage
	run     func(ctx context.Context, sc *StepContext) error
}

// newStep makes a step from its options struct O and its run function.
// The options are encoded once (json.Marshal of a struct: fields in
// declaration order, so the bytes are deterministic) and run receives an O
// decoded back from those very bytes: a setting the key does not hold
// (an unexported field, one tagged `json:"-"`) reaches run as its zero
// value, so a step cannot depend on something its key leaves out. run
// should be a plain function, not a closure: what it reads besides o is
// then visibly only the StepContext.
func newStep[O any](name string, version int, opts O, run func(context.Context, *StepContext, O) error) Step {
	b, err := json.Marshal(opts)
	if err != nil {
		// Options are structs of strings, numbers and booleans; this is a
		// programming error, reported when the step runs.
		return Step{Name: name, Version: version, run: func(context.Context, *StepContext) error {
			return fmt.Errorf("options %T are not encodable: %v", opts, err)
		}}
	}
	return Step{Name: name, Version: version, options: b, run: func(ctx context.Context, sc *StepContext) error {
		o, err := decodeOptions[O](b)
		if err != nil {
			return fmt.Errorf("options %s: %v", b, err)
		}
		return run(ctx, sc, o)
	}}
}

// decodeOptions reads options back from their canonical JSON, refusing
// bytes that do not round-trip (an encoding that loses or invents a
// setting would let the key and the run disagree).
func decodeOptions[O any](b []byte) (O, error) {
	var o O
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return o, err
	}
	again, err := json.Marshal(o)
	if err != nil {
		return o, err
	}
	if !bytes.Equal(again, b) {
		return o, fmt.Errorf("do not survive a JSON round trip (read back as %s)", again)
	}
	return o, nil
}

// StepContext is what a running step sees besides its options.
type StepContext struct {
	Name string
	// In is the input directory. It belongs to the cache or the Hub cache:
	// read it, never write it.
	In string
	// Out is where the step creates its output directory (it does not exist
	// yet, so library calls that refuse to overwrite can write it directly).
	// Empty for Check steps.
	Out string

	findings []artifact.Finding
	emit     progress.Func
}

// Finding records something the step noticed or changed; it goes to the
// events now and to the manifest later.
func (sc *StepContext) Finding(f artifact.Finding) {
	sc.findings = append(sc.findings, f)
	sc.emit.Emit(progress.Event{Event: progress.Finding, Step: sc.Name, Finding: findingRecord(f)})
}

// Progress reports how far the step is.
func (sc *StepContext) Progress(done, total int64, unit string) {
	sc.emit.Emit(progress.Event{Event: progress.Progress, Step: sc.Name, Done: done, Total: total, Unit: unit})
}

// Logf writes a line for people.
func (sc *StepContext) Logf(format string, args ...any) {
	sc.emit.Emit(progress.Event{Event: progress.Log, Step: sc.Name, Message: fmt.Sprintf(format, args...)})
}

// ToolLog passes an external tool's output line to people (stderr), never
// to the --json event stream.
func (sc *StepContext) ToolLog(line string) {
	sc.emit.Emit(progress.Event{Event: progress.ToolLog, Step: sc.Name, Message: line})
}

// LinkInput fills Out with the input's files (hard links where possible),
// leaving out the names in skip so the step can write its own versions.
func (sc *StepContext) LinkInput(skip ...string) error {
	names, err := artifact.ListFiles(sc.In)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(sc.Out, 0o755); err != nil {
		return err
	}
	for _, n := range names {
		if slices.Contains(skip, n) {
			continue
		}
		if err := linkOrCopy(filepath.Join(sc.In, filepath.FromSlash(n)), filepath.Join(sc.Out, filepath.FromSlash(n))); err != nil {
			return err
		}
	}
	return nil
}
