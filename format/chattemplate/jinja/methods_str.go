package jinja

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The methods of str that chat templates call, with
// Python's semantics (indexes count code points, not bytes).

var strMethods map[string]method

func init() {
	strMethods = map[string]method{
		"strip":        strStrip(strings.Trim, trimPySpace),
		"lstrip":       strStrip(strings.TrimLeft, func(s string) string { return strings.TrimLeftFunc(s, isPySpace) }),
		"rstrip":       strStrip(strings.TrimRight, trimPySpaceRight),
		"split":        strSplit(false),
		"rsplit":       strSplit(true),
		"splitlines":   strSplitlines,
		"startswith":   strAffix(strings.HasPrefix),
		"endswith":     strAffix(strings.HasSuffix),
		"replace":      strReplace,
		"upper":        strMap(strings.ToUpper),
		"lower":        strMap(strings.ToLower),
		"casefold":     strMap(strings.ToLower),
		"title":        strMap(pyTitle),
		"capitalize":   strMap(pyCapitalize),
		"swapcase":     strMap(swapcase),
		"find":         strFind("find", false, false),
		"rfind":        strFind("rfind", true, false),
		"index":        strFind("index", false, true),
		"rindex":       strFind("rindex", true, true),
		"count":        strCount,
		"join":         strJoin,
		"format":       strFormat,
		"isdigit":      strIs(unicode.IsDigit),
		"isdecimal":    strIs(func(r rune) bool { return unicode.Is(unicode.Nd, r) }),
		"isnumeric":    strIs(unicode.IsNumber),
		"isalpha":      strIs(unicode.IsLetter),
		"isalnum":      strIs(func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }),
		"isspace":      strIs(isPySpace),
		"isupper":      strCased(unicode.IsUpper, unicode.IsLower),
		"islower":      strCased(unicode.IsLower, unicode.IsUpper),
		"zfill":        strZfill,
		"ljust":        strPad("ljust"),
		"rjust":        strPad("rjust"),
		"center":       strPad("center"),
		"partition":    strPartition(false),
		"rpartition":   strPartition(true),
		"removeprefix": strRemove(strings.TrimPrefix),
		"removesuffix": strRemove(strings.TrimSuffix),
	}
}

func trimPySpace(s string) string { return strings.TrimFunc(s, isPySpace) }

// runeSet reduces a strip() character set to its distinct runes, so that
// stripping costs the length of s, not that times the length of chars.
func runeSet(chars string) string {
	if len(chars) <= 16 {
		return chars
	}
	seen := map[rune]bool{}
	var b strings.Builder
	for _, r := range chars {
		if !seen[r] {
			seen[r] = true
			b.WriteRune(r)
		}
	}
	return b.String()
}

func strStrip(withChars func(string, string) string, space func(string) string) method {
	return func(e *evaluator, recv Value, a *args) (Value, error) {
		s := recv.(string)
		v, err := a.bind("strip", 0, "chars")
		if err != nil {
			return nil, err
		}
		if err := e.work(len(s)); err != nil {
			return nil, err
		}
		switch c := v[0].(type) {
		case missingT, nil:
			return space(s), nil
		case string:
			if err := e.work(len(c)); err != nil {
				return nil, err
			}
			return withChars(s, runeSet(c)), nil
		}
		return nil, fmt.Errorf("strip arg must be None or str")
	}
}

func strMap(f func(string) string) method {
	return func(e *evaluator, recv Value, a *args) (Value, error) {
		if _, err := a.bind("method", 0); err != nil {
			return nil, err
		}
		s := recv.(string)
		if err := e.needStr(len(s)); err != nil {
			return nil, err
		}
		return f(s), nil
	}
}

