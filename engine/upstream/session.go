package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/chattemplate"
)

// Error is a failure the upstream reported, with the HTTP status it should
// have used (FastFlowLM sends errors with 200).
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("upstream error (%d): %s", e.Status, e.Message)
}

// NewSession returns a stateless session: every Generate sends the whole
// conversation.
func (m *Model) NewSession() (engine.Session, error) {
	if err := m.Alive(); err != nil {
		return nil, err
	}
	return &session{m: m}, nil
}

type session struct{ m *Model }

func (s *session) Reset() error { return nil }
func (s *session) Close() error { return nil }

// body is the request to send and how many of the oldest turns a
// single_message fold dropped to fit the context.
func (m *Model) body(req engine.Request) ([]byte, int, error) {
	msgs := make([]api.ChatMessage, 0, len(req.Messages)+1)
	for _, msg := range req.Messages {
		cm := api.ChatMessage{Role: msg.Role, Content: api.Content(msg.Content), ToolCallID: msg.ToolCallID, ReasoningContent: msg.ReasoningContent}
		for _, c := range msg.ToolCalls {
			cm.ToolCalls = append(cm.ToolCalls, api.ToolCall{ID: c.ID, Type: "function",
				Function: api.FunctionCall{Name: c.Function.Name, Arguments: c.Function.ArgumentsText()}})
		}
		msgs = append(msgs, cm)
	}
	if len(req.Messages) == 0 {
		msgs = append(msgs, api.ChatMessage{Role: "user", Content: api.Content(req.Prompt)})
	}
	b := api.UpstreamChatRequest{
		Model:         m.cfg.Model,
		Messages:      msgs,
		Stream:        true,
		StreamOptions: &api.StreamOptions{IncludeUsage: true},
		Temperature:   req.Sampling.Temperature,
		Seed:          req.Sampling.Seed,
		Stop:          req.Stop,
	}
	if b.Model == "" {
		b.Model = m.cfg.Name
	}
	thinkFields(&b, req.Think) // reasoning.go
	if req.Format != nil {
		if m.cfg.SingleMessage { // main_api_* reads no response_format: it would be ignored
			return nil, 0, fmt.Errorf("%w: response_format is not supported by upstream %q (a single_message server cannot constrain its output to JSON); leave it out",
				engine.ErrInvalidRequest, m.cfg.Name)
		}
		b.ResponseFormat = req.Format.ResponseFormat
	}
	if req.Tools != nil {
		if m.cfg.SingleMessage { // main_api_* reads no tools: they would be ignored
			return nil, 0, fmt.Errorf("%w: tools are not supported by upstream %q (a single_message server does not call tools); leave them out",
				engine.ErrInvalidRequest, m.cfg.Name)
		}
		b.Tools, b.ToolChoice = req.Tools.Defs, req.Tools.RawChoice
		if req.Tools.One {
			b.ParallelToolCalls = new(bool)
		}
	}
	dropped := 0
	if m.cfg.SingleMessage {
		// main_api_* reads one {role, content} object: the conversation is
		// folded into it (fold.go).
		var text string
		text, dropped = fold(msgs, m.cfg.ContextLength, req.MaxTokens)
		b.Messages = api.ChatMessage{Role: "user", Content: api.Content(text)}
		b.StreamOptions = nil
	}
	if req.MaxTokens > 0 {
		b.MaxTokens = &req.MaxTokens
	}
	if s := req.Sampling; s.TopK > 0 {
		b.TopK = &s.TopK
	}
	if s := req.Sampling; s.TopP > 0 && s.TopP < 1 {
		b.TopP = &s.TopP
	}
	if s := req.Sampling; s.MinP > 0 {
		b.MinP = &s.MinP
	}
	if s := req.Sampling; s.RepeatPenalty > 0 && s.RepeatPenalty != 1 {
		b.RepeatPenalty = &s.RepeatPenalty
	}
	if n := req.Sampling.RepeatLastN; n != 0 {
		if n == math.MaxInt32 { // the whole history (Ollama's -1)
			n = -1
		}
		b.RepeatLastN = &n
	}
	if req.Sampling.PenaltiesOff {
		// Ollama's repeat_last_n 0: say "off" (1 is no penalty in
		// llama.cpp's server and main_api_*) rather than leave it out and
		// get the upstream's default.
		one := 1.0
		b.RepeatPenalty = &one
	}
	out, err := json.Marshal(b)
	return out, dropped, err
}

