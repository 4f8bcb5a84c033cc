package jinja

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Filters over sequences and mappings.

func fBatch(e *evaluator, v Value, a *args) (Value, error) {
	p, err := a.bind("batch", 1, "linecount", "fill_with")
	if err != nil {
		return nil, err
	}
	n, err := argInt("batch", "linecount", p[0])
	if err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("batch(): linecount must be at least 1")
	}
	if n > int64(e.lim.MaxListLen) {
		return nil, limitErr("batch(): linecount %d is over the %d-item limit", n, e.lim.MaxListLen)
	}
	items, err := e.iterate(v)
	if err != nil {
		return nil, err
	}
	if err := e.needList(2 * len(items)); err != nil {
		return nil, err
	}
	var out List
	for i := 0; i < len(items); i += int(n) {
		end := min(i+int(n), len(items))
		row := append(List{}, items[i:end]...)
		if fill := or(p[1], nil); fill != nil && len(row) < int(n) {
			for len(row) < int(n) {
				row = append(row, fill)
			}
		}
		out = append(out, row)
	}
	if out == nil {
		out = List{}
	}
	return out, nil
}

// lowerIfStr is jinja2's ignore_case.
func lowerIfStr(v Value) Value {
	if s, ok := v.(string); ok {
		return strings.ToLower(s)
	}
	return v
}

func fDictsort(e *evaluator, v Value, a *args) (Value, error) {
	p, err := a.bind("dictsort", 0, "case_sensitive", "by", "reverse")
	if err != nil {
		return nil, err
	}
	d, ok := v.(*Dict)
	if !ok {
		return nil, fmt.Errorf("dictsort(): expected a mapping, got %s", typeName(v))
	}
	pos := 0
	switch or(p[1], "key") {
	case "key":
	case "value":
		pos = 1
	default:
		return nil, fmt.Errorf("you can only sort by either 'key' or 'value'")
	}
	items, err := e.dictItems(d)
	if err != nil {
		return nil, err
	}
	cs := truthy(or(p[0], false))
	key := func(it Value) Value {
		k := it.(Tuple)[pos]
		if !cs {
			k = lowerIfStr(k)
		}
		return k
	}
	return e.sorted(items, key, truthy(or(p[2], false)))
}

