package serve

import (
	"encoding/json"
	"fmt"

	"github.com/edgectl/edgectl/api"
)

// The Responses API gives a model's thinking as a reasoning output item
// before the message: {"type":"reasoning","id":"rs_…","summary":[{"type":
// "summary_text","text":…}]}, streamed as response.reasoning_summary_part
// and response.reasoning_summary_text events. edgectl's summary is the
// thinking itself, whole: it has no model to summarise it with. The
// request's reasoning.effort goes to the template (reasoning_effort;
// "none" turns thinking off, enable_thinking false).

// responsesThink reads the request's reasoning: {"effort": …,
// "summary": …}.
func responsesThink(req *api.ResponsesRequest) thinkAsk {
	a, _ := responsesReasoning(req.Reasoning) // checked in checkResponsesFields
	return a
}

func responsesReasoning(raw json.RawMessage) (thinkAsk, error) {
	a := thinkAsk{split: true, show: true, field: "reasoning.effort"}
	if absent(raw) {
		return a, nil
	}
	var r struct {
		Effort  *string `json:"effort"`
		Summary *string `json:"summary"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return a, &api.FieldError{Field: "reasoning", Msg: fmt.Sprintf(`reasoning: want {"effort":"low"|"medium"|"high"|"none", "summary":"auto"|"concise"|"detailed"}, not %s`, short(raw))}
	}
	if r.Effort != nil {
		switch *r.Effort {
		case "none":
			off := false
			a.on = &off
		case "minimal", "low", "medium", "high", "xhigh":
			a.effort = *r.Effort
		default:
			return a, &api.FieldError{Field: "reasoning.effort", Msg: fmt.Sprintf(`reasoning.effort %q: want "none", "minimal", "low", "medium", "high" or "xhigh"`, *r.Effort)}
		}
	}
	if r.Summary != nil {
		switch *r.Summary {
		case "auto", "concise", "detailed":
		default:
			return a, &api.FieldError{Field: "reasoning.summary", Msg: fmt.Sprintf(`reasoning.summary %q: want "auto", "concise" or "detailed"`, *r.Summary)}
		}
	}
	return a, nil
}

// responsesThinkErr is what is wrong with the request's reasoning.
func responsesThinkErr(raw json.RawMessage) error {
	_, err := responsesReasoning(raw)
	return err
}

// addReasoning adds thinking to the open reasoning item (opened when
// needed).
func (rw *responseWriter) addReasoning(s string) error {
	if s == "" {
		return nil
	}
	if rw.reasoning < 0 {
		rw.reasoning = len(rw.resp.Output)
		rw.thought.Reset()
		rw.resp.Output = append(rw.resp.Output, api.ResponseOutputItem{Type: "reasoning", ID: newID("rs_"), Status: "in_progress", Summary: []api.ReasoningSummary{}})
		if rw.sw != nil {
			item := &rw.resp.Output[rw.reasoning]
			if err := firstErr(rw.itemEvent("response.output_item.added", rw.reasoning),
				rw.event("response.reasoning_summary_part.added", api.ReasoningSummaryEvent{Type: "response.reasoning_summary_part.added",
					SequenceNumber: rw.next(), ItemID: item.ID, OutputIndex: rw.reasoning, Part: &api.ReasoningSummary{Type: "summary_text"}})); err != nil {
				return err
			}
		}
	}
	rw.thought.WriteString(s)
	item := &rw.resp.Output[rw.reasoning]
	return rw.event("response.reasoning_summary_text.delta", api.ReasoningSummaryEvent{Type: "response.reasoning_summary_text.delta",
		SequenceNumber: rw.next(), ItemID: item.ID, OutputIndex: rw.reasoning, Delta: &s})
}

// closeReasoning ends the open reasoning item.
func (rw *responseWriter) closeReasoning() error {
	if rw.reasoning < 0 {
		return nil
	}
	i, text := rw.reasoning, rw.thought.String()
	rw.reasoning = -1
	item := &rw.resp.Output[i]
	part := api.ReasoningSummary{Type: "summary_text", Text: text}
	item.Status, item.Summary = "completed", []api.ReasoningSummary{part}
	if rw.sw == nil {
		return nil
	}
	return firstErr(
		rw.event("response.reasoning_summary_text.done", api.ReasoningSummaryEvent{Type: "response.reasoning_summary_text.done",
			SequenceNumber: rw.next(), ItemID: item.ID, OutputIndex: i, Text: &text}),
		rw.event("response.reasoning_summary_part.done", api.ReasoningSummaryEvent{Type: "response.reasoning_summary_part.done",
			SequenceNumber: rw.next(), ItemID: item.ID, OutputIndex: i, Part: &part}),
		rw.itemEvent("response.output_item.done", i))
}

// hasMessageOrCall reports whether the output holds a message or a call.
func hasMessageOrCall(out []api.ResponseOutputItem) bool {
	for _, it := range out {
		if it.Type != "reasoning" {
			return true
		}
	}
	return false
}
