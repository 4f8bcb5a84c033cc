package axcl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/axllm"
)

// NewSession starts a conversation on the runtime. The runtime holds one
// conversation, so a session's first Generate resets it.
func (m *Model) NewSession() (engine.Session, error) {
	if err := m.Alive(); err != nil {
		return nil, err
	}
	return &session{m: m}, nil
}

type session struct{ m *Model }

// Reset forgets the conversation: the next request rebuilds it.
func (s *session) Reset() error {
	s.m.mu.Lock()
	s.m.held = nil
	s.m.mu.Unlock()
	return nil
}

func (s *session) Close() error { return nil }

// Generate maps the request onto the runtime's conversation
// (conversation.go), sends the new user line and streams the answer.
func (s *session) Generate(ctx context.Context, req engine.Request, emit func(engine.Token) error) (engine.Result, error) {
	m := s.m
	m.mu.Lock()
	defer m.mu.Unlock()
	var res engine.Result
	if err := m.Alive(); err != nil {
		return res, err
	}
	c, err := parseChat(req, m.defaultSystem)
	if err != nil {
		return res, err
	}
	// Sampling the process does not run with needs a restart (sampling.go).
	post, err := m.wantPost(req)
	if err != nil {
		return res, err
	}
	extra := map[string]any{}
	line := c.last
	if m.dirty && c.continues(m.held) && samePost(post, m.samp.running) {
		extra["conversation"] = "continued"
	} else {
		m.held = nil // unknown until the rebuild completes
		reserve := req.MaxTokens
		if reserve <= 0 || reserve > m.maxTokens/2 {
			reserve = m.maxTokens / 4
		}
		if n := c.fit(m.maxTokens, reserve, m.countTokens); n > 0 {
			w := fmt.Sprintf("conversation too long for the %d-token context: dropped the %d oldest turn(s)", m.maxTokens, n)
			m.opts.Logf("axcl: %s: warning: %s", m.info.Name, w)
			extra["context_truncated_turns"] = n
			extra["warning"] = w
		}
		if line, err = m.rebuild(ctx, c, post); err != nil {
			return res, err
		}
		extra["conversation"] = "rebuilt"
		extra["replayed_turns"] = len(c.turns)
	}
	res, answer, err := m.turn(ctx, line, req, emit)
	if err != nil {
		m.held = nil
		return res, err
	}
	if res.PromptTokens == 0 && m.exactTokens {
		// no precompute_len logged: the conversation's text, without the
		// runtime's template
		res.PromptTokens = m.countTokens(c.system) + m.countTokens(c.last)
		for _, t := range m.held.turns {
			res.PromptTokens += m.countTokens(t.user) + m.countTokens(t.answer)
		}
	}
	m.held.turns = append(m.held.turns, exchange{user: c.last, answer: answer})
	for k, v := range extra {
		res.Extra[k] = v
	}
	return res, nil
}

// rebuild gives the runtime a fresh cache holding c's system prompt and
// earlier user lines, sampling as post says. A new system prompt or
// sampling needs a restart (the runtime reads both at start); otherwise
// /reset, or a restart for builds without a reset command. It returns the
// line to send for c.last.
func (m *Model) rebuild(ctx context.Context, c chat, post *axllm.PostConfig) (string, error) {
	switch {
	case (c.system != m.system && m.sysVia != sysNone) || !samePost(post, m.samp.running):
		if err := m.restart(ctx, c.system, post); err != nil {
			return "", err
		}
	case !m.dirty:
	case m.opts.ResetCommand != "":
		if err := m.write(m.opts.ResetCommand + "\n"); err != nil {
			return "", m.fail(err)
		}
		if err := m.waitReady(); err != nil {
			return "", m.fail(fmt.Errorf("no prompt after %s: %w", m.opts.ResetCommand, err))
		}
		m.dirty = false
	default:
		if err := m.restart(ctx, m.system, m.samp.running); err != nil {
			return "", err
		}
	}
	lines := make([]string, 0, len(c.turns)+1)
	for _, t := range c.turns {
		lines = append(lines, t.user)
	}
	lines = append(lines, c.last)
	if m.sysVia == sysNone && c.system != m.system && c.system != "" {
		// no way to hand the runtime a system prompt: it leads the first line
		lines[0] = foldLine(c.system + " " + lines[0])
	}
	held := &conversation{system: c.system}
	discard := func(engine.Token) error { return nil }
	for i, t := range c.turns {
		if _, _, err := m.turn(ctx, lines[i], engine.Request{}, discard); err != nil {
			return "", err
		}
		// The cache now holds the runtime's new answer; the client's is
		// what the next request repeats, so that is what is matched.
		held.turns = append(held.turns, t)
	}
	m.held = held
	return lines[len(lines)-1], nil
}

