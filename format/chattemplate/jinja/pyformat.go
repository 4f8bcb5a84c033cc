package jinja

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Python's printf-style "%" formatting (the format filter and str % args)
// and str.format, for the conversions chat templates use. Every result is
// size-checked before it is built.

func (e *evaluator) percentFormat(f string, arg Value) (Value, error) {
	var pos []Value
	var mapping *Dict
	switch x := arg.(type) {
	case Tuple:
		pos = x
	case *Dict:
		mapping = x
		pos = []Value{x}
	default:
		pos = []Value{arg}
	}
	var b limBuf
	b.max = e.lim.MaxStringBytes
	next := 0
	take := func() (Value, error) {
		if next >= len(pos) {
			return nil, fmt.Errorf("not enough arguments for format string")
		}
		next++
		return pos[next-1], nil
	}
	usedMapping := false
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '%' {
			_ = b.WriteByte(c)
			continue
		}
		i++
		if i >= len(f) {
			return nil, fmt.Errorf("incomplete format")
		}
		var v Value
		haveV := false
		if f[i] == '(' {
			j := strings.IndexByte(f[i:], ')')
			if j < 0 {
				return nil, fmt.Errorf("incomplete format key")
			}
			if mapping == nil {
				return nil, fmt.Errorf("format requires a mapping")
			}
			key := f[i+1 : i+j]
			got, ok := mapping.Get(key)
			if !ok {
				return nil, fmt.Errorf("format key %s is missing", shortRepr(key))
			}
			v, haveV, usedMapping = got, true, true
			i += j + 1
		}
		flags := ""
		for i < len(f) && strings.IndexByte("#0- +", f[i]) >= 0 {
			flags += f[i : i+1]
			i++
		}
		width, prec := -1, -1
		readNum := func() (int, error) {
			if i < len(f) && f[i] == '*' {
				i++
				w, err := take()
				if err != nil {
					return 0, err
				}
				n, err := argInt("format", "*", w)
				if n > int64(e.lim.MaxStringBytes) || n < -int64(e.lim.MaxStringBytes) {
					return 0, limitErr("format width over the %d-byte limit", e.lim.MaxStringBytes)
				}
				return int(n), err
			}
			n := -1
			for i < len(f) && '0' <= f[i] && f[i] <= '9' {
				if n < 0 {
					n = 0
				}
				n = n*10 + int(f[i]-'0')
				if n > e.lim.MaxStringBytes {
					return 0, limitErr("format width over the %d-byte limit", e.lim.MaxStringBytes)
				}
				i++
			}
			return n, nil
		}
		var err error
		if width, err = readNum(); err != nil {
			return nil, err
		}
		if i < len(f) && f[i] == '.' {
			i++
			if prec, err = readNum(); err != nil {
				return nil, err
			}
			if prec < 0 {
				prec = 0
			}
		}
		for i < len(f) && strings.IndexByte("hlL", f[i]) >= 0 {
			i++
		}
		if i >= len(f) {
			return nil, fmt.Errorf("incomplete format")
		}
		conv := f[i]
		if conv == '%' {
			_ = b.WriteByte('%')
			continue
		}
		if !haveV {
			if v, err = take(); err != nil {
				return nil, err
			}
		}
		s, err := e.formatOne(conv, flags, width, prec, v)
		if err != nil {
			return nil, err
		}
		b.WriteString(s)
		if b.over {
			return nil, limitErr("formatted string is over the %d-byte limit", e.lim.MaxStringBytes)
		}
	}
	if next < len(pos) && !usedMapping && mapping == nil {
		return nil, fmt.Errorf("not all arguments converted during string formatting")
	}
	if err := e.charge(b.Len()); err != nil {
		return nil, err
	}
	return b.String(), nil
}

