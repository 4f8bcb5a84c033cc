package serve

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/toolcall"
)

// serveMessage runs a Messages request and answers with the message, or
// streams it as Anthropic does: message_start once the model is loaded
// (with the prompt's input_tokens where the lane counts them before the
// prefill, as Anthropic's carries them: @ai-sdk/anthropic and LangChain
// read them there), per content block its content_block_start, deltas (text_delta,
// input_json_delta) and content_block_stop (a ping after the first
// start), then message_delta with stop_reason and usage, and
// message_stop; an error event when the generation fails.
func (s *Server) serveMessage(w http.ResponseWriter, r *http.Request, req *api.MessagesRequest, ereq engine.Request) {
	msg := &api.AnthropicResponse{ID: newID("msg_"), Type: "message", Role: "assistant", Model: req.Model, Content: []api.AnthropicBlock{}}
	aw := &anthropicWriter{msg: msg, open: -1, calls: map[int]int{}, stops: anthropicStops{stops: req.StopSequences}}
	begin := func(prompt int) error {
		if !req.Stream {
			return nil
		}
		aw.sw = startSSE(w)
		msg.Usage.InputTokens = prompt // output_tokens 0: none generated yet
		return aw.event("message_start", api.AnthropicMessageStart{Type: "message_start", Message: msg})
	}
	ask, _ := anthropicThink(req.Thinking) // checked in messagesRequest
	t, err := s.countedTurn(r, req.Model, keepAlive(req.KeepAlive), ereq, ask, req.Stream, begin, aw.add)
	if err == nil {
		err = aw.finish(t) // text held back for a possible stop sequence, the open block
	}
	if err != nil {
		code, err := turnStatus(err)
		err = renameField(err, "response_format", "output_config.format")
		if aw.sw == nil {
			s.anthropicFail(w, r, req.Model, code, err)
			return
		}
		note(r, req.Model, code)
		if code != 499 {
			aw.event("error", anthropicError(code, err.Error()))
		}
		return
	}
	note(r, req.Model, http.StatusOK)
	if aw.sw == nil {
		writeJSON(w, http.StatusOK, msg)
		return
	}
	aw.event("message_delta", api.AnthropicMessageDelta{Type: "message_delta",
		Delta: api.AnthropicMessageDeltaBody{StopReason: msg.StopReason, StopSequence: msg.StopSequence}, Usage: msg.Usage})
	aw.event("message_stop", api.AnthropicEvent{Type: "message_stop"})
}

// anthropicWriter builds the message from a turn's events and, streaming,
// sends each step as its event.
type anthropicWriter struct {
	sw     *sseWriter // nil: not streamed
	msg    *api.AnthropicResponse
	open   int         // index of the open content block; -1: none
	calls  map[int]int // tool call index → block index
	pinged bool
	stops  anthropicStops
}

func (aw *anthropicWriter) event(name string, v any) error {
	if aw.sw == nil {
		return nil
	}
	return aw.sw.sendEvent(name, v)
}

// start opens content block b.
func (aw *anthropicWriter) start(b api.AnthropicBlock) error {
	if err := aw.stop(); err != nil {
		return err
	}
	aw.open = len(aw.msg.Content)
	aw.msg.Content = append(aw.msg.Content, b)
	err := aw.event("content_block_start", api.AnthropicBlockStart{Type: "content_block_start", Index: aw.open, ContentBlock: b})
	if err == nil && !aw.pinged {
		aw.pinged = true
		err = aw.event("ping", api.AnthropicEvent{Type: "ping"})
	}
	return err
}

// stop closes the open content block.
func (aw *anthropicWriter) stop() error {
	if aw.open < 0 {
		return nil
	}
	i := aw.open
	aw.open = -1
	if err := aw.sign(i); err != nil { // a thinking block's signature (serve/reasoning_anthropic.go)
		return err
	}
	return aw.event("content_block_stop", api.AnthropicBlockStop{Type: "content_block_stop", Index: i})
}

