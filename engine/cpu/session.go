package cpu

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/grammar"
	"github.com/edgectl/edgectl/engine/sample"
	"github.com/edgectl/edgectl/format/chattemplate"
)

// prefillChunk bounds how many prompt tokens go through one forward pass:
// large enough to read each weight row once for many tokens, small enough
// that cancellation is noticed quickly.
const prefillChunk = 64

var errModelClosed = errors.New("model is closed")

type session struct {
	m      *model
	st     *state
	tokens []int // what the KV cache holds
}

func (s *session) Reset() error {
	s.st.truncate(0)
	s.tokens = s.tokens[:0]
	return nil
}

func (s *session) Close() error {
	s.st.release()
	s.st = newState(s.m)
	s.tokens = nil
	return nil
}

// prompt turns a request into token ids; it stops when ctx ends.
func (s *session) prompt(ctx context.Context, req engine.Request) ([]int, error) {
	tok := s.m.tok
	if len(req.Messages) == 0 {
		if err := checkPromptBytes(tok, req.Prompt, s.m.arch.ctx, req.ContextLimit); err != nil {
			return nil, err // promptbound.go: too long before tokenizing
		}
		return tok.EncodeContext(ctx, req.Prompt, true)
	}
	if s.m.tmpl == nil {
		return nil, fmt.Errorf("%s: %w; send a plain prompt instead", s.m.info.Name, chattemplate.ErrNoTemplate)
	}
	extra, msgs, err := s.m.toolTemplate(req) // tools.go
	if err != nil {
		return nil, err
	}
	if len(req.TemplateVars) > 0 { // enable_thinking, chat_template_kwargs: tools stay the request's own
		vars := make(map[string]any, len(req.TemplateVars)+len(extra))
		for k, v := range req.TemplateVars {
			vars[k] = v
		}
		for k, v := range extra {
			vars[k] = v
		}
		extra = vars
	}
	text, err := s.m.tmpl.Render(ctx, msgs, chattemplate.Vars{BOSToken: tok.BOSToken(), EOSToken: tok.EOSToken(),
		AddGenerationPrompt: req.AddGenerationPrompt, Extra: extra})
	if errors.Is(err, chattemplate.ErrRaised) { // the conversation's fault: a 400
		return nil, fmt.Errorf("%w: %w", engine.ErrInvalidRequest, err)
	}
	if err != nil {
		return nil, err
	}
	if err := checkPromptBytes(tok, text, s.m.arch.ctx, req.ContextLimit); err != nil {
		return nil, err
	}
	// Templates write BOS themselves when the model wants it.
	ids, err := tok.EncodeContext(ctx, text, false)
	if err != nil {
		return nil, err
	}
	if tok.AddsBOS() && (len(ids) == 0 || ids[0] != tok.BOS()) && !strings.Contains(s.m.tmpl.Source(), "bos_token") {
		ids = append([]int{tok.BOS()}, ids...)
	}
	return ids, nil
}

