package jinja

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"
)

// tojson is transformers' filter: Python's json.dumps with
// ensure_ascii=False by default, so the prompt carries tools and arguments
// exactly as transformers writes them.

type jsonOpts struct {
	ensureASCII     bool
	indent          string
	hasIndent       bool
	itemSep, keySep string
	sortKeys        bool
}

const maxJSONDepth = 500

type jsonWriter struct {
	e *evaluator
	o jsonOpts
	b limBuf
}

func (e *evaluator) toJSON(v Value, o jsonOpts) (Value, error) {
	w := &jsonWriter{e: e, o: o, b: limBuf{max: e.lim.MaxStringBytes}}
	if err := w.value(v, 0); err != nil {
		return nil, err
	}
	if w.b.over {
		return nil, limitErr("tojson result is over the %d-byte limit", e.lim.MaxStringBytes)
	}
	if err := e.charge(w.b.Len()); err != nil {
		return nil, err
	}
	return w.b.String(), nil
}

func (w *jsonWriter) newline(level int) {
	if !w.o.hasIndent {
		return
	}
	_ = w.b.WriteByte('\n')
	for i := 0; i < level; i++ {
		w.b.WriteString(w.o.indent)
	}
}

func (w *jsonWriter) value(v Value, level int) error {
	if level > maxJSONDepth {
		return fmt.Errorf("tojson: value nests deeper than %d levels", maxJSONDepth)
	}
	if w.b.over {
		return limitErr("tojson result is over the %d-byte limit", w.e.lim.MaxStringBytes)
	}
	switch x := plain(v).(type) {
	case nil:
		w.b.WriteString("null")
	case bool:
		if x {
			w.b.WriteString("true")
		} else {
			w.b.WriteString("false")
		}
	case int64:
		w.b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		w.b.WriteString(jsonFloat(x))
	case string:
		w.str(x)
	case List:
		return w.seq(x, level)
	case Tuple:
		return w.seq(x, level)
	case *Dict:
		return w.dict(x, level)
	default:
		return fmt.Errorf("Object of type %s is not JSON serializable", typeName(v))
	}
	return nil
}

func jsonFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return pyFloatRepr(f)
}

func (w *jsonWriter) seq(items []Value, level int) error {
	if len(items) == 0 {
		w.b.WriteString("[]")
		return nil
	}
	if err := w.e.work(len(items)); err != nil {
		return err
	}
	_ = w.b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			w.b.WriteString(w.o.itemSep)
		}
		w.newline(level + 1)
		if err := w.value(it, level+1); err != nil {
			return err
		}
	}
	w.newline(level)
	_ = w.b.WriteByte(']')
	return nil
}

func (w *jsonWriter) dict(d *Dict, level int) error {
	if d.Len() == 0 {
		w.b.WriteString("{}")
		return nil
	}
	if err := w.e.work(d.Len()); err != nil {
		return err
	}
	order := make([]int, d.Len())
	for i := range order {
		order[i] = i
	}
	if w.o.sortKeys {
		var cmpErr error
		sort.SliceStable(order, func(i, j int) bool {
			r, err := less(d.keys[order[i]], d.keys[order[j]])
			if err != nil && cmpErr == nil {
				cmpErr = err
			}
			return r
		})
		if cmpErr != nil {
			return cmpErr
		}
	}
	_ = w.b.WriteByte('{')
	for n, i := range order {
		if n > 0 {
			w.b.WriteString(w.o.itemSep)
		}
		w.newline(level + 1)
		switch k := d.keys[i].(type) {
		case string:
			w.str(k)
		case bool, nil, int64, float64:
			var ks string
			switch k := k.(type) {
			case bool:
				ks = "false"
				if k {
					ks = "true"
				}
			case nil:
				ks = "null"
			case int64:
				ks = strconv.FormatInt(k, 10)
			case float64:
				ks = jsonFloat(k)
			}
			w.str(ks)
		default:
			return fmt.Errorf("keys must be str, int, float, bool or None, not %s", typeName(k))
		}
		w.b.WriteString(w.o.keySep)
		if err := w.value(d.vals[i], level+1); err != nil {
			return err
		}
	}
	w.newline(level)
	_ = w.b.WriteByte('}')
	return nil
}

// str writes a JSON string as Python's json module does: control
// characters, '"' and '\' escaped, and with ensure_ascii everything outside
// printable ASCII as \uXXXX (surrogate pairs above U+FFFF).
func (w *jsonWriter) str(s string) {
	const hex = "0123456789abcdef"
	b := &w.b
	_ = b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < 0x7f || (c >= 0x80 && !w.o.ensureASCII) || (c == 0x7f && !w.o.ensureASCII) {
			i++
			continue
		}
		b.WriteString(s[start:i])
		if c < 0x80 {
			switch c {
			case '"':
				b.WriteString(`\"`)
			case '\\':
				b.WriteString(`\\`)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			case '\b':
				b.WriteString(`\b`)
			case '\f':
				b.WriteString(`\f`)
			default:
				b.WriteString(`\u00`)
				_ = b.WriteByte(hex[c>>4])
				_ = b.WriteByte(hex[c&15])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		u := func(x rune) {
			b.WriteString(`\u`)
			_ = b.WriteByte(hex[x>>12&15])
			_ = b.WriteByte(hex[x>>8&15])
			_ = b.WriteByte(hex[x>>4&15])
			_ = b.WriteByte(hex[x&15])
		}
		if r > 0xffff {
			r -= 0x10000
			u(0xd800 + (r >> 10))
			u(0xdc00 + (r & 0x3ff))
		} else {
			u(r)
		}
		i += n
		start = i
	}
	b.WriteString(s[start:])
	_ = b.WriteByte('"')
}
