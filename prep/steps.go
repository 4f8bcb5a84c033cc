package prep

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/edgectl/edgectl/artifact"
	"github.com/edgectl/edgectl/doctor"
	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/patch"
)

// Each step's options are a struct: its canonical JSON is the step's cache
// key input and its manifest record, and the step's run function reads its
// settings from it alone (see newStep). Fields are in alphabetical order
// of their JSON names, as the manifest showed them when options were maps.

// checkOptions: Norms says whether a missing norm tensor is an error (it is
// unless the target's layernorm step adds norms).
type checkOptions struct {
	Norms bool `json:"norms"`
}

// checkStep validates the source before any work: what makes a model
// unloadable on every target (see validate) stops prep with an error that
// names the user's files. It runs on the source directory itself, before
// import copies anything. (The NPU-specific verdict is doctor's, in
// doctorStep.)
func checkStep(target string) Step {
	st := newStep("check", 2, checkOptions{Norms: target != TargetAX650}, runCheck)
	st.Check = true
	return st
}

func runCheck(ctx context.Context, sc *StepContext, o checkOptions) error {
	findings, err := validate(sc.In, o.Norms)
	if err != nil {
		return err
	}
	for _, f := range findings {
		sc.Finding(scrub(sc.In, f))
	}
	return nil
}

// doctorOptions are doctor's target and the KV-cache length to judge.
type doctorOptions struct {
	KVCacheLen int    `json:"kv_cache_len"`
	Target     string `json:"target"`
}

// doctorStep runs doctor for the NPU target: blocking findings stop the
// pipeline (exit 4); fixable ones are what the next steps repair.
func doctorStep(o doctorOptions) Step {
	st := newStep("doctor", 1, o, runDoctor)
	st.Check = true
	return st
}

func runDoctor(ctx context.Context, sc *StepContext, o doctorOptions) error {
	r, err := doctor.Check(sc.In, doctor.Options{Target: o.Target, KVCacheLen: o.KVCacheLen})
	if err != nil {
		return errkind.Wrap(errkind.Input, err)
	}
	var blocking []string
	for _, f := range r.Findings {
		sc.Finding(scrub(sc.In, artifact.Finding{Severity: string(f.Severity), Code: f.ID, Message: f.Message, Evidence: f.Evidence, Fix: f.Fix}))
		if f.Severity == doctor.Blocking {
			blocking = append(blocking, f.ID+": "+f.Message) // the runner names the source
		}
	}
	if len(blocking) > 0 {
		return blockedErr("the model cannot be built for %s: %s", o.Target, strings.Join(blocking, "; "))
	}
	return nil
}

// patchConfigOptions: the id replacing an eos_token_id array (nil: the
// tokenizer's eos token), and the KV-cache length to record.
type patchConfigOptions struct {
	EOS        *int `json:"eos,omitempty"`
	KVCacheLen int  `json:"kv_cache_len"`
}

// patchConfigStep replaces eos_token_id arrays by one id and records the
// KV-cache length as 128·k−1.
func patchConfigStep(o patchConfigOptions) Step {
	return newStep("patch-config", 1, o, runPatchConfig)
}

func runPatchConfig(ctx context.Context, sc *StepContext, o patchConfigOptions) error {
	edits, err := patch.PlanConfig(sc.In, patch.ConfigOptions{EOS: o.EOS, KVCacheLen: o.KVCacheLen})
	if err != nil {
		return errkind.Wrap(errkind.Input, err)
	}
	out, err := patch.NewOutput(sc.In, sc.Out, false)
	if err != nil {
		return err
	}
	defer out.Abort()
	for _, e := range edits {
		for _, c := range e.Changes {
			sc.Finding(artifact.Finding{Severity: "fixed", Code: c.Key,
				Message: fmt.Sprintf("%s: %s %v → %v (%s)", c.File, c.Key, jsonish(c.Old), jsonish(c.New), c.Reason)})
		}
		if err := out.WriteBytes(e.Name, e.New); err != nil {
			return err
		}
	}
	return out.Commit()
}

// layerNormOptions: the dtype of the norm tensors added.
type layerNormOptions struct {
	DType safetensors.DType `json:"dtype"`
}

// layerNormStep adds the norm tensors the compiler's tiler expects.
func layerNormStep() Step {
	return newStep("layernorm", 1, layerNormOptions{DType: safetensors.F16}, runLayerNorm)
}

func runLayerNorm(ctx context.Context, sc *StepContext, o layerNormOptions) error {
	plan, err := patch.PlanLayerNorm(sc.In, patch.LayerNormOptions{DType: o.DType})
	if err != nil {
		return errkind.Wrap(errkind.Input, err)
	}
	defer plan.Close()
	out, err := patch.NewOutput(sc.In, sc.Out, false)
	if err != nil {
		return err
	}
	defer out.Abort()
	for _, a := range plan.Adds {
		sc.Finding(artifact.Finding{Severity: "fixed", Code: "norm-added",
			Message: fmt.Sprintf("added %s %v %s filled with %g in %s", a.Name, a.Shape, a.DType, a.Fill, a.Shard)})
	}
	if err := plan.Apply(out, io.Discard); err != nil {
		return err
	}
	return out.Commit()
}

// scrub keeps cache paths out of findings (the model directory reads as
// MODEL), so the manifest does not depend on where the cache lives.
func scrub(dir string, f artifact.Finding) artifact.Finding {
	f.Message = scrubText(dir, f.Message)
	f.Evidence = scrubText(dir, f.Evidence)
	f.Fix = scrubText(dir, f.Fix)
	return f
}

func scrubText(dir, s string) string { return strings.ReplaceAll(s, dir, "MODEL") }

func jsonish(v any) string {
	if v == nil {
		return "(absent)"
	}
	return fmt.Sprint(v)
}
