package jinja

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Python's str() and repr() of template values, byte for byte: templates
// print lists, dicts, floats and None, and the prompt must match what
// transformers produces.

// limBuf is a string builder that stops at max bytes. It grows in chunks
// rather than by doubling one buffer, so a big result costs its size once
// (plus the final string), not three times.
type limBuf struct {
	b    []byte   // the chunk being filled
	full [][]byte // filled chunks
	n    int      // bytes written in all
	max  int
	over bool
}

const limBufChunk = 64 << 10

func (l *limBuf) WriteString(s string) {
	if l.over {
		return
	}
	if l.n+len(s) > l.max {
		l.over = true
		return
	}
	l.n += len(s)
	for len(s) > 0 {
		if len(l.b) == cap(l.b) {
			if l.b != nil {
				l.full = append(l.full, l.b)
			}
			l.b = make([]byte, 0, max(min(limBufChunk, l.max), min(len(s), l.max)))
		}
		k := copy(l.b[len(l.b):cap(l.b)], s)
		l.b = l.b[:len(l.b)+k]
		s = s[k:]
	}
}

func (l *limBuf) WriteByte(c byte) error {
	if l.over {
		return nil
	}
	if l.n+1 > l.max {
		l.over = true
		return nil
	}
	if len(l.b) < cap(l.b) {
		l.b = append(l.b, c)
		l.n++
		return nil
	}
	l.WriteString(string([]byte{c}))
	return nil
}

// Len is the number of bytes written.
func (l *limBuf) Len() int { return l.n }

// String is what was written.
func (l *limBuf) String() string {
	if len(l.full) == 0 {
		return string(l.b)
	}
	var sb strings.Builder
	sb.Grow(l.n)
	for _, c := range l.full {
		sb.Write(c)
	}
	sb.Write(l.b)
	return sb.String()
}

func (l *limBuf) WriteRune(r rune) {
	if r < utf8.RuneSelf {
		_ = l.WriteByte(byte(r))
		return
	}
	var tmp [4]byte
	n := utf8.EncodeRune(tmp[:], r)
	l.WriteString(string(tmp[:n]))
}

// pyFloatRepr is Python's repr(float): the shortest round-tripping digits,
// in fixed notation when the exponent is in [-4, 16), with ".0" on whole
// numbers.
func pyFloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	e := strings.IndexByte(s, 'e')
	exp, _ := strconv.Atoi(s[e+1:])
	digits := strings.Replace(s[:e], ".", "", 1)
	decpt := exp + 1
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	if -4 < decpt && decpt <= 16 {
		switch {
		case decpt <= 0:
			b.WriteString("0.")
			b.WriteString(strings.Repeat("0", -decpt))
			b.WriteString(digits)
		case decpt >= len(digits):
			b.WriteString(digits)
			b.WriteString(strings.Repeat("0", decpt-len(digits)))
			b.WriteString(".0")
		default:
			b.WriteString(digits[:decpt])
			b.WriteByte('.')
			b.WriteString(digits[decpt:])
		}
		return b.String()
	}
	b.WriteString(digits[:1])
	if len(digits) > 1 {
		b.WriteByte('.')
		b.WriteString(digits[1:])
	}
	b.WriteByte('e')
	x := decpt - 1
	if x < 0 {
		b.WriteByte('-')
		x = -x
	} else {
		b.WriteByte('+')
	}
	if x < 10 {
		b.WriteByte('0')
	}
	b.WriteString(strconv.Itoa(x))
	return b.String()
}

// pyQuote is Python's repr(str).
func pyQuote(b *limBuf, s string) {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	_ = b.WriteByte(q)
	const hex = "0123456789abcdef"
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == rune(q) || r == '\\':
			_ = b.WriteByte('\\')
			_ = b.WriteByte(byte(r))
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			_ = b.WriteByte(hex[r>>4])
			_ = b.WriteByte(hex[r&15])
		case r < 0x7f:
			_ = b.WriteByte(byte(r))
		case r == utf8.RuneError && n == 1:
			b.WriteString(s[i : i+1])
		case !unicode.IsPrint(r):
			switch {
			case r <= 0xff:
				b.WriteString(`\x`)
				b.WriteString(strconv.FormatInt(int64(r)|0x100, 16)[1:])
			case r <= 0xffff:
				b.WriteString(`\u`)
				b.WriteString(strconv.FormatInt(int64(r)|0x10000, 16)[1:])
			default:
				b.WriteString(`\U`)
				b.WriteString(strconv.FormatInt(int64(r)|0x100000000, 16)[1:])
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	_ = b.WriteByte(q)
}

const maxReprDepth = 200

// writeRepr writes repr(v). It reports false when v nests deeper than
// maxReprDepth (a namespace that holds itself).
func writeRepr(b *limBuf, v Value, depth int) bool {
	if depth > maxReprDepth || b.over {
		return !b.over && depth <= maxReprDepth
	}
	switch x := v.(type) {
	case string:
		pyQuote(b, x)
	case Undefined:
		b.WriteString("Undefined")
	case Markup:
		b.WriteString("Markup(")
		pyQuote(b, string(x))
		_ = b.WriteByte(')')
	case List:
		_ = b.WriteByte('[')
		for i, it := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			if !writeRepr(b, it, depth+1) {
				return false
			}
		}
		_ = b.WriteByte(']')
	case Tuple:
		_ = b.WriteByte('(')
		for i, it := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			if !writeRepr(b, it, depth+1) {
				return false
			}
		}
		if len(x) == 1 {
			_ = b.WriteByte(',')
		}
		_ = b.WriteByte(')')
	case *Dict:
		_ = b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			if !writeRepr(b, k, depth+1) {
				return false
			}
			b.WriteString(": ")
			if !writeRepr(b, x.vals[i], depth+1) {
				return false
			}
		}
		_ = b.WriteByte('}')
	case *Namespace:
		b.WriteString("<Namespace ")
		if !writeRepr(b, x.d, depth+1) {
			return false
		}
		_ = b.WriteByte('>')
	default:
		b.WriteString(scalarStr(v))
	}
	return true
}

// scalarStr is str() of a value that holds no others.
func scalarStr(v Value) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return pyFloatRepr(x)
	case string:
		return x
	case Markup:
		return string(x)
	case Undefined:
		return ""
	case Range:
		if x.Step == 1 {
			return "range(" + strconv.FormatInt(x.Start, 10) + ", " + strconv.FormatInt(x.Stop, 10) + ")"
		}
		return "range(" + strconv.FormatInt(x.Start, 10) + ", " + strconv.FormatInt(x.Stop, 10) + ", " + strconv.FormatInt(x.Step, 10) + ")"
	case *macroVal:
		return "<Macro '" + x.def.name + "'>"
	case *loopObj:
		return "<LoopContext " + strconv.Itoa(x.index0+1) + "/" + strconv.Itoa(x.length) + ">"
	case *Func:
		return "<built-in function " + x.Name + ">"
	case *builtinFunc:
		return "<built-in function " + x.name + ">"
	case *boundMethod:
		return "<built-in method " + x.name + " of " + typeName(x.recv) + " object>"
	}
	return "<" + typeName(v) + " object>"
}