func (e *evaluator) formatOne(conv byte, flags string, width, prec int, v Value) (string, error) {
	spec := "%" + flags
	if width >= 0 {
		spec += strconv.Itoa(width)
	}
	if prec >= 0 {
		spec += "." + strconv.Itoa(prec)
	}
	switch conv {
	case 's', 'r', 'a':
		var s string
		var err error
		if conv == 's' {
			s, err = e.str(v)
		} else {
			s, err = e.repr(v)
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf(spec+"s", s), nil
	case 'd', 'i', 'u', 'x', 'X', 'o':
		i, f, isF, ok := number(v)
		if !ok {
			return "", fmt.Errorf("%%%c format: a real number is required, not %s", conv, typeName(v))
		}
		if isF {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return "", fmt.Errorf("cannot convert float %s to integer", pyFloatRepr(f))
			}
			i = int64(f)
		}
		verb := map[byte]string{'d': "d", 'i': "d", 'u': "d", 'x': "x", 'X': "X", 'o': "o"}[conv]
		if conv == 'o' && strings.Contains(flags, "#") {
			spec = strings.ReplaceAll(spec, "#", "")
			return fmt.Sprintf(spec+"s", "0o"+strconv.FormatInt(i, 8)), nil
		}
		return fmt.Sprintf(spec+verb, i), nil
	case 'e', 'E', 'f', 'F', 'g', 'G':
		i, f, isF, ok := number(v)
		if !ok {
			return "", fmt.Errorf("must be real number, not %s", typeName(v))
		}
		x := asFloat(i, f, isF)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			s := pyFloatRepr(x)
			if conv >= 'A' && conv <= 'Z' {
				s = strings.ToUpper(s)
			}
			return fmt.Sprintf(strings.ReplaceAll(spec, "0", "")+"s", s), nil
		}
		if prec < 0 {
			spec += ".6"
		}
		return fmt.Sprintf(spec+string(conv), x), nil
	case 'c':
		switch x := v.(type) {
		case string:
			if utf8.RuneCountInString(x) != 1 {
				return "", fmt.Errorf("%%c requires int or char")
			}
			return fmt.Sprintf(spec+"s", x), nil
		case int64:
			if x < 0 || x > 0x10ffff {
				return "", fmt.Errorf("%%c arg not in range(0x110000)")
			}
			return fmt.Sprintf(spec+"c", rune(x)), nil
		}
		return "", fmt.Errorf("%%c requires int or char")
	}
	return "", fmt.Errorf("unsupported format character '%c'", conv)
}