// splitWhitespace is str.split() without a separator.
func splitWhitespace(s string, maxsplit int, fromRight bool) []string {
	var out []string
	if fromRight {
		// Split from the right, then reverse.
		end := len(s)
		for end > 0 {
			for end > 0 {
				r, n := utf8.DecodeLastRuneInString(s[:end])
				if !isPySpace(r) {
					break
				}
				end -= n
			}
			if end == 0 {
				break
			}
			if maxsplit >= 0 && len(out) == maxsplit {
				out = append(out, s[:end])
				break
			}
			start := end
			for start > 0 {
				r, n := utf8.DecodeLastRuneInString(s[:start])
				if isPySpace(r) {
					break
				}
				start -= n
			}
			out = append(out, s[start:end])
			end = start
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
		return out
	}
	i := 0
	for i < len(s) {
		i = skipPySpace(s, i)
		if i >= len(s) {
			break
		}
		if maxsplit >= 0 && len(out) == maxsplit {
			out = append(out, s[i:])
			break
		}
		j := i
		for j < len(s) {
			r, n := utf8.DecodeRuneInString(s[j:])
			if isPySpace(r) {
				break
			}
			j += n
		}
		out = append(out, s[i:j])
		i = j
	}
	return out
}

func strSplit(fromRight bool) method {
	return func(e *evaluator, recv Value, a *args) (Value, error) {
		s := recv.(string)
		v, err := a.bind("split", 0, "sep", "maxsplit")
		if err != nil {
			return nil, err
		}
		maxsplit := int64(-1)
		if !isMissing(v[1]) {
			if maxsplit, err = argInt("split", "maxsplit", v[1]); err != nil {
				return nil, err
			}
		}
		if err := e.work(len(s)); err != nil {
			return nil, err
		}
		var parts []string
		switch sep := v[0].(type) {
		case missingT, nil:
			parts = splitWhitespace(s, int(maxsplit), fromRight)
		case string:
			if sep == "" {
				return nil, fmt.Errorf("empty separator")
			}
			n := strings.Count(s, sep) + 1
			if maxsplit >= 0 && int64(n) > maxsplit+1 {
				n = int(maxsplit) + 1
			}
			if err := e.needList(n); err != nil {
				return nil, err
			}
			if !fromRight || maxsplit < 0 {
				parts = strings.SplitN(s, sep, n)
			} else {
				parts = make([]string, n)
				end := len(s)
				for k := n - 1; k > 0; k-- {
					i := strings.LastIndex(s[:end], sep)
					parts[k] = s[i+len(sep) : end]
					end = i
				}
				parts[0] = s[:end]
			}
		default:
			return nil, fmt.Errorf("must be str or None, not %s", typeName(v[0]))
		}
		if err := e.needList(len(parts)); err != nil {
			return nil, err
		}
		out := make(List, len(parts))
		for i, p := range parts {
			out[i] = p
		}
		return out, nil
	}
}

// pySplitlines is str.splitlines.
func pySplitlines(s string, keepends bool) []string {
	var out []string
	forLines(s, keepends, func(l string) { out = append(out, l) })
	return out
}

// forLines calls f with each line of str.splitlines, without building the
// list.
func forLines(s string, keepends bool, f func(string)) {
	start := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			end := i + n
			if r == '\r' && end < len(s) && s[end] == '\n' {
				end++
			}
			if keepends {
				f(s[start:end])
			} else {
				f(s[start:i])
			}
			start = end
			i = end
			continue
		}
		i += n
	}
	if start < len(s) {
		f(s[start:])
	}
}

func strSplitlines(e *evaluator, recv Value, a *args) (Value, error) {
	s := recv.(string)
	v, err := a.bind("splitlines", 0, "keepends")
	if err != nil {
		return nil, err
	}
	if err := e.work(len(s)); err != nil {
		return nil, err
	}
	lines := pySplitlines(s, truthy(or(v[0], false)))
	if err := e.needList(len(lines)); err != nil {
		return nil, err
	}
	out := make(List, len(lines))
	for i, l := range lines {
		out[i] = l
	}
	return out, nil
}

// runeSlice cuts s to code points [start, end) given as optional ints.
func runeSlice(s string, start, end Value) (string, error) {
	if isMissing(start) && isMissing(end) {
		return s, nil
	}
	var st, en Value
	if !isMissing(start) {
		st = start
	}
	if !isMissing(end) {
		en = end
	}
	runes := []rune(s)
	lo, hi, _, _, err := sliceBounds(int64(len(runes)), st, en, nil)
	if err != nil {
		return "", err
	}
	if hi < lo {
		return "", nil
	}
	return string(runes[lo:hi]), nil
}

func strAffix(has func(string, string) bool) method {
	return func(e *evaluator, recv Value, a *args) (Value, error) {
		s := recv.(string)
		v, err := a.bind("startswith", 1, "prefix", "start", "end")
		if err != nil {
			return nil, err
		}
		if s, err = runeSlice(s, v[1], v[2]); err != nil {
			return nil, err
		}
		switch p := v[0].(type) {
		case string:
			return has(s, p), nil
		case Tuple:
			for _, it := range p {
				ps, ok := it.(string)
				if !ok {
					return nil, fmt.Errorf("tuple for startswith must only contain str, not %s", typeName(it))
				}
				if has(s, ps) {
					return true, nil
				}
			}
			return false, nil
		}
		return nil, fmt.Errorf("startswith first arg must be str or a tuple of str, not %s", typeName(v[0]))
	}
}

