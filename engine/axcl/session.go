package axcl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/edgectl/edgectl/engine"
)

// NewSession starts a conversation on the runtime. The runtime holds one
// conversation, so a session's first Generate resets it.
func (m *Model) NewSession() (engine.Session, error) {
	if err := m.Alive(); err != nil {
		return nil, err
	}
	return &session{m: m}, nil
}

type session struct {
	m     *Model
	turns int
}

func (s *session) Reset() error { s.turns = 0; return nil }
func (s *session) Close() error { return nil }

// promptLine is what the runtime reads with getline: one line of text. The
// runtime applies its own chat template and system prompt (config.json), so
// a chat request sends its last user message; earlier turns of the
// conversation live in the runtime's KV cache only when the same session
// continues.
func promptLine(req engine.Request) (string, error) {
	text := req.Prompt
	if len(req.Messages) > 0 {
		text = ""
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == "user" {
				text = req.Messages[i].Content
				break
			}
		}
	}
	text = strings.Join(strings.Fields(text), " ")
	if text == "" {
		return "", ErrEmptyPrompt
	}
	if strings.HasPrefix(text, "/") {
		text = " " + text // not a runtime command (/q, /reset, …)
	}
	return text, nil
}

// Generate sends one prompt line and streams the runtime's answer.
func (s *session) Generate(ctx context.Context, req engine.Request, emit func(engine.Token) error) (engine.Result, error) {
	m := s.m
	m.mu.Lock()
	defer m.mu.Unlock()
	var res engine.Result
	if err := m.Alive(); err != nil {
		return res, err
	}
	line, err := promptLine(req)
	if err != nil {
		return res, err
	}
	if s.turns == 0 && m.dirty && m.opts.ResetCommand != "" {
		if err := m.write(m.opts.ResetCommand + "\n"); err != nil {
			return res, m.fail(err)
		}
		if err := m.waitReady(); err != nil {
			return res, m.fail(fmt.Errorf("no prompt after %s: %w", m.opts.ResetCommand, err))
		}
	}
	start := time.Now()
	if err := m.write(line + "\n"); err != nil {
		return res, m.fail(err)
	}
	m.dirty = true
	s.turns++

	var (
		first     time.Time
		seenTTFT  bool
		pre       strings.Builder // text before the ttft line: echo, or text of builds without ttft
		stop      = stopMatcher{stops: req.Stop}
		pieces    int
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
		if req.MaxTokens > 0 && pieces >= req.MaxTokens {
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
				return res, haltErr
			}
			if ctx.Err() != nil && !interrupt {
				halt(ctx.Err())
				continue
			}
			if haltErr != nil && haltErr != errHalt {
				return res, haltErr
			}
			return res, m.fail(err)
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
		return res, haltErr
	}
	if haltErr == errHalt && finish != engine.FinishLength {
		finish = engine.FinishStop
	}
	end := time.Now()
	res.FinishReason = finish
	res.CompletionTokens = pieces
	if ttftLog > 0 {
		res.TTFT = time.Duration(ttftLog * float64(time.Millisecond))
	} else if !first.IsZero() {
		res.TTFT = first.Sub(start)
	}
	res.PrefillDuration = res.TTFT
	if !first.IsZero() {
		res.DecodeDuration = end.Sub(first)
	}
	if kv.kv && kv.precompute > pieces {
		res.PromptTokens = kv.precompute - pieces
	}
	res.Extra = map[string]any{"token_count": "approximate"}
	if avgTPS > 0 {
		res.Extra["npu_reported_tps"] = avgTPS
	}
	if m.initCMM > 0 {
		res.Extra["npu_cmm_remain_mb"] = m.initCMM
	}
	if kv.kv {
		res.Extra["kv_remaining"] = kv.remaining
	}
	return res, nil
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
