package jinja

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Attribute and item access with jinja2's sandboxed semantics: obj.name
// tries the attribute (a method) first and then the item, obj[key] the item
// first and then the attribute; nothing starting with "_" is reachable, and
// methods that would mutate a list or dict are refused, as in
// ImmutableSandboxedEnvironment.

type builtinFunc struct {
	name string
	fn   func(e *evaluator, a *args) (Value, error)
}

type boundMethod struct {
	name string
	recv Value
	fn   func(e *evaluator, recv Value, a *args) (Value, error)
}

type method func(e *evaluator, recv Value, a *args) (Value, error)

var unsafeMethods = map[string]map[string]bool{
	"list": {"append": true, "extend": true, "insert": true, "pop": true, "remove": true, "reverse": true, "sort": true, "clear": true},
	"dict": {"pop": true, "popitem": true, "setdefault": true, "update": true, "clear": true},
}

func unsafeAttr(typ, name string) Value {
	return Undefined{name: name, hint: fmt.Sprintf("access to attribute '%s' of '%s' object is unsafe: the sandbox does not let templates change their data", name, typ)}
}

func noAttr(obj Value, name string) Value {
	return Undefined{name: name, hint: fmt.Sprintf("'%s object' has no attribute '%s'", typeName(obj), name)}
}

func (e *evaluator) getattr(obj Value, name string) (Value, error) {
	if u, ok := obj.(Undefined); ok {
		return nil, fmt.Errorf("%s", u.errMsg())
	}
	if strings.HasPrefix(name, "_") {
		return Undefined{name: name, hint: fmt.Sprintf("access to attribute '%s' of '%s' object is unsafe", name, typeName(obj))}, nil
	}
	var m method
	switch x := obj.(type) {
	case string:
		m = strMethods[name]
	case *Dict:
		if unsafeMethods["dict"][name] {
			return unsafeAttr("dict", name), nil
		}
		if m = dictMethods[name]; m == nil {
			if v, ok := x.Get(name); ok {
				return v, nil
			}
		}
	case List:
		if unsafeMethods["list"][name] {
			return unsafeAttr("list", name), nil
		}
		m = seqMethods[name]
	case Tuple:
		m = seqMethods[name]
	case Range:
		switch name {
		case "start":
			return x.Start, nil
		case "stop":
			return x.Stop, nil
		case "step":
			return x.Step, nil
		}
		m = seqMethods[name]
	case *Namespace:
		if v, ok := x.d.Get(name); ok {
			return v, nil
		}
	case *loopObj:
		return e.loopAttr(x, name), nil
	}
	if m != nil {
		return &boundMethod{name: name, recv: obj, fn: m}, nil
	}
	return noAttr(obj, name), nil
}

func (e *evaluator) getitem(obj Value, key Value) (Value, error) {
	if u, ok := obj.(Undefined); ok {
		return nil, fmt.Errorf("%s", u.errMsg())
	}
	switch x := obj.(type) {
	case *Dict:
		if v, ok := x.Get(key); ok {
			return v, nil
		}
	case List:
		if v, ok := index(x, key); ok {
			return v, nil
		}
	case Tuple:
		if v, ok := index(x, key); ok {
			return v, nil
		}
	case string:
		if i, _, isF, ok := number(key); ok && !isF {
			n := utf8.RuneCountInString(x)
			if i < 0 {
				i += int64(n)
			}
			if i >= 0 && i < int64(n) {
				if err := e.work(len(x)); err != nil {
					return nil, err
				}
				return runeAt(x, int(i)), nil
			}
		}
	case Range:
		if i, _, isF, ok := number(key); ok && !isF {
			n := x.Len()
			if i < 0 {
				i += n
			}
			if i >= 0 && i < n {
				return x.At(i), nil
			}
		}
	}
	if name, ok := key.(string); ok {
		return e.getattr(obj, name)
	}
	return Undefined{hint: fmt.Sprintf("'%s object' has no element %s", typeName(obj), shortRepr(key))}, nil
}

// shortRepr is a repr for error messages, cut short so that errors never
// carry much of the data.
func shortRepr(v Value) string {
	b := &limBuf{max: 40}
	writeRepr(b, v, 0)
	if b.over {
		return b.String() + "…"
	}
	return b.String()
}

func index(seq []Value, key Value) (Value, bool) {
	i, _, isF, ok := number(key)
	if !ok || isF {
		return nil, false
	}
	if i < 0 {
		i += int64(len(seq))
	}
	if i < 0 || i >= int64(len(seq)) {
		return nil, false
	}
	return seq[i], true
}

func runeAt(s string, i int) string {
	for k := 0; k < len(s); {
		_, n := utf8.DecodeRuneInString(s[k:])
		if i == 0 {
			return s[k : k+n]
		}
		i--
		k += n
	}
	return ""
}

