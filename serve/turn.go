package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/toolcall"
)

// A turn is one chat answer for the routes that speak other chat dialects
// than chat completions (OpenAI's Responses API, Anthropic's Messages
// API): the same model lookup, lane field checks, scheduling, chat
// template, tool-call parsing, counters and telemetry as
// /v1/chat/completions (openAIGenerate); only the wire shapes differ.

// turn is how a turn went.
type turn struct {
	res    engine.Result
	finish string     // engine's finish reason, tool_calls when the answer made calls
	usage  *api.Usage // token counts and the telemetry block
}

// errTurnStop, returned by a turn's emit, ends the answer as if the model
// had stopped (a stop sequence the route matches itself).
var errTurnStop = errors.New("stop sequence")

// turnError is a turn that failed before or while answering, with the
// HTTP status the client is answered with (499: the client went away).
type turnError struct {
	code int
	err  error
}

func (e *turnError) Error() string { return e.err.Error() }
func (e *turnError) Unwrap() error { return e.err }

// leaseTurn is the start every OpenAI-style answer shares (chat and text
// completions, Responses, Messages): the model looked up, the lane's
// fields checked, a lease on the loaded model (the caller releases it),
// the tool-call format of its template, and the request as the lane takes
// it. A failure is a *turnError with its HTTP status.
func (s *Server) leaseTurn(r *http.Request, model string, ka *time.Duration, ereq engine.Request) (*Entry, *Lease, *toolStream, engine.Request, error) {
	e, ok := s.reg.Lookup(model)
	if !ok {
		return nil, nil, nil, ereq, &turnError{http.StatusNotFound, modelNotFound(model)}
	}
	if err := checkLaneFields(e, ereq, ""); err != nil {
		return nil, nil, nil, ereq, &turnError{http.StatusBadRequest, err}
	}
	l, err := s.sched.Acquire(r.Context(), e, ka)
	if err != nil {
		return nil, nil, nil, ereq, &turnError{httpStatus(err), err}
	}
	tf, err := leaseTools(e, l, ereq) // serve/tools.go
	if err != nil {
		l.Release()
		return nil, nil, nil, ereq, &turnError{http.StatusBadRequest, err}
	}
	return e, l, newToolStream(tf, ereq.Tools), prepare(l, ereq), nil
}

// chatTurn runs ereq on model. begin is called once the model is loaded
// and the answer is about to start (a stream writes its head there; an
// error from it ends the turn); emit receives the answer's text, thinking
// (as ask asks, serve/reasoning.go) and tool calls as they come.
func (s *Server) chatTurn(r *http.Request, model string, ka *time.Duration, ereq engine.Request, ask thinkAsk,
	begin func() error, emit func([]toolcall.Event) error) (turn, error) {
	return s.countedTurn(r, model, ka, ereq, ask, false, func(int) error { return begin() }, emit)
}

// countedTurn is chatTurn whose begin gets the prompt's token count when
// count asks for it and the lane counts apart from generating
// (countPrompt); 0 otherwise.
func (s *Server) countedTurn(r *http.Request, model string, ka *time.Duration, ereq engine.Request, ask thinkAsk,
	count bool, begin func(prompt int) error, emit func([]toolcall.Event) error) (turn, error) {
	start := time.Now()
	e, l, ts, ereq, err := s.leaseChat(r, model, ka, ereq, ask)
	if err != nil {
		return turn{}, err
	}
	defer l.Release()
	prompt := 0
	if count {
		if prompt, err = countPrompt(r.Context(), l, ereq); err != nil {
			return turn{}, &turnError{httpStatus(err), err}
		}
	}
	if err := begin(prompt); err != nil {
		return turn{}, &turnError{499, err}
	}
	send := func(evs []toolcall.Event) error {
		if len(evs) == 0 {
			return nil
		}
		return emit(evs)
	}
	res, err := s.run(r.Context(), l, ereq, func(t engine.Token) error { return send(ts.push(t)) })
	stopped := errors.Is(err, errTurnStop)
	if err == nil || stopped {
		if ferr := send(ts.flush()); !errors.Is(ferr, errTurnStop) {
			err = ferr
		}
	}
	if err != nil && !errors.Is(err, errTurnStop) {
		return turn{}, &turnError{httpStatus(err), err}
	}
	if stopped {
		res.FinishReason = engine.FinishStop
	}
	s.record(e, res)
	return turn{res: res, finish: ts.finish(res.FinishReason), usage: s.usage(res, l, start)}, nil
}

// leaseChat is leaseTurn with the request's thinking controls applied
// (ask, serve/reasoning.go): the turn's model leased (the caller releases
// it) and ereq as its lane and template take it.
func (s *Server) leaseChat(r *http.Request, model string, ka *time.Duration, ereq engine.Request, ask thinkAsk) (*Entry, *Lease, *toolStream, engine.Request, error) {
	ereq.Think = ask.forward() // an upstream's (serve/reasoning.go)
	e, l, ts, ereq, err := s.leaseTurn(r, model, ka, ereq)
	if err != nil {
		return nil, nil, nil, ereq, err
	}
	if err := think(e, l, ts, &ereq, ask); err != nil {
		l.Release()
		return nil, nil, nil, ereq, &turnError{http.StatusBadRequest, err}
	}
	return e, l, ts, ereq, nil
}

// countPrompt is the prompt's token count on a lane that counts without
// generating (engine.PromptCounter: the cpu lane), 0 on one that cannot.
func countPrompt(ctx context.Context, l *Lease, ereq engine.Request) (int, error) {
	pc, ok := l.Model.(engine.PromptCounter)
	if !ok {
		return 0, nil
	}
	return pc.CountPrompt(ctx, ereq)
}

// turnStatus is the status and error of a failed turn.
func turnStatus(err error) (int, error) {
	var te *turnError
	if errors.As(err, &te) {
		return te.code, te.err
	}
	return httpStatus(err), err
}

// sendEvent writes a named SSE event (`event: NAME` and `data: {json}`),
// as the Responses and Messages streams are framed.
func (s *sseWriter) sendEvent(name string, v any) error {
	if _, err := fmt.Fprintf(s.w, "event: %s\n", name); err != nil {
		return err
	}
	return s.send(v)
}

// renameField names a field as the route's API spells it in an error the
// shared checks word in chat completions' terms (response_format is
// text.format on the Responses route).
func renameField(err error, from, to string) error {
	var fe *api.FieldError
	if !errors.As(err, &fe) || fe.Field != from {
		return err
	}
	return &api.FieldError{Field: to, Msg: strings.ReplaceAll(fe.Msg, from, to)}
}