// Generate posts the conversation to /v1/chat/completions with streaming
// and turns whatever comes back (SSE or one JSON object, with or without
// vendor extras) into tokens and a Result.
func (s *session) Generate(ctx context.Context, req engine.Request, emit func(engine.Token) error) (engine.Result, error) {
	m := s.m
	var res engine.Result
	body, dropped, err := m.body(req)
	if err != nil {
		return res, err
	}
	var warning string
	if dropped > 0 {
		warning = foldWarning(m.cfg.ContextLength, dropped)
		m.opts.Logf("upstream: %s: warning: %s", m.cfg.Name, warning)
	}
	start := time.Now()
	resp, err := m.post(ctx, "/v1/chat/completions", body, "text/event-stream")
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		return res, &Error{Status: resp.StatusCode, Message: errorText(b, resp.Status)}
	}

	st := &streamState{start: start, emit: emit}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct == "text/event-stream" {
		err = st.readSSE(resp.Body)
	} else {
		// A server that ignored stream:true, or FastFlowLM's 200-with-error.
		b, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		if rerr == nil {
			err = st.chunk(b)
		} else {
			err = rerr
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, err
	}
	if calls := st.toolCalls(); len(calls) > 0 {
		if err := emit(engine.Token{ID: -1, ToolCalls: calls}); err != nil {
			return res, err
		}
	}
	res = st.result()
	if dropped > 0 {
		res.Extra["context_truncated_turns"] = dropped
		res.Extra["warning"] = warning
	}
	return res, nil
}

type streamState struct {
	start, first time.Time
	emit         func(engine.Token) error
	pieces       int
	finish       string
	usage        *api.UpstreamUsage
	timings      *api.LlamaTimings
	done         bool
	calls        []*upstreamCall // tool calls, by index
}

// upstreamCall is a tool call being put together from streamed pieces.
type upstreamCall struct {
	id, name string
	args     strings.Builder
}

// addToolCall takes a tool call piece (or a whole call): pieces with an
// index add to that call, others are the next call.
func (st *streamState) addToolCall(tc api.UpstreamToolCall) {
	i := len(st.calls)
	if tc.Index != nil && *tc.Index >= 0 && *tc.Index < 1024 {
		i = *tc.Index
	}
	for len(st.calls) <= i {
		st.calls = append(st.calls, &upstreamCall{})
	}
	c := st.calls[i]
	if tc.ID != "" {
		c.id = tc.ID
	}
	c.name += tc.Function.Name
	var text string
	if json.Unmarshal(tc.Function.Arguments, &text) == nil {
		c.args.WriteString(text)
	} else if len(tc.Function.Arguments) > 0 && string(tc.Function.Arguments) != "null" {
		c.args.Write(tc.Function.Arguments) // an object, as Ollama-like servers send it
	}
}

// toolCalls are the upstream's complete tool calls, in order.
func (st *streamState) toolCalls() []engine.ToolCall {
	var out []engine.ToolCall
	for _, c := range st.calls {
		if c.name == "" {
			continue
		}
		out = append(out, engine.ToolCall{ID: c.id, Type: "function",
			Function: engine.FunctionCall{Name: c.name, Arguments: chattemplate.ArgumentsOf(c.args.String())}})
	}
	return out
}

func (st *streamState) readSSE(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var data bytes.Buffer
	flush := func() error {
		defer data.Reset()
		if data.Len() == 0 {
			return nil
		}
		if bytes.HasPrefix(data.Bytes(), []byte("[DONE]")) {
			st.done = true
			return nil
		}
		return st.chunk(data.Bytes())
	}
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if err := flush(); err != nil {
				return err
			}
		case line[0] == ':': // comment / keep-alive
		case bytes.HasPrefix(line, []byte("data:")):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" ")))
		}
		if st.done {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	if st.finish == "" && st.pieces == 0 && !st.done {
		return errors.New("upstream closed the stream without sending anything")
	}
	return nil
}

