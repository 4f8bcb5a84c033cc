package serve

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/toolcall"
)

// serveResponse runs a Responses request and answers with the response
// object, or streams it: response.created and .in_progress once the model
// is loaded; per output item its .added, its content part or arguments as
// they come, its .done; then response.completed (response.incomplete when
// max_output_tokens cut the answer, error and response.failed when the
// generation failed), each event numbered.
func (s *Server) serveResponse(w http.ResponseWriter, r *http.Request, req *api.ResponsesRequest, ereq engine.Request) {
	resp := &api.Response{ID: newID("resp_"), Object: "response", CreatedAt: time.Now().Unix(), Status: "in_progress",
		Instructions: req.Instructions, MaxOutputTokens: req.MaxOutputTokens, Model: req.Model, Output: []api.ResponseOutputItem{},
		ParallelToolCalls: req.ParallelToolCalls == nil || *req.ParallelToolCalls, Temperature: req.Temperature, TopP: req.TopP,
		ToolChoice: orRaw(req.ToolChoice, `"auto"`), Tools: orRaw(req.Tools, `[]`), Text: api.ResponsesText{Format: json.RawMessage(`{"type":"text"}`)},
		Truncation: "disabled", Metadata: req.Metadata}
	if req.Text != nil && !absent(req.Text.Format) {
		resp.Text.Format = req.Text.Format
	}
	if resp.Metadata == nil {
		resp.Metadata = map[string]string{}
	}
	rw := &responseWriter{resp: resp, msg: -1, reasoning: -1, calls: map[int]int{}}
	begin := func() error {
		if !req.Stream {
			return nil
		}
		rw.sw = startSSE(w)
		return firstErr(rw.lifecycle("response.created"), rw.lifecycle("response.in_progress"))
	}
	t, err := s.chatTurn(r, req.Model, keepAlive(req.KeepAlive), ereq, responsesThink(req), begin, rw.add)
	if err != nil {
		code, err := turnStatus(err)
		err = renameField(err, "response_format", "text.format")
		if rw.sw == nil {
			s.openAIFail(w, r, req.Model, code, err)
			return
		}
		note(r, req.Model, code)
		if code != 499 {
			rw.fail(code, err)
		}
		return
	}
	if err := rw.finish(t); err != nil {
		note(r, req.Model, 499)
		return
	}
	note(r, req.Model, http.StatusOK)
	if rw.sw == nil {
		writeJSON(w, http.StatusOK, resp)
		return
	}
	if resp.Status == "incomplete" {
		rw.lifecycle("response.incomplete")
		return
	}
	rw.lifecycle("response.completed")
}

// orRaw is raw, or def when raw is absent.
func orRaw(raw json.RawMessage, def string) json.RawMessage {
	if absent(raw) {
		return json.RawMessage(def)
	}
	return raw
}

// responseWriter builds the response object from a turn's events and,
// streaming, sends each step as its event.
type responseWriter struct {
	sw    *sseWriter // nil: not streamed
	seq   int
	resp  *api.Response
	msg   int // output index of the open message item; -1: none
	text  strings.Builder
	calls map[int]int // tool call index → output index
	// reasoning: output index of the open reasoning item (-1: none), its
	// text so far (serve/reasoning_responses.go)
	reasoning int
	thought   strings.Builder
}

func (rw *responseWriter) next() int {
	rw.seq++
	return rw.seq - 1
}

// event sends ev as the stream's event typ (nothing when not streaming).
func (rw *responseWriter) event(typ string, ev any) error {
	if rw.sw == nil {
		return nil
	}
	return rw.sw.sendEvent(typ, ev)
}

func (rw *responseWriter) lifecycle(typ string) error {
	if rw.sw == nil {
		return nil
	}
	return rw.event(typ, api.ResponseLifecycleEvent{Type: typ, SequenceNumber: rw.next(), Response: rw.resp})
}

func (rw *responseWriter) itemEvent(typ string, i int) error {
	if rw.sw == nil {
		return nil
	}
	return rw.event(typ, api.ResponseItemEvent{Type: typ, SequenceNumber: rw.next(), OutputIndex: i, Item: &rw.resp.Output[i]})
}

func outputText(text string) api.OutputText {
	return api.OutputText{Type: "output_text", Text: text, Annotations: []json.RawMessage{}, Logprobs: []json.RawMessage{}}
}

// openMessage begins a message item and its output_text part.
func (rw *responseWriter) openMessage() error {
	rw.msg = len(rw.resp.Output)
	rw.text.Reset()
	rw.resp.Output = append(rw.resp.Output, api.ResponseOutputItem{Type: "message", ID: newID("msg_"), Status: "in_progress", Role: "assistant", Content: []api.OutputText{}})
	if rw.sw == nil {
		return nil
	}
	return firstErr(rw.itemEvent("response.output_item.added", rw.msg),
		rw.event("response.content_part.added", api.ResponsePartEvent{Type: "response.content_part.added", SequenceNumber: rw.next(),
			ItemID: rw.resp.Output[rw.msg].ID, OutputIndex: rw.msg, Part: outputText("")}))
}