func (s *session) Generate(ctx context.Context, req engine.Request, emit func(engine.Token) error) (engine.Result, error) {
	start := time.Now()
	var res engine.Result
	s.m.life.RLock()
	defer s.m.life.RUnlock()
	if s.m.closed {
		return res, errModelClosed
	}
	ids, err := s.prompt(ctx, req)
	if err != nil {
		return res, err
	}
	if len(ids) == 0 {
		return res, fmt.Errorf("empty prompt: nothing to generate from")
	}
	res.PromptTokens = len(ids)
	// Tools: marker tokens whose text the answer keeps, and the grammar of
	// a required call (tools.go).
	keepText, con, err := s.toolSetup(req)
	if err != nil {
		return res, err
	}
	if req.Format != nil { // structured output: a grammar masks each token
		if con, err = grammar.ForRequest(req.Format, s.m.tok, s.m.arch.eos); err != nil {
			return res, err
		}
	}
	ctxLen := s.m.arch.ctx
	if err := promptFits(len(ids), ctxLen, req.ContextLimit); err != nil {
		return res, err
	}
	maxTokens := req.MaxTokens
	if lim := req.ContextLimit; lim > 0 && lim < ctxLen {
		// The request's own context: prompt and output within lim.
		if room := lim - len(ids); maxTokens <= 0 || maxTokens > room {
			maxTokens = room
		}
	}
	// Reuse the cached prefix this conversation already computed.
	keep := 0
	for keep < len(s.tokens) && keep < len(ids)-1 && s.tokens[keep] == ids[keep] {
		keep++
	}
	s.st.truncate(keep)
	s.tokens = append(s.tokens[:keep], ids[keep:]...)
	var logits []float32
	for p := keep; p < len(ids); p += prefillChunk {
		if logits, err = s.st.forward(ctx, ids[p:min(p+prefillChunk, len(ids))]); err != nil {
			s.tokens = s.tokens[:s.st.pos]
			return res, err
		}
	}
	if err := checkLogits(logits, s.st.pos); err != nil {
		return res, err
	}
	res.PrefillDuration = time.Since(start)

	smp := sample.New(req.Sampling)
	eos := map[int]bool{}
	for _, id := range s.m.arch.eos {
		eos[id] = true
	}
	out := newStopper(req.Stop, emit)
	decodeStart := time.Now()
	history := append([]int(nil), ids...)
	var lps *sample.Logprobs
	for {
		if req.Logprobs { // from the raw logits, before Sample changes them
			lps = sample.NewLogprobs(logits, min(req.TopLogprobs, engine.MaxTopLogprobs), lps)
		}
		if con != nil && sample.Mask(logits, con.Allowed()) == 0 {
			res.DecodeDuration = time.Since(decodeStart)
			return res, fmt.Errorf("%w: structured output: no token of %s's vocabulary continues the JSON document: it needs %s; this model cannot write such documents",
				engine.ErrInvalidRequest, s.m.info.Name, con.Expected())
		}
		id := smp.Sample(logits, history)
		if con != nil {
			if err := con.Accept(id); err != nil { // the mask allowed it: cannot fail
				return res, err
			}
		}
		if eos[id] {
			res.FinishReason = engine.FinishStop
			break
		}
		res.CompletionTokens++
		history = append(history, id)
		var lp *engine.TokenLogprob
		if req.Logprobs {
			lp = s.tokenLogprob(lps, id)
		}
		stop, err := out.push(id, s.m.tok.Piece(id), s.m.tok.IsSpecial(id) && !keepText[id], lp)
		if res.CompletionTokens == 1 {
			res.TTFT = time.Since(start)
		}
		if err != nil {
			res.DecodeDuration = time.Since(decodeStart)
			return res, err
		}
		if stop || con != nil && con.Done() { // a stop string, or a complete document
			res.FinishReason = engine.FinishStop
			break
		}
		if maxTokens > 0 && res.CompletionTokens >= maxTokens {
			res.FinishReason = engine.FinishLength
			break
		}
		if s.st.pos+1 > ctxLen {
			res.FinishReason = engine.FinishLength
			break
		}
		if err := ctx.Err(); err != nil {
			res.DecodeDuration = time.Since(decodeStart)
			return res, err
		}
		s.tokens = append(s.tokens, id)
		if logits, err = s.st.forward(ctx, []int{id}); err == nil {
			err = checkLogits(logits, s.st.pos)
		}
		if err != nil {
			s.tokens = s.tokens[:s.st.pos]
			res.DecodeDuration = time.Since(decodeStart)
			return res, err
		}
	}
	if err := out.flush(); err != nil {
		return res, err
	}
	res.DecodeDuration = time.Since(decodeStart)
	return res, nil
}

// tokenLogprob is the report for a generated token: its log-probability
// and the most likely tokens at its position.
func (s *session) tokenLogprob(lps *sample.Logprobs, id int) *engine.TokenLogprob {
	entry := func(id int) engine.Logprob {
		return engine.Logprob{ID: id, Bytes: append([]byte{}, s.m.tok.Piece(id)...), Logprob: lps.Of(id)}
	}
	lp := &engine.TokenLogprob{Logprob: entry(id)}
	for _, t := range lps.Top() {
		lp.Top = append(lp.Top, entry(t))
	}
	return lp
}

// checkLogits refuses NaN logits, which no sampler can rank: they come
// from NaN or infinite weights, and would otherwise turn into one
// arbitrary token after another.
func checkLogits(logits []float32, pos int) error {
	for _, v := range logits {
		if v != v {
			return fmt.Errorf("the model computed NaN logits at position %d: its weights hold NaN or infinite values (check the checkpoint with `edgectl doctor`, or re-download it)", pos)
		}
	}
	return nil
}

