package serve

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/internal/clip"
)

const fingerprint = "fp_edgectl"

func newID(prefix string) string {
	b := make([]byte, 12)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// sseWriter writes `data: {json}\n\n` events and flushes each one.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func startSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

func (s *sseWriter) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(s.w, "data: %s\n\n", b); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *sseWriter) done() {
	fmt.Fprint(s.w, "data: [DONE]\n\n")
	s.rc.Flush()
}

func (s *Server) handleChatCompletions(w http.ResponseWriter, r *http.Request) {
	var req api.ChatCompletionRequest
	if err := api.Decode(r.Body, &req); err != nil {
		s.openAIFail(w, r, "", http.StatusBadRequest, err)
		return
	}
	switch {
	case req.Model == "":
		s.openAIFail(w, r, "", http.StatusBadRequest, errors.New("model is required"))
		return
	case len(req.Messages) == 0:
		s.openAIFail(w, r, req.Model, http.StatusBadRequest, errors.New("messages must be a non-empty array of {role, content}"))
		return
	}
	maxTokens := req.MaxTokens
	if req.MaxCompletionTokens != nil {
		maxTokens = req.MaxCompletionTokens
	}
	if err := checkChatCompletion(&req, maxTokens); err != nil {
		s.openAIFail(w, r, req.Model, http.StatusBadRequest, err)
		return
	}
	ask, err := chatThink(&req) // serve/reasoning.go
	if err != nil {
		s.openAIFail(w, r, req.Model, http.StatusBadRequest, err)
		return
	}
	ereq := engine.Request{AddGenerationPrompt: true, Stop: req.Stop,
		Sampling: sampling(req.Temperature, req.TopP, req.MinP, req.RepeatPenalty, req.FrequencyPenalty, req.PresencePenalty, req.TopK, nil, req.Seed)}
	ereq.Logprobs, ereq.TopLogprobs, _ = chatLogprobsFields(&req) // checked above
	ereq.Format, _ = chatFormat(req.ResponseFormat)               // checked above
	ereq.Tools, _ = chatTools(req.Tools, req.ToolChoice)          // checked above
	if ereq.Tools != nil && req.ParallelToolCalls != nil {
		ereq.Tools.One = !*req.ParallelToolCalls
	}
	for i, m := range req.Messages {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		default:
			s.openAIFail(w, r, req.Model, http.StatusBadRequest, fmt.Errorf("messages[%d].role %q: want system, user, assistant or tool", i, m.Role))
			return
		}
		role := m.Role
		if role == "developer" {
			role = "system"
		}
		em, err := chatMessage(i, role, m) // serve/tools.go
		if err != nil {
			s.openAIFail(w, r, req.Model, http.StatusBadRequest, err)
			return
		}
		ereq.Messages = append(ereq.Messages, em)
	}
	if maxTokens != nil {
		ereq.MaxTokens = *maxTokens
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	s.openAIGenerate(w, r, req.Model, keepAlive(req.KeepAlive), ereq, ask, req.Stream, includeUsage, true)
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	var req api.CompletionRequest
	if err := api.Decode(r.Body, &req); err != nil {
		s.openAIFail(w, r, "", http.StatusBadRequest, err)
		return
	}
	switch {
	case req.Model == "":
		s.openAIFail(w, r, "", http.StatusBadRequest, errors.New("model is required"))
		return
	case len(req.Prompt) != 1:
		s.openAIFail(w, r, req.Model, http.StatusBadRequest, errors.New("prompt must be one string (batched prompts are not supported)"))
		return
	}
	if err := checkCompletion(&req); err != nil {
		s.openAIFail(w, r, req.Model, http.StatusBadRequest, err)
		return
	}
	ereq := engine.Request{Prompt: req.Prompt[0], Stop: req.Stop,
		Sampling: sampling(req.Temperature, req.TopP, req.MinP, req.RepeatPenalty, req.FrequencyPenalty, req.PresencePenalty, req.TopK, nil, req.Seed)}
	ereq.TopLogprobs, _ = completionLogprobsField(req.Logprobs) // checked above
	ereq.Logprobs = ereq.TopLogprobs > 0
	format, err := chatFormat(req.ResponseFormat) // serve/format.go, as on chat
	if err != nil {
		s.openAIFail(w, r, req.Model, http.StatusBadRequest, err)
		return
	}
	ereq.Format = format
	if req.MaxTokens != nil {
		ereq.MaxTokens = *req.MaxTokens
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	s.openAIGenerate(w, r, req.Model, keepAlive(req.KeepAlive), ereq, thinkAsk{}, req.Stream, includeUsage, false)
}

func (s *Server) openAIFail(w http.ResponseWriter, r *http.Request, model string, code int, err error) {
	note(r, model, code)
	s.retryAfter(w, code)
	if code == 499 {
		return
	}
	e := openAIError(code, s.clientMessage(err)) // no server paths, one bounded line (limits.go)
	e.Error.Param = fieldParam(err)
	writeJSON(w, code, e)
}

// modelNotFound is the 404 of the /v1 routes (OpenAI, Anthropic): the name
// clipped, and where to look.
func modelNotFound(model string) error {
	return fmt.Errorf("model %s not found: GET /v1/models lists what the model dirs hold", clip.Quote(model))
}

// openAIGenerate serves chat (chat=true) and text completions, streamed or
// not. Streams follow the canonical order: role chunk, content chunks, a
// finish chunk, the usage chunk when asked for, [DONE]. ask is what chat
// asks of a model's thinking (serve/reasoning.go).
func (s *Server) openAIGenerate(w http.ResponseWriter, r *http.Request, model string, ka *time.Duration, ereq engine.Request, ask thinkAsk, stream, includeUsage, chat bool) {
	start := time.Now()
	ereq.Think = ask.forward() // what an upstream is sent (serve/reasoning.go)
	e, l, ts, ereq, err := s.leaseTurn(r, model, ka, ereq)
	if err != nil {
		code, err := turnStatus(err)
		s.openAIFail(w, r, model, code, err)
		return
	}
	defer l.Release()
	if err := think(e, l, ts, &ereq, ask); err != nil {
		s.openAIFail(w, r, model, http.StatusBadRequest, err)
		return
	}

	id, created := newID("chatcmpl-"), time.Now().Unix()
	object := "chat.completion.chunk"
	if !chat {
		id, object = newID("cmpl-"), "text_completion"
	}
	var legacy legacyLogprobs // completions: text_offset runs across chunks
	// chatChunk is a chat stream event; one with content or tool-call
	// pieces carries the log-probabilities of the tokens it completes
	// when they were asked for.
	chatChunk := func(d api.Delta, finish *string, lps []engine.TokenLogprob) api.ChatCompletionChunk {
		c := api.ChatCompletionChunk{ID: id, Object: object, Created: created, Model: model, SystemFingerprint: fingerprint,
			Choices: []api.ChunkChoice{{Delta: d, FinishReason: finish}}}
		if ereq.Logprobs && (d.Content != nil || d.ReasoningContent != nil || len(d.ToolCalls) > 0) {
			c.Choices[0].Logprobs = &api.ChatLogprobs{Content: chatLogprobs(lps)}
		}
		return c
	}
	// chunk is a stream event; a content chunk carries the log-probabilities
	// of the tokens its text completes when they were asked for.
	chunk := func(text *string, finish *string, lps []engine.TokenLogprob) any {
		if chat {
			return chatChunk(api.Delta{Content: text}, finish, lps)
		}
		c := api.Completion{ID: id, Object: object, Created: created, Model: model, SystemFingerprint: fingerprint,
			Choices: []api.CompletionChoice{{FinishReason: finish}}}
		if text != nil {
			c.Choices[0].Text = *text
			if ereq.Logprobs && finish == nil {
				c.Choices[0].Logprobs = legacy.add(lps)
			}
		}
		return c
	}

	if !stream {
		var lps []engine.TokenLogprob
		var answer chatAnswer // text and tool calls (serve/tools.go); completions: the text, an upstream's thinking back in it
		res, err := s.run(r.Context(), l, ereq, func(t engine.Token) error {
			answer.add(ts.push(t))
			lps = append(lps, t.Logprobs...)
			return nil
		})
		if err != nil {
			s.openAIFail(w, r, model, httpStatus(err), err)
			return
		}
		answer.add(ts.flush())
		s.record(e, res)
		usage := s.usage(res, l, start)
		note(r, model, http.StatusOK)
		if chat {
			choice := api.ChatChoice{Message: api.ResponseMessage{Role: "assistant", Content: answer.text.String(),
				ReasoningContent: answer.reasoning.String(), ToolCalls: answer.calls},
				FinishReason: ts.finish(res.FinishReason)}
			if ereq.Logprobs {
				choice.Logprobs = &api.ChatLogprobs{Content: chatLogprobs(lps)}
			}
			writeJSON(w, http.StatusOK, api.ChatCompletion{ID: id, Object: "chat.completion", Created: created, Model: model,
				SystemFingerprint: fingerprint, Usage: usage, Choices: []api.ChatChoice{choice}})
			return
		}
		f := res.FinishReason
		choice := api.CompletionChoice{Text: answer.text.String(), FinishReason: &f}
		if ereq.Logprobs {
			choice.Logprobs = legacy.add(lps)
		}
		writeJSON(w, http.StatusOK, api.Completion{ID: id, Object: "text_completion", Created: created, Model: model,
			SystemFingerprint: fingerprint, Usage: usage, Choices: []api.CompletionChoice{choice}})
		return
	}

	sw := startSSE(w)
	if chat {
		first := api.ChatCompletionChunk{ID: id, Object: object, Created: created, Model: model, SystemFingerprint: fingerprint,
			Choices: []api.ChunkChoice{{Delta: api.Delta{Role: "assistant"}}}}
		if sw.send(first) != nil {
			return
		}
	}
	var carry []engine.TokenLogprob // of tokens whose text is held back
	sendEvents := func(d []api.Delta, lps []engine.TokenLogprob) error {
		lps = append(carry, lps...)
		carry = nil
		if len(d) == 0 {
			carry = lps
			return nil
		}
		for i := range d {
			if err := sw.send(chatChunk(d[i], nil, lps)); err != nil {
				return err
			}
			lps = nil
		}
		return nil
	}
	res, err := s.run(r.Context(), l, ereq, func(t engine.Token) error {
		if !chat {
			text := completionText(ts.push(t)) // serve/completions_text.go
			return sw.send(chunk(&text, nil, t.Logprobs))
		}
		if ts.plain(t) {
			return sw.send(chunk(&t.Text, nil, t.Logprobs))
		}
		return sendEvents(chatDeltas(ts.push(t)), t.Logprobs) // tool calls (serve/tools.go)
	})
	if err == nil && chat {
		if err = sendEvents(chatDeltas(ts.flush()), nil); err == nil && len(carry) > 0 {
			err = sw.send(chatChunk(api.Delta{Content: new(string)}, nil, carry))
		}
	}
	if err == nil && !chat {
		if text := completionText(ts.flush()); text != "" {
			err = sw.send(chunk(&text, nil, nil))
		}
	}
	if err != nil {
		code := httpStatus(err)
		note(r, model, code)
		if code != 499 {
			// In-band error: the status line has gone. openai-go and
			// openai-node turn a chunk with an "error" key into an error.
			sw.send(openAIError(code, err.Error()))
		}
		return
	}
	s.record(e, res)
	f := ts.finish(res.FinishReason)
	if chat {
		sw.send(chunk(nil, &f, nil))
	} else {
		sw.send(chunk(new(string), &f, nil))
	}
	if includeUsage {
		usage := s.usage(res, l, start)
		if chat {
			sw.send(api.ChatCompletionChunk{ID: id, Object: object, Created: created, Model: model, SystemFingerprint: fingerprint,
				Choices: []api.ChunkChoice{}, Usage: usage})
		} else {
			sw.send(api.Completion{ID: id, Object: object, Created: created, Model: model, SystemFingerprint: fingerprint,
				Choices: []api.CompletionChoice{}, Usage: usage})
		}
	}
	sw.done()
	note(r, model, http.StatusOK)
}

func (s *Server) usage(res engine.Result, l *Lease, start time.Time) *api.Usage {
	return &api.Usage{PromptTokens: res.PromptTokens, CompletionTokens: res.CompletionTokens,
		TotalTokens: res.PromptTokens + res.CompletionTokens, Metrics: s.telemetry(res, l, time.Since(start))}
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	list := api.ModelList{Object: "list", Data: []api.ModelObject{}}
	for _, e := range s.reg.List() {
		list.Data = append(list.Data, modelObject(e))
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	e, ok := s.reg.Lookup(r.PathValue("id"))
	if !ok {
		writeOpenAIError(w, http.StatusNotFound, fmt.Sprintf("model %q not found", r.PathValue("id")))
		return
	}
	writeJSON(w, http.StatusOK, modelObject(e))
}

func modelObject(e *Entry) api.ModelObject {
	return api.ModelObject{ID: e.Name, Object: "model", Created: e.Modified.Unix(), OwnedBy: e.Lane, Fields: fieldSupport(e)}
}
