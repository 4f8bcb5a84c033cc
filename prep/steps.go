package prep

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/edgectl/edgectl/doctor"
	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/patch"
)

// checkStep validates the source before any work: what makes a model
// unloadable on every target (see validate) stops prep with an error that
// names the user's files. It runs on the source directory itself, before
// import copies anything. (The NPU-specific verdict is doctor's, in
// doctorStep.)
func checkStep(target string) Step {
	norms := target != TargetAX650 // ax650's layernorm step adds missing norms
	return Step{
		Name:    "check",
		Version: 2,
		Check:   true,
		Options: map[string]any{"norms": norms},
		Run: func(ctx context.Context, sc *StepContext) error {
			findings, err := validate(sc.In, target)
			if err != nil {
				return err
			}
			for _, f := range findings {
				sc.Finding(scrub(sc.In, f))
			}
			return nil
		},
	}
}

// doctorStep runs doctor for the NPU target: blocking findings stop the
// pipeline (exit 4); fixable ones are what the next steps repair.
func doctorStep(target string, kvLen int) Step {
	return Step{
		Name:    "doctor",
		Version: 1,
		Check:   true,
		Options: map[string]any{"target": target, "kv_cache_len": kvLen},
		Run: func(ctx context.Context, sc *StepContext) error {
			r, err := doctor.Check(sc.In, doctor.Options{Target: target, KVCacheLen: kvLen})
			if err != nil {
				return &Error{Kind: KindInput, Err: err}
			}
			var blocking []string
			for _, f := range r.Findings {
				sc.Finding(scrub(sc.In, Finding{Severity: string(f.Severity), Code: f.ID, Message: f.Message, Evidence: f.Evidence, Fix: f.Fix}))
				if f.Severity == doctor.Blocking {
					blocking = append(blocking, f.ID+": "+f.Message) // the runner names the source
				}
			}
			if len(blocking) > 0 {
				return blockedErr("the model cannot be built for %s: %s", target, strings.Join(blocking, "; "))
			}
			return nil
		},
	}
}

// patchConfigStep replaces eos_token_id arrays by one id and records the
// KV-cache length as 128·k−1.
func patchConfigStep(kvLen int, eos *int) Step {
	opts := map[string]any{"kv_cache_len": kvLen}
	if eos != nil {
		opts["eos"] = *eos
	}
	return Step{
		Name:    "patch-config",
		Version: 1,
		Options: opts,
		Run: func(ctx context.Context, sc *StepContext) error {
			edits, err := patch.PlanConfig(sc.In, patch.ConfigOptions{EOS: eos, KVCacheLen: kvLen})
			if err != nil {
				return &Error{Kind: KindInput, Err: err}
			}
			out, err := patch.NewOutput(sc.In, sc.Out, false)
			if err != nil {
				return err
			}
			defer out.Abort()
			for _, e := range edits {
				for _, c := range e.Changes {
					sc.Finding(Finding{Severity: "fixed", Code: c.Key,
						Message: fmt.Sprintf("%s: %s %v → %v (%s)", c.File, c.Key, jsonish(c.Old), jsonish(c.New), c.Reason)})
				}
				if err := out.WriteBytes(e.Name, e.New); err != nil {
					return err
				}
			}
			return out.Commit()
		},
	}
}

// layerNormStep adds the norm tensors the compiler's tiler expects.
func layerNormStep() Step {
	return Step{
		Name:    "layernorm",
		Version: 1,
		Options: map[string]any{"dtype": string(safetensors.F16)},
		Run: func(ctx context.Context, sc *StepContext) error {
			plan, err := patch.PlanLayerNorm(sc.In, patch.LayerNormOptions{DType: safetensors.F16})
			if err != nil {
				return &Error{Kind: KindInput, Err: err}
			}
			defer plan.Close()
			out, err := patch.NewOutput(sc.In, sc.Out, false)
			if err != nil {
				return err
			}
			defer out.Abort()
			for _, a := range plan.Adds {
				sc.Finding(Finding{Severity: "fixed", Code: "norm-added",
					Message: fmt.Sprintf("added %s %v %s filled with %g in %s", a.Name, a.Shape, a.DType, a.Fill, a.Shard)})
			}
			if err := plan.Apply(out, io.Discard); err != nil {
				return err
			}
			return out.Commit()
		},
	}
}

// scrub keeps cache paths out of findings (the model directory reads as
// MODEL), so the manifest does not depend on where the cache lives.
func scrub(dir string, f Finding) Finding {
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