// braceFormat is str.format.
func (e *evaluator) braceFormat(f string, a *args) (Value, error) {
	var b limBuf
	b.max = e.lim.MaxStringBytes
	auto := 0
	for i := 0; i < len(f); i++ {
		c := f[i]
		switch {
		case c == '{' && i+1 < len(f) && f[i+1] == '{':
			_ = b.WriteByte('{')
			i++
			continue
		case c == '}' && i+1 < len(f) && f[i+1] == '}':
			_ = b.WriteByte('}')
			i++
			continue
		case c == '}':
			return nil, fmt.Errorf("single '}' encountered in format string")
		case c != '{':
			_ = b.WriteByte(c)
			continue
		}
		j := strings.IndexByte(f[i:], '}')
		if j < 0 {
			return nil, fmt.Errorf("expected '}' before end of string")
		}
		field := f[i+1 : i+j]
		i += j
		if strings.ContainsRune(field, '{') {
			return nil, fmt.Errorf("nested replacement fields are not supported in chat templates")
		}
		spec := ""
		if k := strings.IndexByte(field, ':'); k >= 0 {
			field, spec = field[:k], field[k+1:]
		}
		conv := byte(0)
		if k := strings.IndexByte(field, '!'); k >= 0 {
			if k+2 != len(field) {
				return nil, fmt.Errorf("expected ':' after conversion specifier")
			}
			conv = field[k+1]
			field = field[:k]
		}
		// The argument name, then .attr and [key] parts.
		end := strings.IndexAny(field, ".[")
		if end < 0 {
			end = len(field)
		}
		name := field[:end]
		var v Value
		switch {
		case name == "":
			if auto >= len(a.pos) {
				return nil, fmt.Errorf("replacement index %d out of range for positional args tuple", auto)
			}
			v = a.pos[auto]
			auto++
		case name[0] >= '0' && name[0] <= '9':
			n, err := strconv.Atoi(name)
			if err != nil || n >= len(a.pos) {
				return nil, fmt.Errorf("replacement index %s out of range for positional args tuple", name)
			}
			v = a.pos[n]
		default:
			found := false
			for k, kn := range a.kwNames {
				if kn == name {
					v, found = a.kwVals[k], true
				}
			}
			if !found {
				return nil, fmt.Errorf("format key '%s' is missing", name)
			}
		}
		rest := field[end:]
		for rest != "" {
			var err error
			if rest[0] == '.' {
				k := strings.IndexAny(rest[1:], ".[")
				if k < 0 {
					k = len(rest) - 1
				}
				if v, err = e.getattr(v, rest[1:1+k]); err != nil {
					return nil, err
				}
				rest = rest[1+k:]
				continue
			}
			k := strings.IndexByte(rest, ']')
			if k < 0 {
				return nil, fmt.Errorf("missing ']' in format string")
			}
			var key Value = rest[1:k]
			if n, err := strconv.ParseInt(rest[1:k], 10, 64); err == nil {
				key = n
			}
			if v, err = e.getitem(v, key); err != nil {
				return nil, err
			}
			rest = rest[k+1:]
		}
		var err error
		switch conv {
		case 'r', 'a':
			var s string
			if s, err = e.repr(v); err != nil {
				return nil, err
			}
			v = s
		case 's':
			var s string
			if s, err = e.str(v); err != nil {
				return nil, err
			}
			v = s
		case 0:
		default:
			return nil, fmt.Errorf("unknown conversion specifier %c", conv)
		}
		s, err := e.formatSpec(v, spec)
		if err != nil {
			return nil, err
		}
		b.WriteString(s)
		if b.over {
			return nil, limitErr("formatted string is over the %d-byte limit", e.lim.MaxStringBytes)
		}
	}
	if err := e.charge(b.Len()); err != nil {
		return nil, err
	}
	return b.String(), nil
}

