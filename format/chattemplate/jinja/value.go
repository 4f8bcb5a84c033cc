package jinja

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Value is a template value: nil (None), bool, int64, float64, string,
// List, Tuple, *Dict, Range, *Namespace, Undefined, or a callable (*Func,
// and the interpreter's own macros and methods).
type Value = any

// List is a Python list; templates cannot change it (the sandbox is
// immutable), so lists are shared freely.
type List []Value

// Tuple is a Python tuple.
type Tuple []Value

// Markup is a string marked safe (jinja2's Markup, from |safe or |escape):
// adding a plain string to it escapes that string, as in Python. Elsewhere
// it behaves as the string it holds.
type Markup string

// plain turns Markup into the string it holds.
func plain(v Value) Value {
	if m, ok := v.(Markup); ok {
		return string(m)
	}
	return v
}

// Range is a lazy Python range.
type Range struct{ Start, Stop, Step int64 }

// Len is the number of values in the range (computed without overflow,
// capped at MaxInt64).
func (r Range) Len() int64 {
	var span, step uint64
	switch {
	case r.Step > 0 && r.Start < r.Stop:
		span, step = uint64(r.Stop)-uint64(r.Start), uint64(r.Step)
	case r.Step < 0 && r.Start > r.Stop:
		span, step = uint64(r.Start)-uint64(r.Stop), -uint64(r.Step)
	default:
		return 0
	}
	n := (span-1)/step + 1
	if n > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(n)
}

// At is the i-th value (0 ≤ i < Len).
func (r Range) At(i int64) int64 { return r.Start + i*r.Step }

// Undefined is jinja2's default Undefined: it prints as "", is false, is an
// empty iterable and has length 0; reading an attribute of it, calling it
// or computing with it is an error.
type Undefined struct {
	name string // the variable or attribute that was missing, for errors
	hint string // the error to give when it is used, if not the default
}

func (u Undefined) errMsg() string {
	if u.hint != "" {
		return u.hint
	}
	if u.name == "" {
		return "value is undefined"
	}
	return fmt.Sprintf("'%s' is undefined", u.name)
}

// Namespace is jinja2's namespace(): the one mutable object templates have
// ({% set ns.attr = … %}).
type Namespace struct{ d *Dict }

// Func is a host function a template may call (raise_exception,
// strftime_now). Positional arguments come in args, keyword arguments in kw.
type Func struct {
	Name string
	Fn   func(args []Value, kw map[string]Value) (Value, error)
}

// Dict is a Python dict: insertion-ordered, keys of any hashable type.
type Dict struct {
	keys, vals []Value
	index      map[any]int // hash key → position; built once the dict grows
}

// NewDict returns an empty dict.
func NewDict() *Dict { return &Dict{} }

// Len is the number of keys.
func (d *Dict) Len() int { return len(d.keys) }

// Keys are the keys in insertion order.
func (d *Dict) Keys() []Value { return d.keys }

// Values are the values in insertion order.
func (d *Dict) Values() []Value { return d.vals }

const dictIndexAt = 8

type noneKey struct{}

type tupleKey string

// hashKey maps a hashable value to a comparable Go value such that keys
// Python treats as equal (1, 1.0, True) map to the same thing.
func hashKey(k Value) (any, bool) {
	switch v := plain(k).(type) {
	case string:
		return v, true
	case int64:
		return v, true
	case bool:
		if v {
			return int64(1), true
		}
		return int64(0), true
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<63 {
			return int64(v), true
		}
		return v, true
	case nil:
		return noneKey{}, true
	case Tuple:
		var b strings.Builder
		for _, it := range v {
			h, ok := hashKey(it)
			if !ok {
				return nil, false
			}
			fmt.Fprintf(&b, "%T:%v;", h, h)
		}
		return tupleKey(b.String()), true
	}
	return nil, false
}

func (d *Dict) find(k Value) (int, bool, error) {
	h, ok := hashKey(k)
	if !ok {
		return 0, false, fmt.Errorf("unhashable type: '%s'", typeName(k))
	}
	if d.index != nil {
		i, ok := d.index[h]
		return i, ok, nil
	}
	for i, k2 := range d.keys {
		if h2, _ := hashKey(k2); h2 == h {
			return i, true, nil
		}
	}
	return 0, false, nil
}

// Get looks a key up.
func (d *Dict) Get(k Value) (Value, bool) {
	i, ok, err := d.find(k)
	if err != nil || !ok {
		return nil, false
	}
	return d.vals[i], true
}

// Set adds or replaces a key (a replaced key keeps its position, as in
// Python).
func (d *Dict) Set(k, v Value) error {
	i, ok, err := d.find(k)
	if err != nil {
		return err
	}
	if ok {
		d.vals[i] = v
		return nil
	}
	d.keys = append(d.keys, k)
	d.vals = append(d.vals, v)
	if d.index != nil {
		h, _ := hashKey(k)
		d.index[h] = len(d.keys) - 1
	} else if len(d.keys) > dictIndexAt {
		d.index = make(map[any]int, len(d.keys))
		for j, k2 := range d.keys {
			h, _ := hashKey(k2)
			d.index[h] = j
		}
	}
	return nil
}

// SetString is Set for a string key, which cannot fail.
func (d *Dict) SetString(k string, v Value) { _ = d.Set(k, v) }

func (d *Dict) copyDict() *Dict {
	c := &Dict{keys: append([]Value(nil), d.keys...), vals: append([]Value(nil), d.vals...)}
	if d.index != nil {
		c.index = make(map[any]int, len(d.index))
		for k, v := range d.index {
			c.index[k] = v
		}
	}
	return c
}

// typeName is Python's type name of a value, for error messages.
func typeName(v Value) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case Markup:
		return "Markup"
	case List:
		return "list"
	case Tuple:
		return "tuple"
	case *Dict:
		return "dict"
	case Range:
		return "range"
	case *Namespace:
		return "Namespace"
	case Undefined:
		return "Undefined"
	case *macroVal:
		return "Macro"
	case *loopObj:
		return "LoopContext"
	case *Func, *builtinFunc, *boundMethod:
		return "builtin_function_or_method"
	}
	return fmt.Sprintf("%T", v)
}

func parseIntLiteral(s string) (int64, bool) {
	base := 10
	if len(s) > 2 && s[0] == '0' {
		switch s[1] | 0x20 {
		case 'x':
			base = 16
		case 'o':
			base = 8
		case 'b':
			base = 2
		}
		if base != 10 {
			s = s[2:]
		}
	}
	v, err := strconv.ParseInt(s, base, 64)
	return v, err == nil
}

func parseFloatLiteral(s string) (float64, error) {
	return strconv.ParseFloat(s, 64)
}