// text adds text to the open text block (opened when needed).
func (aw *anthropicWriter) text(s string) error {
	if s == "" {
		return nil
	}
	if aw.open < 0 || aw.msg.Content[aw.open].Type != "text" {
		if err := aw.start(api.AnthropicBlock{Type: "text"}); err != nil {
			return err
		}
	}
	aw.msg.Content[aw.open].Text += s
	return aw.event("content_block_delta", api.AnthropicBlockDelta{Type: "content_block_delta", Index: aw.open,
		Delta: api.AnthropicDelta{Type: "text_delta", Text: &s}})
}

// add takes a turn's events: text (through the stop sequences), and
// tool calls as tool_use blocks whose input streams as partial JSON.
func (aw *anthropicWriter) add(evs []toolcall.Event) error {
	for _, e := range evs {
		var err error
		switch e.Kind {
		case toolcall.Reasoning:
			err = aw.thinking(e.Text) // serve/reasoning_anthropic.go
		case toolcall.Text:
			out, stopped := aw.stops.push(e.Text)
			if err = aw.text(out); err == nil && stopped {
				return errTurnStop
			}
		case toolcall.Start:
			if err = aw.text(aw.stops.flush()); err != nil {
				return err
			}
			aw.calls[e.Index] = len(aw.msg.Content)
			err = aw.start(api.AnthropicBlock{Type: "tool_use", ID: e.Call.ID, Name: e.Call.Name, Input: json.RawMessage(`{}`)})
		case toolcall.Args:
			err = aw.event("content_block_delta", api.AnthropicBlockDelta{Type: "content_block_delta", Index: aw.calls[e.Index],
				Delta: api.AnthropicDelta{Type: "input_json_delta", PartialJSON: &e.Text}})
		case toolcall.End:
			b := &aw.msg.Content[aw.calls[e.Index]]
			if e.Call.Valid {
				b.Input = json.RawMessage(e.Call.Arguments)
			}
			err = aw.stop()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// finish writes out held-back text, closes the last block and fills in
// how the message ended and its usage.
func (aw *anthropicWriter) finish(t turn) error {
	if aw.stops.matched == "" {
		if err := aw.text(aw.stops.flush()); err != nil {
			return err
		}
	}
	if err := aw.stop(); err != nil {
		return err
	}
	reason := "end_turn"
	switch {
	case aw.stops.matched != "":
		reason = "stop_sequence"
		aw.msg.StopSequence = &aw.stops.matched
	case t.finish == engine.FinishLength:
		reason = "max_tokens"
	case t.finish == engine.FinishToolCalls:
		reason = "tool_use"
	}
	aw.msg.StopReason = &reason
	aw.msg.Usage = api.AnthropicUsage{InputTokens: t.usage.PromptTokens, OutputTokens: t.usage.CompletionTokens, Metrics: t.usage.Metrics}
	return nil
}

// anthropicStops matches stop_sequences in the answer's text, holding
// back text that may begin one, so that the answer can say which one
// ended it (stop_sequence); the text is cut before it, as Anthropic does.
type anthropicStops struct {
	stops   []string
	held    string
	matched string
}

// push is the text of s that can go out, and whether a stop sequence
// ended the answer.
func (st *anthropicStops) push(s string) (string, bool) {
	if st.matched != "" {
		return "", true
	}
	if len(st.stops) == 0 {
		return s, false
	}
	text := st.held + s
	first := -1
	for _, stop := range st.stops {
		if i := strings.Index(text, stop); i >= 0 && (first < 0 || i < first) {
			first, st.matched = i, stop
		}
	}
	if first >= 0 {
		st.held = ""
		return text[:first], true
	}
	keep := 0 // the longest end of text that begins a stop sequence
	for _, stop := range st.stops {
		for n := min(len(stop)-1, len(text)); n > keep; n-- {
			if strings.HasPrefix(stop, text[len(text)-n:]) {
				keep = n
				break
			}
		}
	}
	st.held = text[len(text)-keep:]
	return text[:len(text)-keep], false
}

// flush is the text held back.
func (st *anthropicStops) flush() string {
	s := st.held
	st.held = ""
	return s
}