// chunk handles one JSON object: a stream chunk or a whole completion.
func (st *streamState) chunk(b []byte) error {
	var c api.UpstreamChunk
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("upstream sent data that is not JSON: %.200q", b)
	}
	if msg, ok := api.ErrorMessage(c.Error); ok {
		return &Error{Status: statusOf(c.Error), Message: msg}
	}
	for _, ch := range c.Choices {
		var text *string
		var calls []api.UpstreamToolCall
		var thought string
		msg := ch.Delta
		if msg == nil {
			msg = ch.Message
		}
		if msg != nil {
			text, calls, thought = msg.Content, msg.ToolCalls, reasoningOf(msg.ReasoningContent, msg.Reasoning)
		} else {
			text = ch.Text
		}
		for _, tc := range calls {
			if st.first.IsZero() {
				st.first = time.Now()
			}
			st.addToolCall(tc)
		}
		if text == nil {
			text = new(string)
		}
		if *text != "" || thought != "" {
			if st.first.IsZero() {
				st.first = time.Now()
			}
			st.pieces++
			if err := st.emit(engine.Token{ID: -1, Text: *text, Reasoning: thought}); err != nil {
				return err
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			f, err := normalizeFinish(*ch.FinishReason)
			if err != nil {
				return err
			}
			st.finish = f
		}
	}
	if c.Usage != nil {
		st.usage = c.Usage
	}
	if c.Timings != nil {
		st.timings = c.Timings
	}
	return nil
}

// normalizeFinish maps vendor finish reasons onto OpenAI's.
func normalizeFinish(f string) (string, error) {
	switch f {
	case "length", "max_tokens", "max_length":
		return engine.FinishLength, nil
	case "error":
		return "", &Error{Status: http.StatusBadGateway, Message: "upstream ended the answer with finish_reason \"error\""}
	default: // stop, eos, end_turn, cancel, tool_calls, …
		return engine.FinishStop, nil
	}
}

func (st *streamState) result() engine.Result {
	end := time.Now()
	r := engine.Result{FinishReason: st.finish, CompletionTokens: st.pieces, Extra: map[string]any{}}
	if r.FinishReason == "" {
		r.FinishReason = engine.FinishStop
	}
	if !st.first.IsZero() {
		r.TTFT = st.first.Sub(st.start)
		r.PrefillDuration = r.TTFT
		r.DecodeDuration = end.Sub(st.first)
	}
	if u := st.usage; u != nil {
		r.PromptTokens = u.PromptTokens
		if u.CompletionTokens > 0 {
			r.CompletionTokens = u.CompletionTokens
		}
		if u.PrefillDurationTTFT > 0 { // FastFlowLM, seconds
			r.PrefillDuration = seconds(u.PrefillDurationTTFT)
		}
		if u.DecodingDuration > 0 {
			r.DecodeDuration = seconds(u.DecodingDuration)
		}
		if u.DecodingSpeedTPS > 0 {
			r.Extra["upstream_tps"] = u.DecodingSpeedTPS
		}
	}
	if t := st.timings; t != nil { // llama-server, milliseconds
		if t.PromptN > 0 {
			r.PromptTokens = t.PromptN + t.CacheN
		}
		if t.PredictedN > 0 {
			r.CompletionTokens = t.PredictedN
		}
		if t.PromptMS > 0 {
			r.PrefillDuration = time.Duration(t.PromptMS * float64(time.Millisecond))
		}
		if t.PredictedMS > 0 {
			r.DecodeDuration = time.Duration(t.PredictedMS * float64(time.Millisecond))
		}
		r.Extra["cache_n"] = t.CacheN
	}
	if st.usage == nil && st.timings == nil {
		r.Extra["token_count"] = "approximate"
	}
	return r
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// errorText extracts a message from an error body in any shape.
func errorText(b []byte, status string) string {
	if s := api.ErrorText(b); s != "" {
		return s
	}
	return status
}

// statusOf reads error.code when it is an HTTP status (FastFlowLM), else 502.
func statusOf(raw json.RawMessage) int {
	var o struct {
		Code any `json:"code"`
	}
	if json.Unmarshal(raw, &o) == nil {
		if f, ok := o.Code.(float64); ok && f >= 400 && f < 600 {
			return int(f)
		}
	}
	return http.StatusBadGateway
}
