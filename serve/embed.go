package serve

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
)

// Embeddings: OpenAI's /v1/embeddings, Ollama's /api/embed and its legacy
// /api/embeddings, over engine.Embedder, through the scheduler like
// generation (the same queue, lane slots, keep-alive, watchdog and
// counters). See docs/serve.md "Embeddings".

// maxEmbedInputs bounds one request's batch (OpenAI's limit is 2048).
const maxEmbedInputs = 2048

// embedRefusal is why e's lane cannot embed, or nil: the vendor runtime
// has no embedding path, so its models are refused before loading.
func embedRefusal(e *Entry) error {
	if backend(e) == "axcl" {
		return fmt.Errorf("%w: %s runs on the %s lane (the vendor NPU runtime), which cannot embed; embeddings run on the cpu lane and on HTTP upstreams",
			engine.ErrInvalidRequest, e.Name, e.Lane)
	}
	return nil
}

// embedOutcome is what a handler answers from.
type embedOutcome struct {
	res   engine.EmbedResult
	lease *Lease
}

// embed runs req on e's model: refused lanes first, then a lease, then
// the batch under the watchdog (each finished input counts as progress).
func (s *Server) embed(ctx context.Context, e *Entry, ka *time.Duration, req engine.EmbedRequest) (embedOutcome, error) {
	if err := embedRefusal(e); err != nil {
		return embedOutcome{}, err
	}
	l, err := s.sched.Acquire(ctx, e, ka)
	if err != nil {
		return embedOutcome{}, err
	}
	defer l.Release()
	emb, ok := l.Model.(engine.Embedder)
	if !ok {
		return embedOutcome{lease: l}, fmt.Errorf("%w: %s cannot embed on the %s lane", engine.ErrInvalidRequest, e.Name, l.Lane)
	}
	if len(req.Inputs) == 0 {
		return embedOutcome{lease: l}, nil
	}
	res, err := s.runEmbed(ctx, l, emb, req)
	if err != nil {
		return embedOutcome{lease: l}, err
	}
	s.metrics.promptTokens.WithLabelValues(e.Name).Add(float64(res.PromptTokens))
	s.metrics.prefillSeconds.WithLabelValues(e.Name).Add(res.Duration.Seconds())
	return embedOutcome{res: res, lease: l}, nil
}

// runEmbed is Embed with a panic turned into an error and the watchdog:
// no finished input for opts.Watchdog cancels the batch.
func (s *Server) runEmbed(ctx context.Context, l *Lease, emb engine.Embedder, req engine.EmbedRequest) (engine.EmbedResult, error) {
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	req.Progress = func(int) { last.Store(time.Now().UnixNano()) }
	type outcome struct {
		res engine.EmbedResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if p := recover(); p != nil {
				o = outcome{err: recovered(p, "embedding", s.opts.Logf)}
				l.Discard("engine panic")
			}
			done <- o
		}()
		o.res, o.err = emb.Embed(ectx, req)
	}()
	t := time.NewTicker(min(max(s.opts.Watchdog/10, 10*time.Millisecond), time.Second))
	defer t.Stop()
	for {
		select {
		case o := <-done:
			if o.err != nil && ctx.Err() != nil {
				return o.res, ctx.Err()
			}
			return o.res, o.err
		case <-t.C:
			if idle := time.Since(time.Unix(0, last.Load())); idle >= s.opts.Watchdog {
				s.opts.Logf("watchdog: embedding on %s (lane %s) made no progress for %v: cancelled", l.r.entry.Name, l.Lane, idle.Round(time.Millisecond))
				cancel()
				select {
				case <-done:
				case <-time.After(s.opts.WatchdogGrace):
				}
				return engine.EmbedResult{}, fmt.Errorf("%w for %v: no input of the batch finished; send fewer or shorter inputs", ErrWatchdog, s.opts.Watchdog)
			}
		}
	}
}

// finishVectors applies an API's rule to the model's vectors: normalise
// (both APIs' default), then truncate to dims and renormalise.
func finishVectors(vs [][]float32, normalize bool, dims int) error {
	for i, v := range vs {
		if dims > 0 && dims < len(v) {
			v = v[:dims:dims]
			normalize = true
		}
		if normalize {
			if err := engine.NormalizeL2(v); err != nil {
				return err
			}
		}
		vs[i] = v
	}
	return nil
}

