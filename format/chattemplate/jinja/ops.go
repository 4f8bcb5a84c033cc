package jinja

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Python semantics of truth, equality, ordering, membership and iteration.

func truthy(v Value) bool {
	switch x := plain(v).(type) {
	case nil:
		return false
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case List:
		return len(x) > 0
	case Tuple:
		return len(x) > 0
	case *Dict:
		return x.Len() > 0
	case Range:
		return x.Len() > 0
	case Undefined:
		return false
	}
	return true
}

// number reports v as an int (bool counts as one, as in Python) or a float.
func number(v Value) (i int64, f float64, isFloat, ok bool) {
	switch x := v.(type) {
	case int64:
		return x, 0, false, true
	case bool:
		if x {
			return 1, 0, false, true
		}
		return 0, 0, false, true
	case float64:
		return 0, x, true, true
	}
	return 0, 0, false, false
}

func asFloat(i int64, f float64, isFloat bool) float64 {
	if isFloat {
		return f
	}
	return float64(i)
}

func equal(a, b Value) bool {
	a, b = plain(a), plain(b)
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool, int64, float64:
		ai, af, aIsF, _ := number(x)
		bi, bf, bIsF, ok := number(b)
		if !ok {
			return false
		}
		if !aIsF && !bIsF {
			return ai == bi
		}
		return asFloat(ai, af, aIsF) == asFloat(bi, bf, bIsF)
	case string:
		y, ok := b.(string)
		return ok && x == y
	case List:
		y, ok := b.(List)
		return ok && equalSeq(x, y)
	case Tuple:
		y, ok := b.(Tuple)
		return ok && equalSeq(x, y)
	case *Dict:
		y, ok := b.(*Dict)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for i, k := range x.keys {
			v, ok := y.Get(k)
			if !ok || !equal(x.vals[i], v) {
				return false
			}
		}
		return true
	case Range:
		y, ok := b.(Range)
		if !ok || x.Len() != y.Len() {
			return false
		}
		return x.Len() == 0 || (x.Start == y.Start && (x.Len() == 1 || x.Step == y.Step))
	case Undefined:
		_, ok := b.(Undefined)
		return ok
	case *Namespace, *macroVal, *loopObj, *Func, *builtinFunc, *boundMethod:
		return a == b
	}
	return false
}

func equalSeq(x, y []Value) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if !equal(x[i], y[i]) {
			return false
		}
	}
	return true
}

func errOrder(op string, a, b Value) error {
	return fmt.Errorf("'%s' not supported between instances of '%s' and '%s'", op, typeName(a), typeName(b))
}

// less is Python's a < b.
func less(a, b Value) (bool, error) {
	a, b = plain(a), plain(b)
	ai, af, aIsF, aok := number(a)
	bi, bf, bIsF, bok := number(b)
	if aok && bok {
		if !aIsF && !bIsF {
			return ai < bi, nil
		}
		return asFloat(ai, af, aIsF) < asFloat(bi, bf, bIsF), nil
	}
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return x < y, nil
		}
	case List:
		if y, ok := b.(List); ok {
			return lessSeq(x, y)
		}
	case Tuple:
		if y, ok := b.(Tuple); ok {
			return lessSeq(x, y)
		}
	}
	return false, errOrder("<", a, b)
}

func lessSeq(x, y []Value) (bool, error) {
	for i := 0; i < len(x) && i < len(y); i++ {
		if !equal(x[i], y[i]) {
			return less(x[i], y[i])
		}
	}
	return len(x) < len(y), nil
}

func (e *evaluator) compareOp(op string, a, b Value) (bool, error) {
	if err := e.sizeWork(a); err != nil {
		return false, err
	}
	switch op {
	case "==":
		return equal(a, b), nil
	case "!=":
		return !equal(a, b), nil
	case "<":
		return less(a, b)
	case ">":
		r, err := less(b, a)
		if err != nil {
			return false, errOrder(">", a, b)
		}
		return r, nil
	case "<=":
		r, err := less(b, a)
		if err != nil {
			return false, errOrder("<=", a, b)
		}
		return !r, nil
	case ">=":
		r, err := less(a, b)
		if err != nil {
			return false, errOrder(">=", a, b)
		}
		return !r, nil
	case "in":
		return e.contains(b, a)
	case "notin":
		r, err := e.contains(b, a)
		return !r, err
	}
	return false, fmt.Errorf("internal error: unknown comparison %s", op)
}

// contains is Python's item in container.
func (e *evaluator) contains(container, item Value) (bool, error) {
	container, item = plain(container), plain(item)
	switch c := container.(type) {
	case string:
		s, ok := item.(string)
		if !ok {
			return false, fmt.Errorf("'in <string>' requires string as left operand, not %s", typeName(item))
		}
		if err := e.work(len(c)); err != nil {
			return false, err
		}
		return strings.Contains(c, s), nil
	case List:
		return e.containsSeq(c, item)
	case Tuple:
		return e.containsSeq(c, item)
	case *Dict:
		if _, ok := hashKey(item); !ok {
			return false, fmt.Errorf("unhashable type: '%s'", typeName(item))
		}
		_, ok := c.Get(item)
		return ok, nil
	case Range:
		i, _, isF, ok := number(item)
		if !ok || isF {
			return false, nil
		}
		if c.Step > 0 && (i < c.Start || i >= c.Stop) || c.Step < 0 && (i > c.Start || i <= c.Stop) {
			return false, nil
		}
		return (i-c.Start)%c.Step == 0, nil
	case Undefined:
		return false, nil
	}
	return false, fmt.Errorf("argument of type '%s' is not iterable", typeName(container))
}

func (e *evaluator) containsSeq(c []Value, item Value) (bool, error) {
	if err := e.work(len(c)); err != nil {
		return false, err
	}
	for _, v := range c {
		if equal(v, item) {
			return true, nil
		}
	}
	return false, nil
}

// iterate lists the items Python's iter(v) yields.
func (e *evaluator) iterate(v Value) ([]Value, error) {
	switch x := plain(v).(type) {
	case List:
		return x, nil
	case Tuple:
		return x, nil
	case *Dict:
		return x.keys, nil
	case string:
		n := utf8.RuneCountInString(x)
		if err := e.needList(n); err != nil {
			return nil, err
		}
		out := make([]Value, 0, n)
		for i := 0; i < len(x); {
			_, n := utf8.DecodeRuneInString(x[i:])
			out = append(out, x[i:i+n])
			i += n
		}
		return out, nil
	case Range:
		n := x.Len()
		if n > int64(e.lim.MaxListLen) {
			return nil, limitErr("range of %d items is over the %d-item limit", n, e.lim.MaxListLen)
		}
		if err := e.needList(int(n)); err != nil {
			return nil, err
		}
		out := make([]Value, n)
		for i := range out {
			out[i] = x.At(int64(i))
		}
		return out, nil
	case Undefined:
		return nil, nil
	}
	return nil, fmt.Errorf("'%s' object is not iterable", typeName(v))
}

// length is Python's len(v).
func length(v Value) (int, error) {
	switch x := plain(v).(type) {
	case string:
		return utf8.RuneCountInString(x), nil
	case List:
		return len(x), nil
	case Tuple:
		return len(x), nil
	case *Dict:
		return x.Len(), nil
	case Range:
		return int(x.Len()), nil
	case Undefined:
		return 0, nil
	}
	return 0, fmt.Errorf("object of type '%s' has no len()", typeName(v))
}