// sliceBounds is CPython's PySlice_AdjustIndices.
func sliceBounds(n int64, start, stop, step Value) (lo, hi, st int64, count int64, err error) {
	get := func(v Value, def int64) (int64, error) {
		if v == nil {
			return def, nil
		}
		i, _, isF, ok := number(v)
		if !ok || isF {
			return 0, fmt.Errorf("slice indices must be integers or None")
		}
		return i, nil
	}
	if st, err = get(step, 1); err != nil {
		return
	}
	if st == 0 {
		err = fmt.Errorf("slice step cannot be zero")
		return
	}
	if st < -math.MaxInt64 {
		st = -math.MaxInt64 // as CPython clamps it
	}
	defLo, defHi := int64(0), n
	if st < 0 {
		defLo, defHi = n-1, -n-1
	}
	if lo, err = get(start, defLo); err != nil {
		return
	}
	if hi, err = get(stop, defHi); err != nil {
		return
	}
	adjust := func(i int64) int64 {
		if i < 0 {
			i += n
			if i < 0 {
				if st < 0 {
					return -1
				}
				return 0
			}
		} else if i >= n {
			if st < 0 {
				return n - 1
			}
			return n
		}
		return i
	}
	lo, hi = adjust(lo), adjust(hi)
	switch {
	case st > 0 && lo < hi:
		count = (hi-lo-1)/st + 1
	case st < 0 && hi < lo:
		count = (lo-hi-1)/-st + 1
	}
	return
}

func (e *evaluator) slice(obj, start, stop, step Value) (Value, error) {
	switch x := obj.(type) {
	case List:
		out, err := e.sliceSeq(x, start, stop, step)
		return List(out), err
	case Tuple:
		out, err := e.sliceSeq(x, start, stop, step)
		return Tuple(out), err
	case string:
		runes := []rune(x)
		if err := e.charge(4 * len(runes)); err != nil {
			return nil, err
		}
		lo, _, st, count, err := sliceBounds(int64(len(runes)), start, stop, step)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		for i := int64(0); i < count; i++ {
			b.WriteRune(runes[lo+i*st])
		}
		return b.String(), e.charge(b.Len())
	case Range:
		lo, _, st, count, err := sliceBounds(x.Len(), start, stop, step)
		if err != nil {
			return nil, err
		}
		s := x.At(lo)
		return Range{Start: s, Stop: s + count*st*x.Step, Step: st * x.Step}, nil
	case Undefined:
		return nil, fmt.Errorf("%s", x.errMsg())
	}
	return nil, fmt.Errorf("'%s' object is not subscriptable", typeName(obj))
}

func (e *evaluator) sliceSeq(x []Value, start, stop, step Value) ([]Value, error) {
	lo, _, st, count, err := sliceBounds(int64(len(x)), start, stop, step)
	if err != nil {
		return nil, err
	}
	if err := e.needList(int(count)); err != nil {
		return nil, err
	}
	out := make([]Value, count)
	for i := range out {
		out[i] = x[lo+int64(i)*st]
	}
	return out, nil
}

func (e *evaluator) loopAttr(l *loopObj, name string) Value {
	switch name {
	case "index":
		return int64(l.index0 + 1)
	case "index0":
		return int64(l.index0)
	case "revindex":
		return int64(l.length - l.index0)
	case "revindex0":
		return int64(l.length - l.index0 - 1)
	case "first":
		return l.index0 == 0
	case "last":
		return l.index0 == l.length-1
	case "length":
		return int64(l.length)
	case "depth":
		return int64(1)
	case "depth0":
		return int64(0)
	case "previtem":
		if l.index0 == 0 {
			return Undefined{name: "previtem", hint: "there is no previous item"}
		}
		return l.item(l.index0 - 1)
	case "nextitem":
		if l.index0 >= l.length-1 {
			return Undefined{name: "nextitem", hint: "there is no next item"}
		}
		return l.item(l.index0 + 1)
	case "cycle":
		return &boundMethod{name: "cycle", recv: l, fn: func(e *evaluator, recv Value, a *args) (Value, error) {
			if len(a.pos) == 0 {
				return nil, fmt.Errorf("no items for cycling given")
			}
			return a.pos[recv.(*loopObj).index0%len(a.pos)], nil
		}}
	case "changed":
		return &boundMethod{name: "changed", recv: l, fn: func(e *evaluator, recv Value, a *args) (Value, error) {
			lp := recv.(*loopObj)
			v := Tuple(append([]Value(nil), a.pos...))
			if lp.changedSet && equal(lp.lastChanged, v) {
				return false, nil
			}
			lp.lastChanged, lp.changedSet = v, true
			return true, nil
		}}
	}
	return noAttr(l, name)
}