// formatSpec is Python's format(v, spec) for strings, ints and floats.
func (e *evaluator) formatSpec(v Value, spec string) (string, error) {
	if spec == "" {
		return e.str(v)
	}
	fill, align := " ", byte(0)
	if r, n := utf8.DecodeRuneInString(spec); n > 0 && len(spec) > n && strings.IndexByte("<>^=", spec[n]) >= 0 {
		fill, align, spec = string(r), spec[n], spec[n+1:]
	} else if spec != "" && strings.IndexByte("<>^=", spec[0]) >= 0 {
		align, spec = spec[0], spec[1:]
	}
	sign := byte('-')
	if spec != "" && strings.IndexByte("+- ", spec[0]) >= 0 {
		sign, spec = spec[0], spec[1:]
	}
	if spec != "" && spec[0] == '#' {
		return "", fmt.Errorf("the '#' format option is not supported in chat templates")
	}
	if spec != "" && spec[0] == '0' {
		if align == 0 {
			fill, align = "0", '='
		}
		spec = spec[1:]
	}
	width := 0
	for spec != "" && spec[0] >= '0' && spec[0] <= '9' {
		width = width*10 + int(spec[0]-'0')
		if width > e.lim.MaxStringBytes {
			return "", limitErr("format width over the %d-byte limit", e.lim.MaxStringBytes)
		}
		spec = spec[1:]
	}
	grouping := ""
	if spec != "" && (spec[0] == ',' || spec[0] == '_') {
		grouping, spec = spec[:1], spec[1:]
	}
	prec := -1
	if spec != "" && spec[0] == '.' {
		spec = spec[1:]
		prec = 0
		for spec != "" && spec[0] >= '0' && spec[0] <= '9' {
			prec = prec*10 + int(spec[0]-'0')
			if prec > 1000 {
				return "", fmt.Errorf("format precision too large")
			}
			spec = spec[1:]
		}
	}
	typ := byte(0)
	if len(spec) == 1 {
		typ = spec[0]
	} else if spec != "" {
		return "", fmt.Errorf("invalid format specifier")
	}
	var body, signStr string
	numeric := true
	switch x := v.(type) {
	case string:
		if typ != 0 && typ != 's' {
			return "", fmt.Errorf("unknown format code '%c' for object of type 'str'", typ)
		}
		body, numeric = x, false
		if prec >= 0 && utf8.RuneCountInString(body) > prec {
			body = string([]rune(body)[:prec])
		}
	case int64, bool:
		i, _, _, _ := number(x)
		if i < 0 {
			signStr, i = "-", -i
		}
		switch typ {
		case 0, 'd', 'n':
			body = strconv.FormatInt(i, 10)
		case 'x':
			body = strconv.FormatInt(i, 16)
		case 'X':
			body = strings.ToUpper(strconv.FormatInt(i, 16))
		case 'o':
			body = strconv.FormatInt(i, 8)
		case 'b':
			body = strconv.FormatInt(i, 2)
		case 'e', 'E', 'f', 'F', 'g', 'G', '%':
			f, _ := pyFloat(x)
			return e.formatSpec(f, spec0(fill, align, sign, width, grouping, prec, typ))
		default:
			return "", fmt.Errorf("unknown format code '%c' for object of type 'int'", typ)
		}
	case float64:
		f := x
		if f < 0 || (f == 0 && math.Signbit(f)) {
			signStr, f = "-", -f
		}
		switch typ {
		case 0:
			if prec < 0 {
				body = pyFloatRepr(f)
			} else {
				body = strconv.FormatFloat(f, 'g', max(prec, 1), 64)
			}
		case 'f', 'F':
			body = strconv.FormatFloat(f, 'f', precOr(prec), 64)
		case 'e', 'E':
			body = strconv.FormatFloat(f, 'e', precOr(prec), 64)
		case 'g', 'G':
			body = strconv.FormatFloat(f, 'g', max(precOr(prec), 1), 64)
		case '%':
			body = strconv.FormatFloat(f*100, 'f', precOr(prec), 64) + "%"
		default:
			return "", fmt.Errorf("unknown format code '%c' for object of type 'float'", typ)
		}
		if typ >= 'A' && typ <= 'Z' {
			body = strings.ToUpper(body)
		}
	default:
		return "", fmt.Errorf("unsupported format string passed to %s.__format__", typeName(v))
	}
	if numeric {
		if signStr == "" && sign != '-' {
			signStr = string(sign)
		}
		if grouping != "" {
			intPart, frac := body, ""
			if k := strings.IndexAny(body, ".e%"); k >= 0 {
				intPart, frac = body[:k], body[k:]
			}
			var g strings.Builder
			for k, c := range intPart {
				if k > 0 && (len(intPart)-k)%3 == 0 {
					g.WriteString(grouping)
				}
				g.WriteRune(c)
			}
			body = g.String() + frac
		}
		if align == 0 {
			align = '>'
		}
	} else if align == 0 {
		align = '<'
	}
	n := utf8.RuneCountInString(signStr + body)
	if width <= n {
		return signStr + body, nil
	}
	if err := e.needStr(width * len(fill)); err != nil {
		return "", err
	}
	pad := width - n
	switch align {
	case '<':
		return signStr + body + strings.Repeat(fill, pad), nil
	case '^':
		return strings.Repeat(fill, pad/2) + signStr + body + strings.Repeat(fill, pad-pad/2), nil
	case '=':
		return signStr + strings.Repeat(fill, pad) + body, nil
	}
	return strings.Repeat(fill, pad) + signStr + body, nil
}

func precOr(p int) int {
	if p < 0 {
		return 6
	}
	return p
}

func spec0(fill string, align, sign byte, width int, grouping string, prec int, typ byte) string {
	s := ""
	if align != 0 {
		s = fill + string(align)
	}
	if sign != '-' {
		s += string(sign)
	}
	if width > 0 {
		s += strconv.Itoa(width)
	}
	s += grouping
	if prec >= 0 {
		s += "." + strconv.Itoa(prec)
	}
	return s + string(typ)
}