// normalized finishes an embed for an API that normalises: dimensions
// checked against the model, each vector normalised and cut to them.
func normalized(out embedOutcome, err error, dims int, model string) error {
	if err == nil {
		err = checkDimensions(dims, out.lease.Model.Info().EmbedLength, model)
	}
	if err == nil {
		err = finishVectors(out.res.Embeddings, true, dims)
	}
	return err
}

// embedStatus is an embedding error's status: a field the request got
// wrong is the client's (400), the rest as for generation.
func embedStatus(err error) int {
	var fe *api.FieldError
	if errors.As(err, &fe) {
		return http.StatusBadRequest
	}
	return httpStatus(err)
}

// ollamaEmbedEntry resolves an Ollama embedding request's model and checks
// its options.num_thread; the int is the status of the error.
func (s *Server) ollamaEmbedEntry(model string, o *api.Options) (*Entry, int, error) {
	if model == "" {
		return nil, http.StatusBadRequest, errors.New("model is required")
	}
	e, ok := s.reg.Lookup(model)
	if !ok {
		return nil, http.StatusNotFound, ollamaNotFound(model)
	}
	if err := s.checkNumThread(o, e); err != nil {
		return nil, http.StatusBadRequest, err
	}
	return e, 0, nil
}

// checkDimensions refuses a dimensions the model's vectors cannot give.
func checkDimensions(dims, length int, model string) error {
	if dims < 0 || (length > 0 && dims > length) {
		return &api.FieldError{Field: "dimensions", Msg: fmt.Sprintf("dimensions %d: %s's embeddings have %d; send 1 to %d, or leave it out", dims, model, length, length)}
	}
	return nil
}

func (s *Server) handleOpenAIEmbeddings(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req api.EmbeddingRequest
	if err := api.Decode(r.Body, &req); err != nil {
		s.openAIFail(w, r, "", http.StatusBadRequest, err)
		return
	}
	fail := func(code int, err error) { s.openAIFail(w, r, req.Model, code, err) }
	dims := 0
	if req.Dimensions != nil {
		dims = *req.Dimensions
		if dims <= 0 {
			fail(http.StatusBadRequest, &api.FieldError{Field: "dimensions", Msg: fmt.Sprintf("dimensions %d: send a positive number, or leave it out", dims)})
			return
		}
	}
	switch {
	case req.Model == "":
		fail(http.StatusBadRequest, errors.New("model is required"))
		return
	case req.Input.Len() == 0:
		fail(http.StatusBadRequest, &api.FieldError{Field: "input", Msg: "input is required: a string, an array of strings or token arrays"})
		return
	case req.Input.Len() > maxEmbedInputs:
		fail(http.StatusBadRequest, &api.FieldError{Field: "input", Msg: fmt.Sprintf("input holds %d items, more than %d: split the batch", req.Input.Len(), maxEmbedInputs)})
		return
	case req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64":
		fail(http.StatusBadRequest, &api.FieldError{Field: "encoding_format", Msg: fmt.Sprintf("encoding_format %q: want float or base64", req.EncodingFormat)})
		return
	}
	e, ok := s.reg.Lookup(req.Model)
	if !ok {
		fail(http.StatusNotFound, modelNotFound(req.Model))
		return
	}
	ereq := engine.EmbedRequest{}
	for _, t := range req.Input.Texts {
		ereq.Inputs = append(ereq.Inputs, engine.EmbedInput{Text: t})
	}
	for i, ids := range req.Input.Tokens {
		if len(ids) == 0 {
			fail(http.StatusBadRequest, &api.FieldError{Field: "input", Msg: fmt.Sprintf("input[%d] is an empty token array", i)})
			return
		}
		ereq.Inputs = append(ereq.Inputs, engine.EmbedInput{Tokens: ids})
	}
	out, err := s.embed(r.Context(), e, keepAlive(req.KeepAlive), ereq)
	if err = normalized(out, err, dims, req.Model); err != nil {
		fail(embedStatus(err), err)
		return
	}
	list := api.EmbeddingList{Object: "list", Model: req.Model, Data: make([]api.EmbeddingObject, len(out.res.Embeddings)),
		Usage: api.EmbeddingUsage{PromptTokens: out.res.PromptTokens, TotalTokens: out.res.PromptTokens,
			Metrics: s.telemetry(engine.Result{PromptTokens: out.res.PromptTokens, PrefillDuration: out.res.Duration}, out.lease, time.Since(start))}}
	for i, v := range out.res.Embeddings {
		list.Data[i] = api.EmbeddingObject{Object: "embedding", Index: i, Embedding: v}
		if req.EncodingFormat == "base64" {
			list.Data[i].Embedding = base64Floats(v)
		}
	}
	note(r, req.Model, http.StatusOK)
	writeJSON(w, http.StatusOK, list)
}