func strReplace(e *evaluator, recv Value, a *args) (Value, error) {
	s := recv.(string)
	v, err := a.bind("replace", 2, "old", "new", "count")
	if err != nil {
		return nil, err
	}
	old, err := argStr("replace", "old", v[0])
	if err != nil {
		return nil, err
	}
	repl, err := argStr("replace", "new", v[1])
	if err != nil {
		return nil, err
	}
	count := int64(-1)
	if !isMissing(v[2]) {
		if count, err = argInt("replace", "count", v[2]); err != nil {
			return nil, err
		}
	}
	return e.replace(s, old, repl, count)
}

// replace is str.replace, its result size checked before it is built.
func (e *evaluator) replace(s, old, repl string, count int64) (Value, error) {
	if err := e.work(len(s)); err != nil {
		return nil, err
	}
	n := int64(strings.Count(s, old))
	if count >= 0 && count < n {
		n = count
	}
	if size := int64(len(s)) + n*(int64(len(repl))-int64(len(old))); size > int64(e.lim.MaxStringBytes) {
		return nil, limitErr("replace() result of %d bytes is over the %d-byte limit", size, e.lim.MaxStringBytes)
	} else if err := e.needStr(int(size)); err != nil {
		return nil, err
	}
	return strings.Replace(s, old, repl, int(n)), nil
}

func strFind(name string, fromRight, raise bool) method {
	return func(e *evaluator, recv Value, a *args) (Value, error) {
		s := recv.(string)
		v, err := a.bind(name, 1, "sub", "start", "end")
		if err != nil {
			return nil, err
		}
		sub, err := argStr(name, "sub", v[0])
		if err != nil {
			return nil, err
		}
		if !isMissing(v[1]) || !isMissing(v[2]) {
			return nil, fmt.Errorf("%s() with start/end is not supported in chat templates", name)
		}
		if err := e.work(len(s)); err != nil {
			return nil, err
		}
		var i int
		if fromRight {
			i = strings.LastIndex(s, sub)
		} else {
			i = strings.Index(s, sub)
		}
		if i < 0 {
			if raise {
				return nil, fmt.Errorf("substring not found")
			}
			return int64(-1), nil
		}
		return int64(utf8.RuneCountInString(s[:i])), nil
	}
}

func strCount(e *evaluator, recv Value, a *args) (Value, error) {
	s := recv.(string)
	v, err := a.bind("count", 1, "sub", "start", "end")
	if err != nil {
		return nil, err
	}
	sub, err := argStr("count", "sub", v[0])
	if err != nil {
		return nil, err
	}
	if s, err = runeSlice(s, v[1], v[2]); err != nil {
		return nil, err
	}
	if err := e.work(len(s)); err != nil {
		return nil, err
	}
	return int64(strings.Count(s, sub)), nil
}

func strJoin(e *evaluator, recv Value, a *args) (Value, error) {
	sep := recv.(string)
	v, err := a.bind("join", 1, "iterable")
	if err != nil {
		return nil, err
	}
	items, err := e.iterate(v[0])
	if err != nil {
		return nil, err
	}
	size := 0
	parts := make([]string, len(items))
	for i, it := range items {
		s, ok := it.(string)
		if !ok {
			return nil, fmt.Errorf("sequence item %d: expected str instance, %s found", i, typeName(it))
		}
		parts[i] = s
		size += len(s) + len(sep)
		if size > e.lim.MaxStringBytes {
			return nil, limitErr("join() result is over the %d-byte limit", e.lim.MaxStringBytes)
		}
	}
	if err := e.needStr(size); err != nil {
		return nil, err
	}
	return strings.Join(parts, sep), nil
}

func strIs(f func(rune) bool) method {
	return func(e *evaluator, recv Value, a *args) (Value, error) {
		s := recv.(string)
		if s == "" {
			return false, nil
		}
		for _, r := range s {
			if !f(r) {
				return false, nil
			}
		}
		return true, nil
	}
}

