package jinja

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The filters chat templates use, with jinja2's semantics (jinja2/filters.py)
// and transformers' tojson.

type filterFunc func(e *evaluator, v Value, a *args) (Value, error)

var filters map[string]filterFunc

func init() {
	filters = map[string]filterFunc{
		"abs":         fAbs,
		"attr":        fAttr,
		"batch":       fBatch,
		"capitalize":  strFilter(pyCapitalize),
		"center":      fCenter,
		"count":       fLength,
		"d":           fDefault,
		"default":     fDefault,
		"dictsort":    fDictsort,
		"e":           fEscape,
		"escape":      fEscape,
		"first":       fFirst,
		"float":       fFloat,
		"forceescape": fForceEscape,
		"format":      fFormat,
		"indent":      fIndent,
		"int":         fInt,
		"items":       fItems,
		"join":        fJoin,
		"last":        fLast,
		"length":      fLength,
		"list":        fList,
		"lower":       strFilter(strings.ToLower),
		"map":         fMap,
		"max":         fMinMax(true),
		"min":         fMinMax(false),
		"reject":      fSelect(false, false),
		"rejectattr":  fSelect(false, true),
		"replace":     fReplace,
		"reverse":     fReverse,
		"round":       fRound,
		"safe":        fSafe,
		"select":      fSelect(true, false),
		"selectattr":  fSelect(true, true),
		"sort":        fSort,
		"string":      fString,
		"sum":         fSum,
		"title":       strFilter(jinjaTitle),
		"tojson":      fToJSON,
		"trim":        fTrim,
		"truncate":    fTruncate,
		"unique":      fUnique,
		"upper":       strFilter(strings.ToUpper),
		"wordcount":   fWordcount,
	}
}

// markupFilters take Markup as Markup (jinja2's soft_str keeps it, and
// their result stays Markup); other filters see the plain string.
var markupFilters = map[string]bool{
	"safe": true, "escape": true, "e": true, "forceescape": true, "string": true,
	"trim": true, "upper": true, "lower": true, "title": true, "capitalize": true,
	"center": true, "indent": true, "format": true, "default": true, "d": true,
}

// keepMarkup returns s as Markup when the filter's input was Markup.
func keepMarkup(in Value, s string) Value {
	if _, ok := in.(Markup); ok {
		return Markup(s)
	}
	return s
}

func strFilter(f func(string) string) filterFunc {
	return func(e *evaluator, v Value, a *args) (Value, error) {
		if _, err := a.bind("filter", 0); err != nil {
			return nil, err
		}
		s, err := e.str(v)
		if err != nil {
			return nil, err
		}
		if err := e.needStr(len(s)); err != nil {
			return nil, err
		}
		return keepMarkup(v, f(s)), nil
	}
}

func fSafe(e *evaluator, v Value, a *args) (Value, error) {
	if _, err := a.bind("safe", 0); err != nil {
		return nil, err
	}
	s, err := e.str(v)
	return Markup(s), err
}

func fForceEscape(e *evaluator, v Value, a *args) (Value, error) {
	return fEscape(e, plain(v), a)
}

// jinjaTitle is jinja2's title filter: words start after spaces and -({[<.
func jinjaTitle(s string) string {
	var b strings.Builder
	start := true
	for _, r := range s {
		if isPySpace(r) || strings.ContainsRune("-({[<", r) {
			b.WriteRune(r)
			start = true
			continue
		}
		if start {
			b.WriteRune(unicode.ToUpper(r))
		} else {
			b.WriteRune(unicode.ToLower(r))
		}
		start = false
	}
	return b.String()
}

func fString(e *evaluator, v Value, a *args) (Value, error) {
	if _, err := a.bind("string", 0); err != nil {
		return nil, err
	}
	if m, ok := v.(Markup); ok {
		return m, nil
	}
	return e.str(v)
}

func fAttr(e *evaluator, v Value, a *args) (Value, error) {
	p, err := a.bind("attr", 1, "name")
	if err != nil {
		return nil, err
	}
	name, err := argStr("attr", "name", p[0])
	if err != nil {
		return nil, err
	}
	return e.getattr(v, name)
}

