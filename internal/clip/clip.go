// Package clip shows a value that came from outside — a model id, a name,
// a path, a template's exception, an upstream's body — in a message: on one
// line, at most Max bytes of it, and its length when it was cut. A 10 KB
// id or a 20 MB exception must not become a 10 KB or 20 MB error line
// (docs/trust.md#messages).
package clip

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Max is how many bytes of a value a message shows: with its quotes and
// "… (N bytes)" about 185, leaving a one-line message room for its hint
// within 300 bytes.
const Max = 160

// Text is s for a message, unquoted: control characters (newlines, tabs,
// escape sequences) are written as Go escapes so the message stays one
// line and cannot drive a terminal; past Max bytes (as shown) it is cut at
// a character boundary and followed by "… (N bytes)".
func Text(s string) string {
	out, cut := shown(s, false)
	if cut {
		out += "… (" + strconv.Itoa(len(s)) + " bytes)"
	}
	return out
}

// Quote is Text in double quotes, as %q shows a short value:
// "aaaa…" (10240 bytes).
func Quote(s string) string {
	out, cut := shown(s, true)
	if cut {
		return "\"" + out + "…\" (" + strconv.Itoa(len(s)) + " bytes)"
	}
	return "\"" + out + "\""
}

// shown is s escaped (every rune as strconv.Quote writes it when quoted,
// only control characters otherwise), stopped before it passes Max bytes,
// and whether anything was left out.
func shown(s string, quoted bool) (string, bool) {
	var b strings.Builder
	for i, r := range s {
		piece := string(r)
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") || quoted && (r == '"' || r == '\\' || !strconv.IsPrint(r)) || isControl(r) {
			q := strconv.QuoteRune(r)
			if r == utf8.RuneError {
				q = strconv.Quote(s[i : i+1])
			}
			piece = q[1 : len(q)-1]
		}
		if b.Len()+len(piece) > Max {
			return b.String(), true
		}
		b.WriteString(piece)
	}
	return b.String(), false
}

func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029'
}

// MaxMessage bounds a whole message after Message.
const MaxMessage = 1024

// Message makes an error message safe to print when it may hold outside
// values its writer did not clip (an *os.PathError naming a 10 KB path):
// one line (control characters escaped), every word longer than Max
// clipped with its length, and at most MaxMessage bytes in all.
func Message(msg string) string {
	if len(msg) <= Max && !strings.ContainsFunc(msg, isControl) {
		return msg
	}
	var b strings.Builder
	start := 0
	flush := func(end int) {
		if w := msg[start:end]; len(w) > Max {
			b.WriteString(Text(w))
		} else {
			b.WriteString(escapeControls(w))
		}
	}
	for i, r := range msg {
		if r == ' ' || r == '\n' || r == '\t' || r == '\r' {
			flush(i)
			b.WriteByte(' ')
			start = i + 1
		}
	}
	flush(len(msg))
	out := b.String()
	if len(out) > MaxMessage {
		n := MaxMessage - 32
		for n > 0 && !utf8.RuneStart(out[n]) {
			n--
		}
		out = out[:n] + "… (" + strconv.Itoa(len(msg)) + " bytes)"
	}
	return out
}

// escapeControls is s with its control characters escaped, uncut.
func escapeControls(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