// sorted is Python's sorted(items, key=key, reverse=reverse): stable, and
// an error when two keys do not compare.
func (e *evaluator) sorted(items []Value, key func(Value) Value, reverse bool) (List, error) {
	n := len(items)
	if err := e.needList(2 * n); err != nil {
		return nil, err
	}
	if n > 1 {
		if err := e.work(n * bitsLen(n) * 16); err != nil {
			return nil, err
		}
	}
	keys := make([]Value, n)
	for i, it := range items {
		keys[i] = key(it)
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	var cmpErr error
	sort.SliceStable(idx, func(i, j int) bool {
		a, b := keys[idx[i]], keys[idx[j]]
		if reverse {
			a, b = b, a
		}
		r, err := less(a, b)
		if err != nil && cmpErr == nil {
			cmpErr = err
		}
		return r
	})
	if cmpErr != nil {
		return nil, cmpErr
	}
	out := make(List, n)
	for i, k := range idx {
		out[i] = items[k]
	}
	return out, nil
}

func bitsLen(n int) int {
	b := 1
	for n > 1 {
		n >>= 1
		b++
	}
	return b
}

func fFirst(e *evaluator, v Value, a *args) (Value, error) {
	if _, err := a.bind("first", 0); err != nil {
		return nil, err
	}
	if r, ok := v.(Range); ok {
		if r.Len() == 0 {
			return Undefined{hint: "No first item, sequence was empty."}, nil
		}
		return r.Start, nil
	}
	items, err := e.iterate(v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return Undefined{hint: "No first item, sequence was empty."}, nil
	}
	return items[0], nil
}

func fLast(e *evaluator, v Value, a *args) (Value, error) {
	if _, err := a.bind("last", 0); err != nil {
		return nil, err
	}
	if r, ok := v.(Range); ok {
		if r.Len() == 0 {
			return Undefined{hint: "No last item, sequence was empty."}, nil
		}
		return r.At(r.Len() - 1), nil
	}
	if s, ok := v.(string); ok {
		if s == "" {
			return Undefined{hint: "No last item, sequence was empty."}, nil
		}
		_, n := utf8.DecodeLastRuneInString(s)
		return s[len(s)-n:], nil
	}
	items, err := e.iterate(v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return Undefined{hint: "No last item, sequence was empty."}, nil
	}
	return items[len(items)-1], nil
}

func fItems(e *evaluator, v Value, a *args) (Value, error) {
	if _, err := a.bind("items", 0); err != nil {
		return nil, err
	}
	switch d := v.(type) {
	case Undefined:
		return List{}, nil
	case *Dict:
		return e.dictItems(d)
	}
	return nil, fmt.Errorf("can only get item pairs from a mapping, not %s", typeName(v))
}

// attrPath is jinja2's make_attrgetter: "a.b.0" looks up a, then b, then 0.
func attrPath(attr Value) []Value {
	s, ok := attr.(string)
	if !ok {
		return []Value{attr}
	}
	var parts []Value
	for _, p := range strings.Split(s, ".") {
		if i, err := strconv.ParseInt(p, 10, 64); err == nil && p != "" && (p[0] >= '0' && p[0] <= '9') {
			parts = append(parts, i)
		} else {
			parts = append(parts, p)
		}
	}
	return parts
}

func (e *evaluator) getPath(item Value, path []Value, def Value) (Value, error) {
	var err error
	for _, p := range path {
		if item, err = e.getitem(item, p); err != nil {
			return nil, err
		}
		if _, ok := item.(Undefined); ok && def != nil {
			item = def
		}
	}
	return item, nil
}

func fJoin(e *evaluator, v Value, a *args) (Value, error) {
	p, err := a.bind("join", 0, "d", "attribute")
	if err != nil {
		return nil, err
	}
	sep, err := e.str(or(p[0], ""))
	if err != nil {
		return nil, err
	}
	items, err := e.iterate(v)
	if err != nil {
		return nil, err
	}
	var path []Value
	if attr := or(p[1], nil); attr != nil {
		path = attrPath(attr)
	}
	parts := make([]string, len(items))
	size := 0
	for i, it := range items {
		if path != nil {
			if it, err = e.getPath(it, path, nil); err != nil {
				return nil, err
			}
		}
		if parts[i], err = e.str(it); err != nil {
			return nil, err
		}
		size += len(parts[i]) + len(sep)
		if size > e.lim.MaxStringBytes {
			return nil, limitErr("join result is over the %d-byte limit", e.lim.MaxStringBytes)
		}
	}
	if err := e.needStr(size); err != nil {
		return nil, err
	}
	return strings.Join(parts, sep), nil
}

func fList(e *evaluator, v Value, a *args) (Value, error) {
	if _, err := a.bind("list", 0); err != nil {
		return nil, err
	}
	items, err := e.iterate(v)
	if err != nil {
		return nil, err
	}
	if err := e.needList(len(items)); err != nil {
		return nil, err
	}
	return append(List{}, items...), nil
}

func fMap(e *evaluator, v Value, a *args) (Value, error) {
	if !truthy(v) {
		return List{}, nil
	}
	items, err := e.iterate(v)
	if err != nil {
		return nil, err
	}
	if err := e.needList(len(items)); err != nil {
		return nil, err
	}
	out := make(List, 0, len(items))
	if len(a.pos) == 0 {
		var attr, def Value = missing, nil
		for i, k := range a.kwNames {
			switch k {
			case "attribute":
				attr = a.kwVals[i]
			case "default":
				def = a.kwVals[i]
			default:
				return nil, fmt.Errorf("map(): unexpected keyword argument '%s'", k)
			}
		}
		if isMissing(attr) {
			return nil, fmt.Errorf("map requires a filter argument")
		}
		path := attrPath(attr)
		for _, it := range items {
			r, err := e.getPath(it, path, def)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	}
	name, ok := a.pos[0].(string)
	if !ok {
		return nil, fmt.Errorf("map(): the filter name must be a string")
	}
	f, ok := filters[name]
	if !ok {
		return nil, fmt.Errorf("no filter named '%s'", name)
	}
	rest := &args{pos: a.pos[1:], kwNames: a.kwNames, kwVals: a.kwVals}
	for _, it := range items {
		if err := e.step(); err != nil {
			return nil, err
		}
		r, err := f(e, it, rest)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func fMinMax(isMax bool) filterFunc {
	return func(e *evaluator, v Value, a *args) (Value, error) {
		p, err := a.bind("min", 0, "case_sensitive", "attribute")
		if err != nil {
			return nil, err
		}
		items, err := e.iterate(v)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return Undefined{hint: "No aggregated item, sequence was empty."}, nil
		}
		var path []Value
		if attr := or(p[1], nil); attr != nil {
			path = attrPath(attr)
		}
		cs := truthy(or(p[0], false))
		key := func(it Value) (Value, error) {
			k, err := e.getPath(it, path, nil)
			if err != nil {
				return nil, err
			}
			if !cs {
				k = lowerIfStr(k)
			}
			return k, nil
		}
		best := items[0]
		bestKey, err := key(best)
		if err != nil {
			return nil, err
		}
		for _, it := range items[1:] {
			k, err := key(it)
			if err != nil {
				return nil, err
			}
			var better bool
			if isMax {
				better, err = less(bestKey, k)
			} else {
				better, err = less(k, bestKey)
			}
			if err != nil {
				return nil, err
			}
			if better {
				best, bestKey = it, k
			}
		}
		return best, nil
	}
}

// fSelect is select, reject, selectattr and rejectattr.
func fSelect(keep, byAttr bool) filterFunc {
	return func(e *evaluator, v Value, a *args) (Value, error) {
		if err := noKwargs("select", a); err != nil {
			return nil, err
		}
		pos := a.pos
		var path []Value
		if byAttr {
			if len(pos) == 0 {
				return nil, fmt.Errorf("missing parameter for attribute name")
			}
			path = attrPath(pos[0])
			pos = pos[1:]
		}
		var test testFunc
		var targs *args
		if len(pos) > 0 {
			name, ok := pos[0].(string)
			if !ok {
				return nil, fmt.Errorf("the test name must be a string")
			}
			if test, ok = tests[name]; !ok {
				return nil, fmt.Errorf("no test named '%s'", name)
			}
			targs = &args{pos: pos[1:]}
		}
		if !truthy(v) {
			return List{}, nil
		}
		items, err := e.iterate(v)
		if err != nil {
			return nil, err
		}
		out := List{}
		for _, it := range items {
			if err := e.step(); err != nil {
				return nil, err
			}
			x := it
			if byAttr {
				if x, err = e.getPath(it, path, nil); err != nil {
					return nil, err
				}
			}
			var ok bool
			if test == nil {
				ok = truthy(x)
			} else if ok, err = test(e, x, targs); err != nil {
				return nil, err
			}
			if ok == keep {
				out = append(out, it)
			}
		}
		return out, nil
	}
}

func fReverse(e *evaluator, v Value, a *args) (Value, error) {
	if _, err := a.bind("reverse", 0); err != nil {
		return nil, err
	}
	if s, ok := v.(string); ok {
		if err := e.needStr(len(s)); err != nil {
			return nil, err
		}
		r := []rune(s)
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return string(r), nil
	}
	items, err := e.iterate(v)
	if err != nil {
		return nil, err
	}
	if err := e.needList(len(items)); err != nil {
		return nil, err
	}
	out := make(List, len(items))
	for i, it := range items {
		out[len(items)-1-i] = it
	}
	return out, nil
}

func fSort(e *evaluator, v Value, a *args) (Value, error) {
	p, err := a.bind("sort", 0, "reverse", "case_sensitive", "attribute")
	if err != nil {
		return nil, err
	}
	items, err := e.iterate(v)
	if err != nil {
		return nil, err
	}
	var paths [][]Value
	if attr := or(p[2], nil); attr != nil {
		if s, ok := attr.(string); ok {
			for _, part := range strings.Split(s, ",") {
				paths = append(paths, attrPath(part))
			}
		} else {
			paths = [][]Value{attrPath(attr)}
		}
	}
	cs := truthy(or(p[1], false))
	var keyErr error
	key := func(it Value) Value {
		if paths == nil {
			if !cs {
				return lowerIfStr(it)
			}
			return it
		}
		ks := make(List, len(paths))
		for i, path := range paths {
			k, err := e.getPath(it, path, nil)
			if err != nil && keyErr == nil {
				keyErr = err
			}
			if !cs {
				k = lowerIfStr(k)
			}
			ks[i] = k
		}
		return ks
	}
	out, err := e.sorted(items, key, truthy(or(p[0], false)))
	if keyErr != nil {
		return nil, keyErr
	}
	return out, err
}

func fSum(e *evaluator, v Value, a *args) (Value, error) {
	p, err := a.bind("sum", 0, "attribute", "start")
	if err != nil {
		return nil, err
	}
	items, err := e.iterate(v)
	if err != nil {
		return nil, err
	}
	var path []Value
	if attr := or(p[0], nil); attr != nil {
		path = attrPath(attr)
	}
	total := or(p[1], int64(0))
	for _, it := range items {
		if path != nil {
			if it, err = e.getPath(it, path, nil); err != nil {
				return nil, err
			}
		}
		if total, err = e.binop("+", total, it); err != nil {
			return nil, err
		}
	}
	return total, nil
}

func fUnique(e *evaluator, v Value, a *args) (Value, error) {
	p, err := a.bind("unique", 0, "case_sensitive", "attribute")
	if err != nil {
		return nil, err
	}
	items, err := e.iterate(v)
	if err != nil {
		return nil, err
	}
	var path []Value
	if attr := or(p[1], nil); attr != nil {
		path = attrPath(attr)
	}
	cs := truthy(or(p[0], false))
	seen := NewDict()
	out := List{}
	for _, it := range items {
		k, err := e.getPath(it, path, nil)
		if err != nil {
			return nil, err
		}
		if !cs {
			k = lowerIfStr(k)
		}
		if _, ok := seen.Get(k); ok {
			continue
		}
		if err := seen.Set(k, true); err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}