func fCenter(e *evaluator, v Value, a *args) (Value, error) {
	p, err := a.bind("center", 0, "width")
	if err != nil {
		return nil, err
	}
	w, err := argInt("center", "width", or(p[0], int64(80)))
	if err != nil {
		return nil, err
	}
	s, err := e.str(v)
	if err != nil {
		return nil, err
	}
	r, err := e.pad("center", s, w, " ")
	return keepMarkup(v, r), err
}

func fLength(e *evaluator, v Value, a *args) (Value, error) {
	if _, err := a.bind("length", 0); err != nil {
		return nil, err
	}
	n, err := length(v)
	return int64(n), err
}

func fDefault(e *evaluator, v Value, a *args) (Value, error) {
	p, err := a.bind("default", 0, "default_value", "boolean")
	if err != nil {
		return nil, err
	}
	_, undef := v.(Undefined)
	if undef || (truthy(or(p[1], false)) && !truthy(v)) {
		return or(p[0], ""), nil
	}
	return v, nil
}

func fEscape(e *evaluator, v Value, a *args) (Value, error) {
	if m, ok := v.(Markup); ok {
		return m, nil
	}
	s, err := e.str(v)
	if err != nil {
		return nil, err
	}
	n := len(s) + 4*strings.Count(s, "&") + 3*strings.Count(s, "<") + 3*strings.Count(s, ">") + 4*strings.Count(s, "\"") + 4*strings.Count(s, "'")
	if err := e.needStr(n); err != nil {
		return nil, err
	}
	return Markup(htmlEscaper.Replace(s)), nil
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\"", "&#34;", "'", "&#39;")

func fFormat(e *evaluator, v Value, a *args) (Value, error) {
	if len(a.pos) > 0 && len(a.kwNames) > 0 {
		return nil, fmt.Errorf("format(): can't handle positional and keyword arguments at the same time")
	}
	s, err := e.str(v)
	if err != nil {
		return nil, err
	}
	var args Value = Tuple(a.pos)
	if len(a.kwNames) > 0 {
		d := NewDict()
		for i, k := range a.kwNames {
			d.SetString(k, a.kwVals[i])
		}
		args = d
	}
	if m, ok := v.(Markup); ok {
		return e.binop("%", m, args)
	}
	return e.percentFormat(s, args)
}

func fIndent(e *evaluator, v Value, a *args) (Value, error) {
	p, err := a.bind("indent", 0, "width", "first", "blank")
	if err != nil {
		return nil, err
	}
	var ind string
	switch w := or(p[0], int64(4)).(type) {
	case string:
		ind = w
	default:
		n, err := argInt("indent", "width", w)
		if err != nil {
			return nil, err
		}
		if n > int64(e.lim.MaxStringBytes) {
			return nil, limitErr("indent() width over the %d-byte limit", e.lim.MaxStringBytes)
		}
		if n > 0 {
			ind = strings.Repeat(" ", int(n))
		}
	}
	s, err := e.str(v)
	if err != nil {
		return nil, err
	}
	// jinja2: s += "\n", then the lines of s.splitlines() joined with
	// "\n" + indentation (blank lines too when blank=True).
	s += "\n"
	lines := 0
	forLines(s, false, func(string) { lines++ })
	if size := len(s) + lines*(len(ind)+1); size > e.lim.MaxStringBytes {
		return nil, limitErr("indent() result is over the %d-byte limit", e.lim.MaxStringBytes)
	} else if err := e.needStr(size); err != nil {
		return nil, err
	}
	var b strings.Builder
	blank := truthy(or(p[2], false))
	first := true
	forLines(s, false, func(l string) {
		if !first {
			b.WriteString("\n")
			if blank || l != "" {
				b.WriteString(ind)
			}
		}
		first = false
		b.WriteString(l)
	})
	if truthy(or(p[1], false)) {
		return keepMarkup(v, ind+b.String()), nil
	}
	return keepMarkup(v, b.String()), nil
}

