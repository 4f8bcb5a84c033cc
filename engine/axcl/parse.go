package axcl

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The vendor runtimes log in two formats (see ../shared/docs/axera.md §6.2):
//
//	[I][ Run][ 829]: ttft: 135.66 ms                   (main_* and early axllm)
//	09:45:45.569 INF Run:1023 | ttft: 860.29 ms         (newer axllm)
//
// Generated text is printed raw between the ttft line and the "hit eos" line,
// so the parser's job is to tell log lines from text while the text streams.
var (
	reHead   = regexp.MustCompile(`^(?:\[([A-Z])\]\[\s*(\w+)\]\[\s*(\d+)\]:\s*|(\d\d:\d\d:\d\d\.\d+) ([A-Z]{3}) (\w+):(\d+) \| )(.*)$`)
	reHeadIn = regexp.MustCompile(`(?:\[[A-Z]\]\[\s*\w+\]\[\s*\d+\]:\s*|\d\d:\d\d:\d\d\.\d+ [A-Z]{3} \w+:\d+ \| )`)
	reTTFT   = regexp.MustCompile(`ttft:\s*([0-9.]+)\s*ms`)
	reEOS    = regexp.MustCompile(`hit eos,\s*avg\s+([0-9.]+)\s*token/s`)
	reKV     = regexp.MustCompile(`precompute_len:\s*(\d+),\s*remaining:\s*(\d+)`)
	reMaxTok = regexp.MustCompile(`max_token_len\s*:\s*(\d+)`)
	reCMM    = regexp.MustCompile(`remain_cmm\((\d+) MB\)`)
	// ANSI CSI and OSC sequences the runtimes' loggers use for colour.
	reANSI = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]`)
)

// event is one thing the parser recognized in the PTY output.
type event struct {
	kind evKind
	text string // evText: generated text or other plain output; evLog: the message after the head
}

type evKind int

const (
	evText  evKind = iota // plain output (text or echo)
	evLog                 // a complete log line
	evReady               // the "prompt >> " prompt: the runtime waits for input
)

// parser turns raw PTY bytes into events. It holds back bytes that might
// still turn out to be an escape sequence, a split UTF-8 rune, a log line
// head or the ready prompt, so text is streamed as early as it is certain.
type parser struct {
	raw  []byte // undecoded tail: a partial escape sequence
	line string // the current, unterminated line
	sent int    // bytes of line already emitted as text
}

// feed consumes b and returns the events it completes.
func (p *parser) feed(b []byte) []event {
	p.raw = append(p.raw, b...)
	data := p.raw
	// Keep a trailing partial escape sequence for the next read.
	keep := 0
	if i := strings.LastIndexByte(string(data), 0x1b); i >= 0 && i >= len(data)-64 {
		tail := data[i:]
		if !reANSI.Match(tail) || reANSI.FindIndex(tail)[0] != 0 {
			keep = len(data) - i
		}
	}
	// and a split UTF-8 rune.
	cut := len(data) - keep
	for j := cut - 1; j >= 0 && j >= cut-3; j-- {
		if utf8.RuneStart(data[j]) {
			if !utf8.FullRune(data[j:cut]) {
				keep = len(data) - j
			}
			break
		}
	}
	s := string(data[:len(data)-keep])
	p.raw = append([]byte(nil), data[len(data)-keep:]...)
	s = reANSI.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "\r", "")

	var evs []event
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			break
		}
		evs = p.endLine(evs, p.line+s[:i])
		s = s[i+1:]
	}
	p.line += s
	return p.partial(evs)
}

// endLine classifies a complete line.
func (p *parser) endLine(evs []event, line string) []event {
	pending := line[p.sent:]
	whole := p.sent == 0
	p.line, p.sent = "", 0
	if m := reHead.FindStringSubmatch(pending); m != nil && whole {
		return append(evs, event{kind: evLog, text: m[8]})
	}
	// A log head glued to the end of generated text (no newline between).
	if loc := reHeadIn.FindStringIndex(pending); loc != nil {
		if loc[0] > 0 {
			evs = append(evs, event{kind: evText, text: pending[:loc[0]]})
		}
		m := reHead.FindStringSubmatch(pending[loc[0]:])
		return append(evs, event{kind: evLog, text: m[8]})
	}
	return append(evs, event{kind: evText, text: pending + "\n"})
}

// partial emits what is certain about the unterminated line.
func (p *parser) partial(evs []event) []event {
	rest := p.line[p.sent:]
	if rest == "" {
		return evs
	}
	if isReady(p.line) {
		if pre := strings.TrimSuffix(rest, readyPrompt(p.line)); pre != "" {
			evs = append(evs, event{kind: evText, text: pre})
		}
		p.line, p.sent = "", 0
		return append(evs, event{kind: evReady})
	}
	// Hold back from the first position where a log head or the prompt
	// could begin.
	hold := len(rest)
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if (c == '[' || (c >= '0' && c <= '9') || c == 'p' || c == '>') && (headPrefix(rest[i:]) || promptPrefix(rest[i:])) {
			hold = i
			break
		}
	}
	if hold > 0 {
		evs = append(evs, event{kind: evText, text: rest[:hold]})
		p.sent += hold
	}
	return evs
}

// isReady reports whether the line is the input prompt: "prompt >> " in
// current builds, ">> " in very old ones.
func isReady(line string) bool { return readyPrompt(line) != "" }

func readyPrompt(line string) string {
	if strings.HasSuffix(line, "prompt >> ") {
		return "prompt >> "
	}
	if line == ">> " {
		return line
	}
	return ""
}

func promptPrefix(s string) bool {
	return strings.HasPrefix("prompt >> ", s) || strings.HasPrefix(">> ", s)
}

// elem is one step of a log-head pattern: a byte class repeated min..max
// times (max < 0: unbounded).
type elem struct {
	class    func(byte) bool
	min, max int
}

func lit(c byte) elem { return elem{func(b byte) bool { return b == c }, 1, 1} }

var (
	isUpper = func(b byte) bool { return b >= 'A' && b <= 'Z' }
	isDigit = func(b byte) bool { return b >= '0' && b <= '9' }
	isSpace = func(b byte) bool { return b == ' ' || b == '\t' }
	isWord  = func(b byte) bool { return isUpper(b) || isDigit(b) || b == '_' || (b >= 'a' && b <= 'z') }

	bracketHead = []elem{lit('['), {isUpper, 1, 1}, lit(']'), lit('['), {isSpace, 0, -1}, {isWord, 1, -1}, lit(']'),
		lit('['), {isSpace, 0, -1}, {isDigit, 1, -1}, lit(']'), lit(':')}
	timeHead = []elem{{isDigit, 2, 2}, lit(':'), {isDigit, 2, 2}, lit(':'), {isDigit, 2, 2}, lit('.'), {isDigit, 1, -1},
		lit(' '), {isUpper, 3, 3}, lit(' '), {isWord, 1, -1}, lit(':'), {isDigit, 1, -1}, lit(' '), lit('|'), lit(' ')}
)

// headPrefix reports whether s could be the beginning of a log line (a head
// still arriving, or a complete head whose line has not ended). The classes of neighbouring elements are
// disjoint, so greedy matching needs no backtracking.
func headPrefix(s string) bool {
	return patternPrefix(bracketHead, s) || patternPrefix(timeHead, s)
}

func patternPrefix(pat []elem, s string) bool {
	i := 0
	for _, e := range pat {
		n := 0
		for i < len(s) && (e.max < 0 || n < e.max) && e.class(s[i]) {
			i++
			n++
		}
		if i == len(s) {
			return true
		}
		if n < e.min {
			return false
		}
	}
	return true // the whole head matched: the line is a log line
}

// logFacts are the numbers a log message may carry.
type logFacts struct {
	ttftMS     float64
	avgTPS     float64
	eos        bool
	precompute int
	remaining  int
	kv         bool
	maxTokens  int
	cmmMB      int
}

func parseLog(msg string) (f logFacts, ok bool) {
	if m := reTTFT.FindStringSubmatch(msg); m != nil {
		f.ttftMS, _ = strconv.ParseFloat(m[1], 64)
		ok = true
	}
	if m := reEOS.FindStringSubmatch(msg); m != nil {
		f.avgTPS, _ = strconv.ParseFloat(m[1], 64)
		f.eos, ok = true, true
	}
	if m := reKV.FindStringSubmatch(msg); m != nil {
		f.precompute, _ = strconv.Atoi(m[1])
		f.remaining, _ = strconv.Atoi(m[2])
		f.kv, ok = true, true
	}
	if m := reMaxTok.FindStringSubmatch(msg); m != nil {
		f.maxTokens, _ = strconv.Atoi(m[1])
		ok = true
	}
	if m := reCMM.FindStringSubmatch(msg); m != nil {
		f.cmmMB, _ = strconv.Atoi(m[1])
		ok = true
	}
	return f, ok
}
