package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/toolcall"
	"github.com/edgectl/edgectl/internal/clip"
	"github.com/edgectl/edgectl/internal/version"
)

// ndjsonWriter writes one JSON object per line and flushes it.
type ndjsonWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
}

func (n *ndjsonWriter) send(v any) error {
	if !n.started {
		n.w.Header().Set("Content-Type", "application/x-ndjson")
		n.w.WriteHeader(http.StatusOK)
		n.started = true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := n.w.Write(append(b, '\n')); err != nil {
		return err
	}
	return n.rc.Flush()
}

func (s *Server) ollamaFail(w http.ResponseWriter, r *http.Request, model string, code int, err error) {
	note(r, model, code)
	s.retryAfter(w, code)
	if code == 499 {
		return
	}
	writeOllamaError(w, code, s.clientMessage(err)) // no server paths, one bounded line (limits.go)
}

func ollamaNotFound(model string) error {
	return fmt.Errorf("model %s not found, try pulling it first (GET /api/tags lists what the --models dirs hold)", clip.Quote(model))
}

func (s *Server) ollamaOptions(o *api.Options) (engine.Request, error) {
	var req engine.Request
	if o == nil {
		return req, nil
	}
	if err := checkOllamaOptions(o); err != nil {
		return req, err
	}
	req.Sampling = sampling(o.Temperature, o.TopP, o.MinP, o.RepeatPenalty, o.FrequencyPenalty, o.PresencePenalty, o.TopK, o.RepeatLastN, o.Seed)
	if o.NumPredict != nil && *o.NumPredict > 0 { // -1 infinite, -2 fill the context
		req.MaxTokens = *o.NumPredict
	}
	req.Stop = o.Stop
	return req, nil
}

// ollamaRun is the shared body of /api/generate and /api/chat.
type ollamaRun struct {
	route, model string
	ka           *time.Duration
	stream       bool
	empty        bool // load / unload request
	req          engine.Request
	opts         *api.Options // checked against the model: num_thread, num_ctx
	think        thinkAsk     // what think asks (serve/reasoning.go)
	// line builds one NDJSON object: a text piece and a thinking piece
	// (with their tokens' log-probabilities when asked for), tool calls
	// (chat), or the final one.
	line func(text, thinking string, calls []api.OllamaToolCall, lps []api.OllamaLogprob, done bool, reason string, t api.Timings) any
}

func (s *Server) handleGenerate(w http.ResponseWriter, r *http.Request) {
	const route = "/api/generate"
	var req api.GenerateRequest
	if err := api.Decode(r.Body, &req); err != nil {
		s.ollamaFail(w, r, "", http.StatusBadRequest, err)
		return
	}
	if req.Model == "" {
		s.ollamaFail(w, r, "", http.StatusBadRequest, errors.New("model is required"))
		return
	}
	if len(req.Images) > 0 {
		s.ollamaFail(w, r, req.Model, http.StatusBadRequest, errors.New("images are not supported: edgectl serves text models"))
		return
	}
	err := checkOllamaCommon(req.Format, req.Think)
	ask, _ := ollamaThink(req.Think) // checked there
	switch {
	case err != nil:
	case req.Suffix != "":
		err = notYet("suffix", "edgectl does not fill in the middle", "leave it out")
	case req.Template != "":
		err = notYet("template", "edgectl renders the model's own chat template", "send raw: true with a prompt formatted as you need")
	case len(req.Context) > 0:
		err = notYet("context", "edgectl does not return or take token arrays", "send the conversation to /api/chat")
	}
	if err != nil {
		s.ollamaFail(w, r, req.Model, http.StatusBadRequest, err)
		return
	}
	ereq, err := s.ollamaOptions(req.Options)
	if err == nil {
		ereq.Logprobs, ereq.TopLogprobs, err = ollamaLogprobsFields(req.OllamaLogprobsRequest)
	}
	ereq.Format, _ = ollamaFormat(req.Format) // checked above
	if err != nil {
		s.ollamaFail(w, r, req.Model, http.StatusBadRequest, err)
		return
	}
	if req.Raw {
		ereq.Prompt = req.Prompt
	} else {
		if req.System != "" {
			ereq.Messages = append(ereq.Messages, engine.Message{Role: "system", Content: req.System})
		}
		ereq.Messages = append(ereq.Messages, engine.Message{Role: "user", Content: req.Prompt})
		ereq.AddGenerationPrompt = true
	}
	model := req.Model
	s.ollamaGenerate(w, r, ollamaRun{route: route, model: model, ka: keepAlive(req.KeepAlive), stream: req.Stream == nil || *req.Stream,
		empty: req.Prompt == "" && req.System == "", req: ereq, opts: req.Options, think: ask, line: func(text, thinking string, _ []api.OllamaToolCall, lps []api.OllamaLogprob, done bool, reason string, t api.Timings) any {
			return api.GenerateResponse{Model: model, CreatedAt: time.Now().UTC(), Response: text, Thinking: thinking, Logprobs: lps, Done: done, DoneReason: reason, Timings: t}
		}})
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	const route = "/api/chat"
	var req api.ChatRequest
	if err := api.Decode(r.Body, &req); err != nil {
		s.ollamaFail(w, r, "", http.StatusBadRequest, err)
		return
	}
	if req.Model == "" {
		s.ollamaFail(w, r, "", http.StatusBadRequest, errors.New("model is required"))
		return
	}
	err := checkOllamaCommon(req.Format, req.Think)
	ask, _ := ollamaThink(req.Think) // checked there
	var tools *engine.Tools
	if err == nil {
		tools, err = ollamaTools(req.Tools, req.ToolChoice) // serve/tools.go
	}
	if err != nil {
		s.ollamaFail(w, r, req.Model, http.StatusBadRequest, err)
		return
	}
	ereq, err := s.ollamaOptions(req.Options)
	if err == nil {
		ereq.Logprobs, ereq.TopLogprobs, err = ollamaLogprobsFields(req.OllamaLogprobsRequest)
	}
	ereq.Format, _ = ollamaFormat(req.Format) // checked above
	ereq.Tools = tools
	if err != nil {
		s.ollamaFail(w, r, req.Model, http.StatusBadRequest, err)
		return
	}
	for i, m := range req.Messages {
		switch m.Role {
		case "system", "user", "assistant", "tool":
		default:
			s.ollamaFail(w, r, req.Model, http.StatusBadRequest, fmt.Errorf("messages[%d].role %q: want system, user, assistant or tool", i, m.Role))
			return
		}
		if len(m.Images) > 0 {
			s.ollamaFail(w, r, req.Model, http.StatusBadRequest, errors.New("images are not supported: edgectl serves text models"))
			return
		}
		em, err := ollamaMessage(i, m) // serve/tools.go
		if err != nil {
			s.ollamaFail(w, r, req.Model, http.StatusBadRequest, err)
			return
		}
		ereq.Messages = append(ereq.Messages, em)
	}
	ereq.AddGenerationPrompt = true
	model := req.Model
	s.ollamaGenerate(w, r, ollamaRun{route: route, model: model, ka: keepAlive(req.KeepAlive), stream: req.Stream == nil || *req.Stream,
		empty: len(req.Messages) == 0, req: ereq, opts: req.Options, think: ask, line: func(text, thinking string, calls []api.OllamaToolCall, lps []api.OllamaLogprob, done bool, reason string, t api.Timings) any {
			return api.ChatResponse{Model: model, CreatedAt: time.Now().UTC(), Message: api.Message{Role: "assistant", Content: text, Thinking: thinking, ToolCalls: calls},
				Logprobs: lps, Done: done, DoneReason: reason, Timings: t}
		}})
}

func (s *Server) ollamaGenerate(w http.ResponseWriter, r *http.Request, o ollamaRun) {
	start := time.Now()
	e, ok := s.reg.Lookup(o.model)
	if !ok {
		s.ollamaFail(w, r, o.model, http.StatusNotFound, ollamaNotFound(o.model))
		return
	}
	o.req.Think = o.think.forward() // an upstream's (serve/reasoning.go)
	if err := firstErr(s.checkNumThread(o.opts, e), checkLaneFields(e, o.req, "options.")); err != nil {
		s.ollamaFail(w, r, o.model, http.StatusBadRequest, err)
		return
	}
	if o.empty {
		// Ollama's load/unload requests: no prompt, maybe keep_alive 0.
		if o.ka != nil && *o.ka == 0 {
			s.sched.Unload(e)
			note(r, o.model, http.StatusOK)
			writeJSON(w, http.StatusOK, o.line("", "", nil, nil, true, api.DoneUnload, api.Timings{}))
			return
		}
		l, err := s.sched.Preload(r.Context(), e, o.ka)
		if err != nil {
			s.ollamaFail(w, r, o.model, httpStatus(err), err)
			return
		}
		note(r, o.model, http.StatusOK)
		writeJSON(w, http.StatusOK, o.line("", "", nil, nil, true, api.DoneLoad, api.Timings{
			TotalDuration: int64(time.Since(start)), LoadDuration: int64(l.LoadDuration)}))
		return
	}
	l, err := s.sched.Acquire(r.Context(), e, o.ka)
	if err != nil {
		s.ollamaFail(w, r, o.model, httpStatus(err), err)
		return
	}
	defer l.Release()
	if err := numCtx(o.opts, e, l.Model.Info().ContextLength, &o.req); err != nil {
		s.ollamaFail(w, r, o.model, http.StatusBadRequest, err)
		return
	}
	tf, err := leaseTools(e, l, o.req) // the format tool calls are parsed in (serve/tools.go)
	if err != nil {
		s.ollamaFail(w, r, o.model, http.StatusBadRequest, err)
		return
	}
	ts := newToolStream(tf, o.req.Tools)
	req := prepare(l, o.req)
	if err := think(e, l, ts, &req, o.think); err != nil { // serve/reasoning.go
		s.ollamaFail(w, r, o.model, http.StatusBadRequest, err)
		return
	}
	if o.route == "/api/generate" && req.Prompt != "" && len(o.req.Messages) > 0 {
		// generate on a template-less model: the prompt is plain text to
		// continue, with the system text in front.
		var parts []string
		for _, m := range o.req.Messages {
			parts = append(parts, m.Content)
		}
		req.Prompt = strings.Join(parts, "\n\n")
	}

	nw := &ndjsonWriter{w: w, rc: http.NewResponseController(w)}
	var text, thinking strings.Builder
	var calls []api.OllamaToolCall
	var lps []engine.TokenLogprob
	emit := func(t engine.Token) error {
		if ts.plain(t) {
			return nw.send(o.line(t.Text, "", nil, ollamaLogprobs(t.Logprobs), false, "", api.Timings{}))
		}
		evs := ts.push(t)
		piece, cs := ollamaPieces(evs) // a call goes out whole (serve/tools.go)
		thought := reasoningText(evs)
		if piece == "" && thought == "" && len(cs) == 0 && len(t.Logprobs) == 0 {
			return nil
		}
		return nw.send(o.line(piece, thought, cs, ollamaLogprobs(t.Logprobs), false, "", api.Timings{}))
	}
	if !o.stream {
		emit = func(t engine.Token) error {
			evs := ts.push(t)
			piece, cs := ollamaPieces(evs)
			text.WriteString(piece)
			thinking.WriteString(reasoningText(evs))
			calls = append(calls, cs...)
			lps = append(lps, t.Logprobs...)
			return nil
		}
	}
	res, err := s.run(r.Context(), l, req, emit)
	if err == nil { // the end of the answer: text held back, a call cut short
		evs := ts.flush()
		if piece, cs := ollamaPieces(evs); !o.stream {
			text.WriteString(piece)
			thinking.WriteString(reasoningText(evs))
			calls = append(calls, cs...)
		} else if thought := reasoningText(evs); piece != "" || thought != "" || len(cs) > 0 {
			err = nw.send(o.line(piece, thought, cs, nil, false, "", api.Timings{}))
		}
	}
	err = numCtxError(o.opts, err)
	if err != nil {
		code := httpStatus(err)
		note(r, o.model, code)
		if nw.started {
			if code != 499 {
				nw.send(api.OllamaError{Error: err.Error()}) // status stays 200 mid-stream
			}
			return
		}
		s.ollamaFail(w, r, o.model, code, err)
		return
	}
	s.record(e, res)
	t := api.Timings{
		TotalDuration:      int64(time.Since(start)),
		LoadDuration:       int64(l.LoadDuration),
		PromptEvalCount:    res.PromptTokens,
		PromptEvalDuration: int64(res.PrefillDuration),
		EvalCount:          res.CompletionTokens,
		EvalDuration:       int64(res.DecodeDuration),
		Metrics:            s.telemetry(res, l, time.Since(start)),
	}
	note(r, o.model, http.StatusOK)
	if !o.stream {
		writeJSON(w, http.StatusOK, o.line(text.String(), thinking.String(), calls, ollamaLogprobs(lps), true, res.FinishReason, t))
		return
	}
	nw.send(o.line("", "", nil, nil, true, res.FinishReason, t))
}

func details(e *Entry, info engine.ModelInfo, loaded bool) api.ModelDetails {
	d := e.Details
	if d.Families == nil {
		d.Families = []string{}
	}
	if loaded {
		if info.Quantization != "" {
			d.QuantizationLevel = info.Quantization
		}
		if info.Architecture != "" && d.Family == "" {
			d.Family = info.Architecture
		}
	}
	if loaded && info.Parameters > 0 {
		d.ParameterSize = paramSize(info.Parameters)
	}
	return d
}

func paramSize(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1fK", float64(n)/1e3)
}

func (s *Server) handleTags(w http.ResponseWriter, r *http.Request) {
	s.reg.Rescan()
	out := api.ListResponse{Models: []api.ListModel{}}
	for _, e := range s.reg.List() {
		info, loaded := s.sched.Info(e)
		out.Models = append(out.Models, api.ListModel{Name: e.Name, Model: e.Name, ModifiedAt: e.Modified.UTC(), Size: e.Size,
			Digest: e.Digest, Details: details(e, info, loaded)})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handlePS(w http.ResponseWriter, r *http.Request) {
	out := api.ProcessResponse{Models: []api.ProcessModel{}}
	for _, l := range s.sched.Loaded() {
		pm := api.ProcessModel{Name: l.Entry.Name, Model: l.Entry.Name, Size: l.Size, Digest: l.Entry.Digest,
			Details: details(l.Entry, l.Info, true), ExpiresAt: l.ExpiresAt, ContextLength: l.Info.ContextLength, Lane: l.Lane}
		if l.ExpiresAt.IsZero() { // forever: Ollama reports a far-future time
			pm.ExpiresAt = time.Date(2318, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		if l.Lane != LaneCPU { // memory on the accelerator, not in host RAM
			pm.SizeVRAM = l.Size
		}
		out.Models = append(out.Models, pm)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleShow(w http.ResponseWriter, r *http.Request) {
	var req api.ShowRequest
	if err := api.Decode(r.Body, &req); err != nil {
		writeOllamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	name := req.Model
	if name == "" {
		name = req.Name
	}
	if name == "" {
		writeOllamaError(w, http.StatusBadRequest, "model is required")
		return
	}
	note(r, name, 0)
	e, ok := s.reg.Lookup(name)
	if !ok {
		writeOllamaError(w, http.StatusNotFound, ollamaNotFound(name).Error())
		return
	}
	info, loaded := s.sched.Info(e)
	arch := e.Arch
	if loaded && info.Architecture != "" {
		arch = info.Architecture
	}
	ctxLen := e.ContextLength
	if loaded && info.ContextLength > 0 {
		ctxLen = info.ContextLength
	}
	mi := map[string]any{"general.architecture": arch, "edgectl.lane": e.Lane, "edgectl.path": e.Path, "edgectl.loaded": loaded}
	if arch != "" {
		mi[arch+".context_length"] = ctxLen
	}
	if loaded {
		mi["general.parameter_count"] = info.Parameters
		mi[arch+".vocab_size"] = info.VocabSize
	}
	caps := []string{"completion"}
	if loaded && backend(e) == "cpu" && toolcall.Detect(info.ChatTemplate) != toolcall.None {
		caps = append(caps, "tools") // what Ollama's clients check before sending tools
	}
	if loaded && thinkingCapable(e, info) {
		caps = append(caps, "thinking") // serve/reasoning.go
	}
	writeJSON(w, http.StatusOK, api.ShowResponse{Template: info.ChatTemplate, Details: details(e, info, loaded), ModelInfo: mi,
		Capabilities: caps, ModifiedAt: e.Modified.UTC()})
}

func (s *Server) handleVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.VersionResponse{Version: version.String()})
}
