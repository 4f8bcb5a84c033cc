package serve

import (
	"errors"
	"fmt"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
)

// What each backend does with a request's sampling and scoring fields: the
// one table behind the 400s of checkLaneFields, the "fields" object of
// GET /v1/models and the table in docs/serve.md (TestLaneFieldsDocTable
// keeps the two equal). A field a backend refuses is a 400 naming it;
// nothing is accepted and ignored.

// Support values.
const (
	Applied   = "applied"   // takes effect
	Forwarded = "forwarded" // sent to the upstream server, which decides
	Refused   = "refused"   // 400 naming the field
)

// laneField is one row of the table.
type laneField struct {
	name string // OpenAI's name; Ollama's is "options." + name
	// toplevel: Ollama takes it beside options, not in them (logprobs),
	// under ollama when its name differs (format).
	toplevel bool
	ollama   string
	// set reports whether req asks for the field; ollama says the request
	// came through Ollama's options (where seed -1 means random: nothing).
	set                 func(req engine.Request, ollama bool) bool
	cpu, axcl, upstream string
	why                 string // why a backend refuses it (the 400's advice)
	// check, when set, validates the value for a backend that applies it
	// (a schema the grammar cannot compile is a 400 naming the field).
	check func(req engine.Request) error
}

const cpuOnly = "only the cpu lane implements it; leave it out"

var laneFields = []laneField{
	{name: "temperature", set: func(r engine.Request, _ bool) bool { return r.Sampling.Temperature != nil },
		cpu: Applied, axcl: Applied, upstream: Forwarded},
	{name: "top_p", set: func(r engine.Request, _ bool) bool { return r.Sampling.TopP > 0 && r.Sampling.TopP < 1 },
		cpu: Applied, axcl: Applied, upstream: Forwarded},
	{name: "top_k", set: func(r engine.Request, _ bool) bool { return r.Sampling.TopK > 0 },
		cpu: Applied, axcl: Applied, upstream: Forwarded},
	{name: "repeat_penalty", set: func(r engine.Request, _ bool) bool {
		return r.Sampling.RepeatPenalty > 0 && r.Sampling.RepeatPenalty != 1
	},
		cpu: Applied, axcl: Applied, upstream: Forwarded},
	{name: "repeat_last_n", set: func(r engine.Request, _ bool) bool { return r.Sampling.RepeatLastN != 0 || r.Sampling.PenaltiesOff },
		cpu: Applied, axcl: Applied, upstream: Forwarded},
	{name: "min_p", set: func(r engine.Request, _ bool) bool { return r.Sampling.MinP != 0 },
		cpu: Applied, axcl: Refused, upstream: Forwarded,
		why: "the vendor runtime has no min-p sampling (its post_config.json offers temperature, top_p, top_k and a repetition penalty); leave it out"},
	{name: "seed", set: func(r engine.Request, ollama bool) bool {
		return r.Sampling.Seed != nil && !(ollama && *r.Sampling.Seed == -1)
	},
		cpu: Applied, axcl: Refused, upstream: Forwarded,
		why: "the vendor runtime seeds its sampler from std::random_device, so a seed cannot be applied; leave it out (temperature 0 is deterministic)"},
	{name: "logprobs", toplevel: true, set: func(r engine.Request, _ bool) bool { return r.Logprobs },
		cpu: Applied, axcl: Refused, upstream: Refused, why: cpuOnly},
	{name: "frequency_penalty", set: func(r engine.Request, _ bool) bool { return r.Sampling.FrequencyPenalty != 0 },
		cpu: Applied, axcl: Refused, upstream: Refused, why: cpuOnly},
	{name: "presence_penalty", set: func(r engine.Request, _ bool) bool { return r.Sampling.PresencePenalty != 0 },
		cpu: Applied, axcl: Refused, upstream: Refused, why: cpuOnly},
	{name: "response_format", toplevel: true, ollama: "format", set: func(r engine.Request, _ bool) bool { return r.Format != nil },
		cpu: Applied, axcl: Refused, upstream: Forwarded, check: checkFormat,
		why: "the vendor runtime cannot constrain its output to JSON (structured output runs on the cpu lane and HTTP upstreams); leave it out"},
	// tool_choice "none" offers nothing (tools.go): it passes everywhere,
	// and an upstream is forwarded it.
	{name: "tools", toplevel: true, set: func(r engine.Request, _ bool) bool { return r.Tools.Offered() },
		cpu: Applied, axcl: Refused, upstream: Forwarded, check: checkTools,
		why: "the vendor runtime cannot call tools (tool calling runs on the cpu lane and HTTP upstreams); leave tools out or send tool_choice \"none\""},
	// Thinking asked for: an effort (reasoning_effort, Ollama's think
	// levels, Responses' reasoning.effort) or thinking on (think true,
	// Anthropic's thinking). The cpu lane renders it into the template
	// and splits the answer (reasoning.go); an upstream is sent
	// reasoning_effort and chat_template_kwargs (engine/upstream/reasoning.go).
	{name: "reasoning_effort", toplevel: true, ollama: "think", set: func(r engine.Request, _ bool) bool {
		return r.Think != nil && (r.Think.Effort != "" || r.Think.On != nil && *r.Think.On)
	},
		cpu: Applied, axcl: Refused, upstream: Forwarded,
		why: "the vendor runtime's answers are not split into thinking and answer (reasoning runs on the cpu lane and HTTP upstreams); leave it out"},
}