// closeMessage ends the open message item with status.
func (rw *responseWriter) closeMessage(status string) error {
	if rw.msg < 0 {
		return nil
	}
	i, text := rw.msg, rw.text.String()
	rw.msg = -1
	item := &rw.resp.Output[i]
	item.Status, item.Content = status, []api.OutputText{outputText(text)}
	if rw.sw == nil {
		return nil
	}
	return firstErr(
		rw.event("response.output_text.done", api.ResponseTextDoneEvent{Type: "response.output_text.done", SequenceNumber: rw.next(),
			ItemID: item.ID, OutputIndex: i, Text: text, Logprobs: []json.RawMessage{}}),
		rw.event("response.content_part.done", api.ResponsePartEvent{Type: "response.content_part.done", SequenceNumber: rw.next(),
			ItemID: item.ID, OutputIndex: i, Part: outputText(text)}),
		rw.itemEvent("response.output_item.done", i))
}

// add takes a turn's text and tool-call events: text goes to the open
// message item (opened when needed), each call is a function_call item.
func (rw *responseWriter) add(evs []toolcall.Event) error {
	for _, e := range evs {
		var err error
		if e.Kind != toolcall.Reasoning {
			if err := rw.closeReasoning(); err != nil { // serve/reasoning_responses.go
				return err
			}
		}
		switch e.Kind {
		case toolcall.Reasoning:
			err = rw.addReasoning(e.Text)
		case toolcall.Text:
			if rw.msg < 0 {
				if err = rw.openMessage(); err != nil {
					return err
				}
			}
			rw.text.WriteString(e.Text)
			item := &rw.resp.Output[rw.msg]
			err = rw.event("response.output_text.delta", api.ResponseTextDeltaEvent{Type: "response.output_text.delta", SequenceNumber: rw.next(),
				ItemID: item.ID, OutputIndex: rw.msg, Delta: e.Text, Logprobs: []json.RawMessage{}})
		case toolcall.Start:
			if err = rw.closeMessage("completed"); err != nil {
				return err
			}
			rw.calls[e.Index] = len(rw.resp.Output)
			rw.resp.Output = append(rw.resp.Output, api.ResponseOutputItem{Type: "function_call", ID: newID("fc_"), Status: "in_progress",
				CallID: e.Call.ID, Name: e.Call.Name, Arguments: new(string)})
			err = rw.itemEvent("response.output_item.added", rw.calls[e.Index])
		case toolcall.Args:
			i := rw.calls[e.Index]
			item := &rw.resp.Output[i]
			*item.Arguments += e.Text
			err = rw.event("response.function_call_arguments.delta", api.ResponseArgumentsDeltaEvent{Type: "response.function_call_arguments.delta",
				SequenceNumber: rw.next(), ItemID: item.ID, OutputIndex: i, Delta: e.Text})
		case toolcall.End:
			i := rw.calls[e.Index]
			item := &rw.resp.Output[i]
			args := e.Call.Arguments
			item.Arguments, item.Status = &args, "completed"
			if !e.Call.Valid {
				item.Status = "incomplete" // cut short: its arguments do not parse
			}
			err = firstErr(rw.event("response.function_call_arguments.done", api.ResponseArgumentsDoneEvent{Type: "response.function_call_arguments.done",
				SequenceNumber: rw.next(), ItemID: item.ID, OutputIndex: i, Name: item.Name, Arguments: args}),
				rw.itemEvent("response.output_item.done", i))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// finish closes the output and fills in the status and usage: an answer
// cut by max_output_tokens (or the context) is incomplete.
func (rw *responseWriter) finish(t turn) error {
	resp, status := rw.resp, "completed"
	if t.finish == engine.FinishLength {
		status = "incomplete"
		resp.IncompleteDetails = &api.IncompleteDetails{Reason: "max_output_tokens"}
	}
	if err := rw.closeReasoning(); err != nil {
		return err
	}
	if rw.msg < 0 && !hasMessageOrCall(resp.Output) { // an empty answer is an empty message
		if err := rw.openMessage(); err != nil {
			return err
		}
	}
	if err := rw.closeMessage(status); err != nil {
		return err
	}
	now := time.Now().Unix()
	resp.Status, resp.CompletedAt = status, &now
	u := t.usage
	resp.Usage = &api.ResponseUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens, Metrics: u.Metrics}
	return nil
}

// fail ends a stream whose generation failed: an error event, then
// response.failed.
func (rw *responseWriter) fail(code int, err error) {
	c := "server_error"
	if code < 500 {
		c = "invalid_prompt"
	}
	rw.event("error", api.ResponseErrorEvent{Type: "error", SequenceNumber: rw.next(), Code: c, Message: err.Error(), Param: fieldParam(err)})
	rw.resp.Status, rw.resp.Error = "failed", &api.ResponseError{Code: c, Message: err.Error()}
	rw.lifecycle("response.failed")
}