// stopper streams token text, holding back bytes that may be the start of
// a stop string or an incomplete UTF-8 sequence. Log-probabilities travel
// with the text: a token's entry goes out with the emit that completes its
// text (see engine.Token.Logprobs).
type stopper struct {
	stops   []string
	emit    func(engine.Token) error
	pending []byte
	lps     []pendingLogprob
	lastID  int
	done    bool
}

// pendingLogprob is a token's entry and its bytes' range in pending (start
// is negative once part of the token has been emitted).
type pendingLogprob struct {
	lp         engine.TokenLogprob
	start, end int
}

// release takes the entries keep accepts, in order, and shifts the rest's
// ranges by the cut bytes that leave pending.
func (o *stopper) release(keep func(p pendingLogprob) bool, cut int) []engine.TokenLogprob {
	var out []engine.TokenLogprob
	rest := o.lps[:0]
	for _, p := range o.lps {
		if keep(p) {
			out = append(out, p.lp)
			continue
		}
		p.start -= cut
		p.end -= cut
		rest = append(rest, p)
	}
	o.lps = rest
	return out
}

func newStopper(stops []string, emit func(engine.Token) error) *stopper {
	var ss []string
	for _, s := range stops {
		if s != "" {
			ss = append(ss, s)
		}
	}
	return &stopper{stops: ss, emit: emit}
}

// push adds a token's bytes and its log-probabilities (nil: not asked
// for); it reports whether a stop string was seen.
func (o *stopper) push(id int, piece []byte, special bool, lp *engine.TokenLogprob) (bool, error) {
	if special {
		piece = nil // control tokens are not text
	}
	if lp != nil {
		o.lps = append(o.lps, pendingLogprob{lp: *lp, start: len(o.pending), end: len(o.pending) + len(piece)})
	}
	o.pending = append(o.pending, piece...)
	o.lastID = id
	text := string(o.pending)
	for _, s := range o.stops {
		if i := strings.Index(text, s); i >= 0 {
			o.done = true
			// Tokens that begin before the stop string are reported
			// (their visible part is output); the rest are cut.
			lps := o.release(func(p pendingLogprob) bool { return p.start < i || p.end <= i }, 0)
			if i > 0 || len(lps) > 0 {
				return true, o.emit(engine.Token{ID: id, Text: strings.ToValidUTF8(text[:i], "\uFFFD"), Logprobs: lps})
			}
			return true, nil
		}
	}
	// Emit everything except a tail that could begin a stop string or is
	// an unfinished UTF-8 sequence.
	hold := 0
	for _, s := range o.stops {
		for n := min(len(s)-1, len(text)); n > hold; n-- {
			if strings.HasSuffix(text, s[:n]) {
				hold = n
				break
			}
		}
	}
	cut := len(text) - hold
	for cut > 0 && !utf8.ValidString(text[:cut]) && len(text)-cut < 4 {
		cut--
	}
	if cut == 0 && len(text) > 0 && !utf8.ValidString(text) && len(text) >= 4 {
		cut = len(text) // invalid bytes, not a partial rune: let them through
	}
	chunk := text[:cut]
	o.pending = append(o.pending[:0], text[cut:]...)
	lps := o.release(func(p pendingLogprob) bool { return p.end <= cut }, cut)
	return false, o.emit(engine.Token{ID: id, Text: strings.ToValidUTF8(chunk, "\uFFFD"), Logprobs: lps})
}

// flush emits what is still held back at the end of generation.
func (o *stopper) flush() error {
	if o.done || len(o.pending) == 0 && len(o.lps) == 0 {
		return nil
	}
	t := strings.ToValidUTF8(string(o.pending), "\uFFFD")
	o.pending = o.pending[:0]
	lps := o.release(func(pendingLogprob) bool { return true }, 0)
	return o.emit(engine.Token{ID: -1, Text: t, Logprobs: lps})
}

// promptFits refuses a prompt of n tokens that leaves no room in the
// model's context window (ctxLen) or in the request's own limit (a
// ContextLimit below it): Generate and CountPrompt refuse alike.
func promptFits(n, ctxLen, limit int) error {
	if n >= ctxLen {
		return fmt.Errorf("%w: the prompt is %d tokens and the context window is %d; shorten the conversation or load the model with a larger context length",
			engine.ErrContextFull, n, ctxLen)
	}
	if limit > 0 && limit < ctxLen && n >= limit {
		return fmt.Errorf("%w: the prompt is %d tokens and the request limits the context to %d tokens; shorten the conversation or raise the limit",
			engine.ErrContextFull, n, limit)
	}
	return nil
}