// turn sends one prompt line and streams the runtime's answer, returning
// the text emitted.
func (m *Model) turn(ctx context.Context, line string, req engine.Request, emit0 func(engine.Token) error) (engine.Result, string, error) {
	var res engine.Result
	var answer strings.Builder
	emit := func(t engine.Token) error {
		answer.WriteString(t.Text)
		return emit0(t)
	}
	if line == "" {
		return res, "", ErrEmptyPrompt
	}
	start := time.Now()
	if err := m.write(line + "\n"); err != nil {
		return res, "", m.fail(err)
	}
	m.dirty = true

	var (
		first     time.Time
		seenTTFT  bool
		pre       strings.Builder // text before the ttft line: echo, or text of builds without ttft
		stop      = stopMatcher{stops: req.Stop}
		pieces    int
		budget    = tokenBudget{max: req.MaxTokens}
		finish    = engine.FinishStop
		avgTPS    float64
		kv        logFacts
		haltErr   error // why we interrupted the runtime
		ttftLog   float64
		interrupt bool
	)
	out := func(text string) error {
		if text == "" || interrupt {
			return nil
		}
		if first.IsZero() {
			first = time.Now()
		}
		pieces++
		if err := emit(engine.Token{ID: -1, Text: text}); err != nil {
			return err
		}
		if req.MaxTokens > 0 && m.reachedBudget(&budget, pieces, &answer) {
			finish = engine.FinishLength
			return errHalt
		}
		return nil
	}
	halt := func(err error) {
		if interrupt {
			return
		}
		interrupt = true
		haltErr = err
		// ^C through the line discipline: SIGINT to the runtime, which stops
		// the current run and prompts again.
		_ = m.write("\x03")
	}
	send := func(text string) {
		if interrupt {
			return
		}
		t, hit := stop.push(text)
		if err := out(t); err != nil {
			halt(err)
			return
		}
		if hit {
			halt(errHalt)
		}
	}

	waitCtx := ctx
	stopCtx, stopCancel := context.WithCancel(context.Background())
	defer stopCancel()
loop:
	for {
		if interrupt && waitCtx == ctx {
			// After ^C the runtime gets StopTimeout to prompt again.
			waitCtx = stopCtx
			t := time.AfterFunc(m.opts.StopTimeout, stopCancel)
			defer t.Stop()
		}
		ev, err := m.next(waitCtx)
		if err != nil {
			if waitCtx == stopCtx && stopCtx.Err() != nil {
				// The runtime ignored ^C: it is stuck, so it goes.
				m.kill(fmt.Errorf("runtime did not stop within %v of an interrupt", m.opts.StopTimeout))
				if haltErr == errHalt {
					break loop
				}
				return res, "", haltErr
			}
			if ctx.Err() != nil && !interrupt {
				halt(ctx.Err())
				continue
			}
			if haltErr != nil && haltErr != errHalt {
				return res, "", haltErr
			}
			return res, "", m.fail(err)
		}
		switch ev.kind {
		case evReady:
			if !seenTTFT && !interrupt {
				send(strings.TrimSpace(pre.String()))
			}
			if !interrupt {
				send(stop.flush())
			}
			break loop
		case evText:
			if !seenTTFT {
				pre.WriteString(ev.text)
				continue
			}
			if avgTPS == 0 { // text after the end-of-turn line is not the answer
				send(ev.text)
			}
		case evLog:
			f, _ := parseLog(ev.text)
			switch {
			case f.ttftMS > 0 && !seenTTFT:
				seenTTFT, ttftLog = true, f.ttftMS
				pre.Reset()
			case f.eos:
				avgTPS = f.avgTPS
				if !seenTTFT && !interrupt {
					send(strings.TrimSpace(pre.String()))
					seenTTFT = true
				}
				if !interrupt {
					// The runtime ends its text with a newline before the log line.
					stop.trimTrailingNewline()
					send(stop.flush())
				}
			case f.kv:
				kv = f
			}
		}
	}
	if haltErr != nil && haltErr != errHalt {
		return res, "", haltErr
	}
	if haltErr == errHalt && finish != engine.FinishLength {
		finish = engine.FinishStop
	}
	end := time.Now()
	res.FinishReason = finish
	// Counts: the model's tokenizer over the text the client got, else the
	// pieces the runtime printed; the prompt is what the runtime's cache
	// holds (its own precompute_len) less the answer.
	count := "approximate"
	res.CompletionTokens = pieces
	if m.exactTokens {
		res.CompletionTokens, count = m.countTokens(answer.String()), "tokenizer"
	}
	if ttftLog > 0 {
		res.TTFT = time.Duration(ttftLog * float64(time.Millisecond))
	} else if !first.IsZero() {
		res.TTFT = first.Sub(start)
	}
	res.PrefillDuration = res.TTFT
	if !first.IsZero() {
		res.DecodeDuration = end.Sub(first)
	}
	if kv.kv && kv.precompute > res.CompletionTokens {
		res.PromptTokens = kv.precompute - res.CompletionTokens
	}
	res.Extra = map[string]any{"token_count": count}
	if avgTPS > 0 {
		res.Extra["npu_reported_tps"] = avgTPS
	}
	if m.initCMM > 0 {
		res.Extra["npu_cmm_remain_mb"] = m.initCMM
	}
	if kv.kv {
		res.Extra["kv_remaining"] = kv.remaining
	}
	return res, answer.String(), nil
}