// base64Floats is OpenAI's base64 encoding of a vector: its float32
// components, little-endian.
func base64Floats(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func (s *Server) handleOllamaEmbed(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req api.EmbedRequest
	if err := api.Decode(r.Body, &req); err != nil {
		s.ollamaFail(w, r, "", http.StatusBadRequest, err)
		return
	}
	fail := func(code int, err error) { s.ollamaFail(w, r, req.Model, code, err) }
	switch {
	case req.Dimensions < 0:
		fail(http.StatusBadRequest, &api.FieldError{Field: "dimensions", Msg: fmt.Sprintf("dimensions %d: send a positive number, or leave it out", req.Dimensions)})
		return
	case len(req.Input) > maxEmbedInputs:
		fail(http.StatusBadRequest, &api.FieldError{Field: "input", Msg: fmt.Sprintf("input holds %d strings, more than %d: split the batch", len(req.Input), maxEmbedInputs)})
		return
	}
	e, code, err := s.ollamaEmbedEntry(req.Model, req.Options)
	if err != nil {
		fail(code, err)
		return
	}
	ereq := engine.EmbedRequest{Truncate: req.Truncate == nil || *req.Truncate}
	for _, t := range req.Input {
		ereq.Inputs = append(ereq.Inputs, engine.EmbedInput{Text: t})
	}
	out, err := s.embed(r.Context(), e, keepAlive(req.KeepAlive), ereq)
	if err = normalized(out, err, req.Dimensions, req.Model); err != nil {
		fail(embedStatus(err), err)
		return
	}
	resp := api.EmbedResponse{Model: req.Model, Embeddings: out.res.Embeddings, TotalDuration: int64(time.Since(start)),
		LoadDuration: int64(out.lease.LoadDuration), PromptEvalCount: out.res.PromptTokens}
	if resp.Embeddings == nil {
		resp.Embeddings = [][]float32{} // no input: the model is loaded, nothing embedded
	}
	note(r, req.Model, http.StatusOK)
	writeJSON(w, http.StatusOK, resp)
}

// handleOllamaEmbeddings is the legacy route: one prompt, its vector as
// the model gives it (Ollama's EmbeddingsHandler does not normalise), and
// an empty prompt only loads the model.
func (s *Server) handleOllamaEmbeddings(w http.ResponseWriter, r *http.Request) {
	var req api.EmbeddingsRequest
	if err := api.Decode(r.Body, &req); err != nil {
		s.ollamaFail(w, r, "", http.StatusBadRequest, err)
		return
	}
	fail := func(code int, err error) { s.ollamaFail(w, r, req.Model, code, err) }
	e, code, err := s.ollamaEmbedEntry(req.Model, req.Options)
	if err != nil {
		fail(code, err)
		return
	}
	var ereq engine.EmbedRequest
	if req.Prompt != "" {
		ereq.Inputs = []engine.EmbedInput{{Text: req.Prompt}}
	}
	out, err := s.embed(r.Context(), e, keepAlive(req.KeepAlive), ereq)
	if err != nil {
		fail(httpStatus(err), err)
		return
	}
	resp := api.EmbeddingsResponse{Embedding: []float64{}}
	if len(out.res.Embeddings) == 1 {
		for _, x := range out.res.Embeddings[0] {
			resp.Embedding = append(resp.Embedding, float64(x))
		}
	}
	note(r, req.Model, http.StatusOK)
	writeJSON(w, http.StatusOK, resp)
}