// strCased is isupper/islower: at least one cased character, none of the
// other case.
func strCased(want, other func(rune) bool) method {
	return func(e *evaluator, recv Value, a *args) (Value, error) {
		found := false
		for _, r := range recv.(string) {
			if other(r) || unicode.IsTitle(r) {
				return false, nil
			}
			if want(r) {
				found = true
			}
		}
		return found, nil
	}
}

func strZfill(e *evaluator, recv Value, a *args) (Value, error) {
	s := recv.(string)
	v, err := a.bind("zfill", 1, "width")
	if err != nil {
		return nil, err
	}
	w, err := argInt("zfill", "width", v[0])
	if err != nil {
		return nil, err
	}
	n := int64(utf8.RuneCountInString(s))
	if w <= n {
		return s, nil
	}
	if err := e.needStr(int(min(w, int64(e.lim.MaxStringBytes)+1))); err != nil {
		return nil, err
	}
	sign := ""
	if s != "" && (s[0] == '+' || s[0] == '-') {
		sign, s = s[:1], s[1:]
	}
	return sign + strings.Repeat("0", int(w-n)) + s, nil
}

func (e *evaluator) pad(kind, s string, width int64, fill string) (string, error) {
	n := int64(utf8.RuneCountInString(s))
	if width <= n {
		return s, nil
	}
	if width > int64(e.lim.MaxStringBytes) {
		return "", limitErr("%s() width %d is over the %d-byte limit", kind, width, e.lim.MaxStringBytes)
	}
	if err := e.needStr(int(width) * len(fill)); err != nil {
		return "", err
	}
	marg := width - n
	var left int64
	switch kind {
	case "ljust":
		left = 0
	case "rjust":
		left = marg
	default: // CPython's centering
		left = marg/2 + (marg & width & 1)
	}
	return strings.Repeat(fill, int(left)) + s + strings.Repeat(fill, int(marg-left)), nil
}

func strPad(kind string) method {
	return func(e *evaluator, recv Value, a *args) (Value, error) {
		v, err := a.bind(kind, 1, "width", "fillchar")
		if err != nil {
			return nil, err
		}
		w, err := argInt(kind, "width", v[0])
		if err != nil {
			return nil, err
		}
		fill := " "
		if !isMissing(v[1]) {
			f, ok := v[1].(string)
			if !ok || utf8.RuneCountInString(f) != 1 {
				return nil, fmt.Errorf("the fill character must be exactly one character long")
			}
			fill = f
		}
		return e.pad(kind, recv.(string), w, fill)
	}
}

func strPartition(fromRight bool) method {
	return func(e *evaluator, recv Value, a *args) (Value, error) {
		s := recv.(string)
		v, err := a.bind("partition", 1, "sep")
		if err != nil {
			return nil, err
		}
		sep, err := argStr("partition", "sep", v[0])
		if err != nil {
			return nil, err
		}
		if sep == "" {
			return nil, fmt.Errorf("empty separator")
		}
		var i int
		if fromRight {
			i = strings.LastIndex(s, sep)
			if i < 0 {
				return Tuple{"", "", s}, nil
			}
		} else if i = strings.Index(s, sep); i < 0 {
			return Tuple{s, "", ""}, nil
		}
		return Tuple{s[:i], sep, s[i+len(sep):]}, nil
	}
}

func strRemove(f func(string, string) string) method {
	return func(e *evaluator, recv Value, a *args) (Value, error) {
		v, err := a.bind("removeprefix", 1, "affix")
		if err != nil {
			return nil, err
		}
		p, err := argStr("removeprefix", "affix", v[0])
		if err != nil {
			return nil, err
		}
		return f(recv.(string), p), nil
	}
}

func strFormat(e *evaluator, recv Value, a *args) (Value, error) {
	return e.braceFormat(recv.(string), a)
}

// pyTitle is Python's str.title().
func pyTitle(s string) string {
	var b strings.Builder
	prevCased := false
	for _, r := range s {
		cased := unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r)
		switch {
		case cased && prevCased:
			b.WriteRune(unicode.ToLower(r))
		case cased:
			b.WriteRune(unicode.ToTitle(r))
		default:
			b.WriteRune(r)
		}
		prevCased = cased
	}
	return b.String()
}

// pyCapitalize is Python's str.capitalize().
func pyCapitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToTitle(r)) + strings.ToLower(s[n:])
}

func swapcase(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case unicode.IsUpper(r):
			return unicode.ToLower(r)
		case unicode.IsLower(r):
			return unicode.ToUpper(r)
		}
		return r
	}, s)
}
