package jinja

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The lexer follows jinja2's: text between tags, tags tokenized until their
// end delimiter (which counts only outside brackets), and whitespace
// control as transformers configures it: trim_blocks (a newline right after
// a block or comment tag is dropped), lstrip_blocks (spaces and tabs before
// a block or comment tag at the start of a line are dropped), "-" strips all
// whitespace on that side, "+" keeps it.

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokText
	tokVarBegin
	tokVarEnd
	tokBlockBegin
	tokBlockEnd
	tokName
	tokString // val holds the decoded string
	tokInt
	tokFloat
	tokOp
)

type token struct {
	kind tokKind
	off  int32 // byte offset in the normalized source
	val  string
}

type lexer struct {
	src  string
	pos  int
	toks []token
}

// normalizeSource applies jinja2's newline handling: every \r\n or \r
// becomes \n and one trailing newline is dropped (keep_trailing_newline is
// off).
func normalizeSource(src string) string {
	if strings.IndexByte(src, '\r') >= 0 {
		src = strings.ReplaceAll(src, "\r\n", "\n")
		src = strings.ReplaceAll(src, "\r", "\n")
	}
	return strings.TrimSuffix(src, "\n")
}

func lex(src string) ([]token, error) {
	lx := &lexer{src: src}
	if err := lx.run(); err != nil {
		return nil, err
	}
	lx.toks = append(lx.toks, token{kind: tokEOF, off: int32(len(src))})
	return lx.toks, nil
}

func (lx *lexer) emit(k tokKind, off int, val string) {
	lx.toks = append(lx.toks, token{kind: k, off: int32(off), val: val})
}

// isPySpace is Python's str.isspace for one rune.
func isPySpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x1f, 0x85:
		return true
	}
	return r > 0x7f && unicode.IsSpace(r)
}

func trimPySpaceRight(s string) string { return strings.TrimRightFunc(s, isPySpace) }

// skipPySpace returns the offset after the whitespace that starts at i.
func skipPySpace(s string, i int) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !isPySpace(r) {
			break
		}
		i += n
	}
	return i
}

