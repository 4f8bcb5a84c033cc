package jinja

import (
	"fmt"
	"unicode"
)

// The tests of "x is name" (jinja2/tests.py).

type testFunc func(e *evaluator, v Value, a *args) (bool, error)

var tests map[string]testFunc

func init() {
	cmp := func(op string) testFunc {
		return func(e *evaluator, v Value, a *args) (bool, error) {
			p, err := a.bind(op, 1, "other")
			if err != nil {
				return false, err
			}
			return e.compareOp(op, v, p[0])
		}
	}
	kind := func(f func(Value) bool) testFunc {
		return func(e *evaluator, v Value, a *args) (bool, error) {
			if _, err := a.bind("test", 0); err != nil {
				return false, err
			}
			return f(v), nil
		}
	}
	tests = map[string]testFunc{
		"defined":   kind(func(v Value) bool { _, u := v.(Undefined); return !u }),
		"undefined": kind(func(v Value) bool { _, u := v.(Undefined); return u }),
		"none":      kind(func(v Value) bool { return v == nil }),
		"boolean":   kind(func(v Value) bool { _, ok := v.(bool); return ok }),
		"true":      kind(func(v Value) bool { b, ok := v.(bool); return ok && b }),
		"false":     kind(func(v Value) bool { b, ok := v.(bool); return ok && !b }),
		"integer":   kind(func(v Value) bool { _, ok := v.(int64); return ok }),
		"float":     kind(func(v Value) bool { _, ok := v.(float64); return ok }),
		"number":    kind(func(v Value) bool { _, _, _, ok := number(v); return ok }),
		"string":    kind(func(v Value) bool { _, ok := v.(string); return ok }),
		"mapping":   kind(func(v Value) bool { _, ok := v.(*Dict); return ok }),
		"sequence": kind(func(v Value) bool {
			switch v.(type) {
			case string, List, Tuple, *Dict, Range, Undefined:
				return true
			}
			return false
		}),
		"iterable": kind(func(v Value) bool {
			switch v.(type) {
			case string, List, Tuple, *Dict, Range, Undefined:
				return true
			}
			return false
		}),
		"callable": kind(func(v Value) bool {
			switch v.(type) {
			case *macroVal, *Func, *builtinFunc, *boundMethod:
				return true
			}
			return false
		}),
		"escaped": kind(func(v Value) bool { return false }),
		"lower": kind(func(v Value) bool {
			s, _ := v.(string)
			return isCased(s, unicode.IsLower, unicode.IsUpper)
		}),
		"upper": kind(func(v Value) bool {
			s, _ := v.(string)
			return isCased(s, unicode.IsUpper, unicode.IsLower)
		}),
		"odd":  parity(1),
		"even": parity(0),
		"divisibleby": func(e *evaluator, v Value, a *args) (bool, error) {
			p, err := a.bind("divisibleby", 1, "num")
			if err != nil {
				return false, err
			}
			r, err := e.binop("%", v, p[0])
			if err != nil {
				return false, err
			}
			return equal(r, int64(0)), nil
		},
		"sameas": func(e *evaluator, v Value, a *args) (bool, error) {
			p, err := a.bind("sameas", 1, "other")
			if err != nil {
				return false, err
			}
			switch v.(type) {
			case nil, bool, int64, float64, string:
				return typeName(v) == typeName(p[0]) && equal(v, p[0]), nil
			case *Dict, *Namespace, *macroVal, *Func:
				return v == p[0], nil
			}
			return false, nil
		},
		"filter": kind(func(v Value) bool { s, ok := v.(string); _, f := filters[s]; return ok && f }),
		"test":   kind(func(v Value) bool { s, ok := v.(string); _, t := tests[s]; return ok && t }),
		"in": func(e *evaluator, v Value, a *args) (bool, error) {
			p, err := a.bind("in", 1, "seq")
			if err != nil {
				return false, err
			}
			return e.contains(p[0], v)
		},
		"==": cmp("=="), "eq": cmp("=="), "equalto": cmp("=="),
		"!=": cmp("!="), "ne": cmp("!="),
		"<": cmp("<"), "lt": cmp("<"), "lessthan": cmp("<"),
		"<=": cmp("<="), "le": cmp("<="),
		">": cmp(">"), "gt": cmp(">"), "greaterthan": cmp(">"),
		">=": cmp(">="), "ge": cmp(">="),
	}
}

func isCased(s string, want, other func(rune) bool) bool {
	found := false
	for _, r := range s {
		if other(r) || unicode.IsTitle(r) {
			return false
		}
		if want(r) {
			found = true
		}
	}
	return found
}

func parity(rem int64) testFunc {
	return func(e *evaluator, v Value, a *args) (bool, error) {
		r, err := e.binop("%", v, int64(2))
		if err != nil {
			return false, fmt.Errorf("odd/even test: %w", err)
		}
		return equal(r, rem), nil
	}
}