func fReplace(e *evaluator, v Value, a *args) (Value, error) {
	p, err := a.bind("replace", 2, "old", "new", "count")
	if err != nil {
		return nil, err
	}
	s, err := e.str(v)
	if err != nil {
		return nil, err
	}
	old, err := e.str(p[0])
	if err != nil {
		return nil, err
	}
	repl, err := e.str(p[1])
	if err != nil {
		return nil, err
	}
	count := int64(-1)
	if c := or(p[2], nil); c != nil {
		if count, err = argInt("replace", "count", c); err != nil {
			return nil, err
		}
	}
	return e.replace(s, old, repl, count)
}

func fTrim(e *evaluator, v Value, a *args) (Value, error) {
	p, err := a.bind("trim", 0, "chars")
	if err != nil {
		return nil, err
	}
	s, err := e.str(v)
	if err != nil {
		return nil, err
	}
	if err := e.work(len(s)); err != nil {
		return nil, err
	}
	switch c := or(p[0], nil).(type) {
	case nil:
		return keepMarkup(v, trimPySpace(s)), nil
	case string:
		return keepMarkup(v, strings.Trim(s, c)), nil
	}
	return nil, fmt.Errorf("trim(): chars must be a string or None")
}

func fTruncate(e *evaluator, v Value, a *args) (Value, error) {
	p, err := a.bind("truncate", 0, "length", "killwords", "end", "leeway")
	if err != nil {
		return nil, err
	}
	s, err := e.str(v)
	if err != nil {
		return nil, err
	}
	n, err := argInt("truncate", "length", or(p[0], int64(255)))
	if err != nil {
		return nil, err
	}
	end, err := argStr("truncate", "end", or(p[2], "..."))
	if err != nil {
		return nil, err
	}
	leeway := int64(5)
	if lw := or(p[3], nil); lw != nil {
		if leeway, err = argInt("truncate", "leeway", lw); err != nil {
			return nil, err
		}
	}
	endLen := int64(utf8.RuneCountInString(end))
	if n < endLen {
		return nil, fmt.Errorf("expected length >= %d, got %d", endLen, n)
	}
	if leeway < 0 {
		return nil, fmt.Errorf("expected leeway >= 0, got %d", leeway)
	}
	runes := []rune(s)
	if int64(len(runes))-leeway <= n {
		return s, nil
	}
	head := string(runes[:n-endLen])
	if truthy(or(p[1], false)) {
		return head + end, nil
	}
	if i := strings.LastIndex(head, " "); i >= 0 {
		head = head[:i]
	}
	return head + end, nil
}

func fWordcount(e *evaluator, v Value, a *args) (Value, error) {
	s, err := e.str(v)
	if err != nil {
		return nil, err
	}
	n, in := int64(0), false
	for _, r := range s {
		w := r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
		if w && !in {
			n++
		}
		in = w
	}
	return n, nil
}

func fToJSON(e *evaluator, v Value, a *args) (Value, error) {
	// transformers: tojson(x, ensure_ascii=False, indent=None,
	// separators=None, sort_keys=False) = json.dumps(...)
	p, err := a.bind("tojson", 0, "ensure_ascii", "indent", "separators", "sort_keys")
	if err != nil {
		return nil, err
	}
	o := jsonOpts{ensureASCII: truthy(or(p[0], false)), sortKeys: truthy(or(p[3], false)), itemSep: ", ", keySep: ": "}
	switch ind := or(p[1], nil).(type) {
	case nil:
	case string:
		o.indent, o.hasIndent = ind, true
	default:
		n, err := argInt("tojson", "indent", ind)
		if err != nil {
			return nil, err
		}
		if n > 1024 {
			return nil, fmt.Errorf("tojson(): indent %d is too large", n)
		}
		o.indent, o.hasIndent = strings.Repeat(" ", int(max(n, 0))), true
	}
	if o.hasIndent {
		o.itemSep = ","
	}
	if sep := or(p[2], nil); sep != nil {
		items, err := e.iterate(sep)
		if err != nil || len(items) != 2 {
			return nil, fmt.Errorf("tojson(): separators must be a pair of strings")
		}
		is, ok1 := items[0].(string)
		ks, ok2 := items[1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("tojson(): separators must be a pair of strings")
		}
		o.itemSep, o.keySep = is, ks
	}
	return e.toJSON(v, o)
}