func (lx *lexer) run() error {
	src := lx.src
	lineStarting := true
	for lx.pos < len(src) {
		start := lx.pos
		j := nextTagStart(src, start)
		if j < 0 {
			lx.emit(tokText, start, src[start:])
			return nil
		}
		kind := src[j+1] // '{', '%' or '#'
		tagEnd := j + 2
		sign := byte(0)
		if tagEnd < len(src) && (src[tagEnd] == '-' || src[tagEnd] == '+') {
			sign = src[tagEnd]
			tagEnd++
		}
		text := src[start:j]
		if sign == '-' {
			text = trimPySpaceRight(text)
		} else if sign != '+' && kind != '{' {
			// lstrip_blocks
			l := strings.LastIndexByte(text, '\n') + 1
			if l > 0 || lineStarting {
				if rest := text[l:]; rest != "" && strings.TrimLeftFunc(rest, isPySpace) == "" {
					text = text[:l]
				}
			}
		}
		if text != "" {
			lx.emit(tokText, start, text)
		}
		var err error
		switch kind {
		case '#':
			lineStarting, err = lx.comment(tagEnd)
		case '%':
			if end, ok := rawBegin(src, tagEnd); ok {
				lineStarting, err = lx.raw(j, end)
				break
			}
			lx.emit(tokBlockBegin, j, "")
			lineStarting, err = lx.tag(tagEnd, tokBlockEnd)
		default:
			lx.emit(tokVarBegin, j, "")
			lineStarting, err = lx.tag(tagEnd, tokVarEnd)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// nextTagStart finds the next "{{", "{%" or "{#" at or after i.
func nextTagStart(s string, i int) int {
	for {
		k := strings.IndexByte(s[i:], '{')
		if k < 0 || i+k+1 >= len(s) {
			return -1
		}
		i += k
		switch s[i+1] {
		case '{', '%', '#':
			return i
		}
		i++
	}
}

// blockSuffix consumes a tag's end delimiter side: "-" then whitespace,
// "+" nothing, or (trim_blocks, for block and comment tags) one newline.
// i points just after the closing delimiter; sign is the byte before it.
func blockSuffix(s string, i int, sign byte, trim bool) int {
	switch {
	case sign == '-':
		return skipPySpace(s, i)
	case sign == '+':
		return i
	case trim && i < len(s) && s[i] == '\n':
		return i + 1
	}
	return i
}

func (lx *lexer) comment(i int) (bool, error) {
	s := lx.src
	k := strings.Index(s[i:], "#}")
	if k < 0 {
		return false, errAt(i-2, ErrSyntax, "missing end of comment tag")
	}
	end := i + k
	sign := byte(0)
	if end > i && (s[end-1] == '-' || s[end-1] == '+') {
		sign = s[end-1]
	}
	lx.pos = blockSuffix(s, end+2, sign, true)
	return lx.pos > 0 && s[lx.pos-1] == '\n', nil
}

// rawBegin matches the rest of "{% raw %}" (i is after "{%" and its sign)
// and returns the offset after it. "-%}" strips what follows; "%}" keeps the
// newline (jinja2 does not apply trim_blocks here).
func rawBegin(s string, i int) (int, bool) {
	i = skipPySpace(s, i)
	if !strings.HasPrefix(s[i:], "raw") {
		return 0, false
	}
	i += 3
	if i < len(s) && isNameRune(rune(s[i])) {
		return 0, false
	}
	i = skipPySpace(s, i)
	switch {
	case strings.HasPrefix(s[i:], "-%}"):
		return skipPySpace(s, i+3), true
	case strings.HasPrefix(s[i:], "%}"):
		return i + 2, true
	}
	return 0, false
}

// raw emits the text up to "{% endraw %}" verbatim.
func (lx *lexer) raw(tagStart, i int) (bool, error) {
	s := lx.src
	for j := i; ; {
		k := strings.Index(s[j:], "{%")
		if k < 0 {
			return false, errAt(tagStart, ErrSyntax, "missing {%% endraw %%} for this {%% raw %%}")
		}
		at := j + k
		p := at + 2
		sign := byte(0)
		if p < len(s) && (s[p] == '-' || s[p] == '+') {
			sign = s[p]
			p++
		}
		p = skipPySpace(s, p)
		if !strings.HasPrefix(s[p:], "endraw") {
			j = at + 2
			continue
		}
		p = skipPySpace(s, p+6)
		var endSign byte
		switch {
		case strings.HasPrefix(s[p:], "+%}"), strings.HasPrefix(s[p:], "-%}"):
			endSign = s[p]
			p += 3
		case strings.HasPrefix(s[p:], "%}"):
			p += 2
		default:
			j = at + 2
			continue
		}
		text := s[i:at]
		if sign == '-' {
			text = trimPySpaceRight(text)
		} else if sign != '+' {
			l := strings.LastIndexByte(text, '\n') + 1
			if l > 0 || (i > 0 && s[i-1] == '\n') {
				if rest := text[l:]; rest != "" && strings.TrimLeftFunc(rest, isPySpace) == "" {
					text = text[:l]
				}
			}
		}
		if text != "" {
			lx.emit(tokText, i, text)
		}
		lx.pos = blockSuffix(s, p, endSign, true)
		return lx.pos > 0 && s[lx.pos-1] == '\n', nil
	}
}

func isNameStart(r rune) bool {
	return r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || (r > 0x7f && unicode.IsLetter(r))
}

func isNameRune(r rune) bool {
	return isNameStart(r) || ('0' <= r && r <= '9') || (r > 0x7f && (unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)))
}

var operators3 = []string{"//", "**", "==", "!=", ">=", "<="}

// tag tokenizes the inside of a {{ }} or {% %} tag starting at i.
func (lx *lexer) tag(i int, end tokKind) (bool, error) {
	s := lx.src
	closer := "%}"
	if end == tokVarEnd {
		closer = "}}"
	}
	var stack []byte // open brackets: the end delimiter counts only outside them
	for {
		if i >= len(s) {
			return false, errAt(i, ErrSyntax, "unexpected end of template, expected '%s'", closer)
		}
		if len(stack) == 0 {
			// "+%}", "-%}" then whitespace, or "%}" (plus trim_blocks).
			if (s[i] == '-' || s[i] == '+') && strings.HasPrefix(s[i+1:], closer) && !(end == tokVarEnd && s[i] == '+') {
				lx.emit(end, i, "")
				lx.pos = blockSuffix(s, i+3, s[i], end == tokBlockEnd)
				return s[lx.pos-1] == '\n', nil
			}
			if strings.HasPrefix(s[i:], closer) {
				lx.emit(end, i, "")
				lx.pos = blockSuffix(s, i+2, 0, end == tokBlockEnd)
				return s[lx.pos-1] == '\n', nil
			}
		}
		c := s[i]
		r, n := rune(c), 1
		if c >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(s[i:])
		}
		switch {
		case isPySpace(r):
			i += n
		case '0' <= c && c <= '9':
			j, kind, err := lexNumber(s, i)
			if err != nil {
				return false, err
			}
			lx.emit(kind, i, strings.ReplaceAll(s[i:j], "_", ""))
			i = j
		case isNameStart(r):
			j := i + n
			for j < len(s) {
				r2, n2 := utf8.DecodeRuneInString(s[j:])
				if !isNameRune(r2) {
					break
				}
				j += n2
			}
			lx.emit(tokName, i, s[i:j])
			i = j
		case c == '\'' || c == '"':
			str, j, err := lexString(s, i)
			if err != nil {
				return false, err
			}
			lx.emit(tokString, i, str)
			i = j
		default:
			op := ""
			for _, o := range operators3 {
				if strings.HasPrefix(s[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				if !strings.ContainsRune("+-/*%~[](){}><=.:|,;", r) {
					return false, errAt(i, ErrSyntax, "unexpected character %q in tag", r)
				}
				op = s[i : i+1]
			}
			switch op {
			case "(", "[", "{":
				stack = append(stack, op[0])
			case ")", "]", "}":
				want := map[byte]byte{')': '(', ']': '[', '}': '{'}[op[0]]
				if len(stack) == 0 || stack[len(stack)-1] != want {
					return false, errAt(i, ErrSyntax, "unexpected '%s'", op)
				}
				stack = stack[:len(stack)-1]
			}
			lx.emit(tokOp, i, op)
			i += len(op)
		}
	}
}

// lexNumber scans an integer or float literal (underscores allowed, like
// Python; 0x/0o/0b integers).
func lexNumber(s string, i int) (int, tokKind, error) {
	digits := func(j int, ok func(byte) bool) int {
		for j < len(s) && (ok(s[j]) || (s[j] == '_' && j+1 < len(s) && ok(s[j+1]))) {
			j++
		}
		return j
	}
	dec := func(b byte) bool { return '0' <= b && b <= '9' }
	if s[i] == '0' && i+1 < len(s) {
		var ok func(byte) bool
		switch s[i+1] | 0x20 {
		case 'x':
			ok = func(b byte) bool { return dec(b) || ('a' <= b|0x20 && b|0x20 <= 'f') }
		case 'o':
			ok = func(b byte) bool { return '0' <= b && b <= '7' }
		case 'b':
			ok = func(b byte) bool { return b == '0' || b == '1' }
		}
		if ok != nil && i+2 < len(s) && ok(s[i+2]) {
			return digits(i+2, ok), tokInt, nil
		}
	}
	j := digits(i, dec)
	kind := tokInt
	// A float needs digits after the point: "x.0.1" is x[0][1] when the
	// number follows a dot, as in jinja2.
	afterDot := i > 0 && s[i-1] == '.'
	if !afterDot && j+1 < len(s) && s[j] == '.' && dec(s[j+1]) {
		j = digits(j+1, dec)
		kind = tokFloat
	}
	if !afterDot && j < len(s) && s[j]|0x20 == 'e' {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && dec(s[k]) {
			j = digits(k, dec)
			kind = tokFloat
		}
	}
	return j, kind, nil
}

// lexString decodes a quoted string literal the way jinja2 does (Python's
// unicode-escape: \n \t \\ \' \" \xhh \uhhhh \Uhhhhhhhh \ooo …; an unknown
// escape keeps its backslash).
func lexString(s string, i int) (string, int, error) {
	q := s[i]
	j := i + 1
	hasEsc := false
	for ; j < len(s); j++ {
		if s[j] == '\\' {
			hasEsc = true
			j++
			continue
		}
		if s[j] == q {
			break
		}
	}
	if j >= len(s) {
		return "", 0, errAt(i, ErrSyntax, "unterminated string literal")
	}
	body := s[i+1 : j]
	if !hasEsc {
		return body, j + 1, nil
	}
	var b strings.Builder
	for k := 0; k < len(body); k++ {
		c := body[k]
		if c != '\\' || k+1 >= len(body) {
			b.WriteByte(c)
			continue
		}
		k++
		switch e := body[k]; e {
		case '\n':
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'f':
			b.WriteByte(12)
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte(11)
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if k+n >= len(body) {
				return "", 0, errAt(i+1+k, ErrSyntax, "truncated \\%c escape in string literal", e)
			}
			v, ok := parseHex(body[k+1 : k+1+n])
			if !ok {
				return "", 0, errAt(i+1+k, ErrSyntax, "truncated \\%c escape in string literal", e)
			}
			if v > unicode.MaxRune {
				return "", 0, errAt(i+1+k, ErrSyntax, "illegal Unicode character in string literal")
			}
			b.WriteRune(rune(v))
			k += n
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := 0
			m := 0
			for m < 3 && k+m < len(body) && '0' <= body[k+m] && body[k+m] <= '7' {
				v = v*8 + int(body[k+m]-'0')
				m++
			}
			b.WriteRune(rune(v))
			k += m - 1
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String(), j + 1, nil
}

func parseHex(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		switch {
		case '0' <= s[i] && s[i] <= '9':
			v = v*16 + int64(s[i]-'0')
		case 'a' <= c && c <= 'f':
			v = v*16 + int64(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}