// backend is the engine that runs e: "cpu", "axcl" or "upstream".
func backend(e *Entry) string {
	switch {
	case e.Engine != "":
		return e.Engine
	case e.Lane == LaneCPU || e.Lane == LaneAxcl:
		return e.Lane
	}
	return "upstream"
}

// field is the row's name in a request: OpenAI's, or Ollama's (prefix
// "options.").
func (f laneField) field(prefix string) string {
	switch {
	case prefix != "" && f.ollama != "":
		return f.ollama
	case f.toplevel:
		return f.name
	}
	return prefix + f.name
}

func (f laneField) support(backend string) string {
	switch backend {
	case "cpu":
		return f.cpu
	case "axcl":
		return f.axcl
	}
	return f.upstream
}

// fieldSupport is the "fields" object of a model in GET /v1/models; none
// for the rknn lane's encoders, which take no generation fields at all.
func fieldSupport(e *Entry) map[string]string {
	if e.Lane == LaneRKNN {
		return nil
	}
	b := backend(e)
	m := make(map[string]string, len(laneFields))
	for _, f := range laneFields {
		m[f.name] = f.support(b)
	}
	return m
}

// checkLaneFields refuses, with a 400 naming it, the first field of req
// that the backend running e does not apply. prefix is "options." for
// Ollama's options.
func checkLaneFields(e *Entry, req engine.Request, prefix string) error {
	b := backend(e)
	for _, f := range laneFields {
		if !f.set(req, prefix != "") {
			continue
		}
		field := f.field(prefix)
		switch support := f.support(b); {
		case support == Refused:
			return &api.FieldError{Field: field, Msg: fmt.Sprintf("%s is not supported on the %s lane (%s runs there): %s", field, e.Lane, e.Name, f.why)}
		case support == Applied && f.check != nil:
			var fe *api.FieldError
			if err := f.check(req); errors.As(err, &fe) { // names its own field
				return fe
			} else if err != nil {
				return &api.FieldError{Field: field, Msg: field + ": " + err.Error()}
			}
		}
	}
	// The vendor runtime applies top_p and top_k, but one at a time
	// (AXERA-TECH/ax-llm LLMPostprocess::apply).
	if sm := req.Sampling; b == "axcl" && sm.TopK > 0 && sm.TopP > 0 && sm.TopP < 1 {
		field := prefix + "top_k"
		return &api.FieldError{Field: field, Msg: fmt.Sprintf(
			"%s is not supported on the %s lane (%s runs there): the vendor runtime samples with top_p or top_k, not both (LLMPostprocess::apply); send one of them",
			field, e.Lane, e.Name)}
	}
	return nil
}