var errHalt = errors.New("halt")

// ErrEmptyPrompt: the request has no user text to send (a client error).
var ErrEmptyPrompt = fmt.Errorf("%w: the vendor runtime needs a non-empty user message", engine.ErrInvalidRequest)

// fail marks the runtime unusable after an I/O failure and kills it.
func (m *Model) fail(err error) error {
	if !errors.Is(err, ErrExited) {
		m.kill(err)
	}
	return err
}

// stopMatcher withholds text that might be the start of a stop string, and
// cuts the output at the first complete one.
type stopMatcher struct {
	stops []string
	held  string
}

// push adds text and returns what is safe to emit; hit is true when a stop
// string completed (it and what follows are dropped).
func (s *stopMatcher) push(text string) (string, bool) {
	buf := s.held + text
	for _, st := range s.stops {
		if st == "" {
			continue
		}
		if i := strings.Index(buf, st); i >= 0 {
			s.held = ""
			return buf[:i], true
		}
	}
	// keep the longest suffix that is a proper prefix of some stop string
	keep := 0
	for _, st := range s.stops {
		for k := min(len(st)-1, len(buf)); k > keep; k-- {
			if strings.HasSuffix(buf, st[:k]) {
				keep = k
				break
			}
		}
	}
	// and a trailing newline, which may be the separator before a log line
	if keep == 0 && strings.HasSuffix(buf, "\n") {
		keep = 1
	}
	s.held = buf[len(buf)-keep:]
	return buf[:len(buf)-keep], false
}

func (s *stopMatcher) trimTrailingNewline() { s.held = strings.TrimSuffix(s.held, "\n") }

func (s *stopMatcher) flush() string { h := s.held; s.held = ""; return h }

// tokenBudget follows an answer against max_tokens.
type tokenBudget struct {
	max    int
	tokens int // the answer's tokens when it was at bytes long
	at     int
}

// reachedBudget reports whether the answer so far uses max_tokens: by the
// model's tokenizer over the text when the model has one (a printed piece
// may hold several tokens, or part of one), else by pieces. A recount
// costs time linear in the answer (the Qwen3 tokenizer: 7.9 ms for 13k
// tokens), so it runs only when the text added since the last count could
// reach the budget, a token covering at least one byte: a few dozen
// recounts for an 8k-token budget, not one a piece.
func (m *Model) reachedBudget(b *tokenBudget, pieces int, answer *strings.Builder) bool {
	if !m.exactTokens {
		return pieces >= b.max
	}
	if b.tokens+answer.Len()-b.at < b.max {
		return false
	}
	b.tokens, b.at = m.countTokens(answer.String()), answer.Len()
	return b.tokens >= b.max
}
