package jinja

import "fmt"

// maxRange is jinja2's sandbox limit on range() (MAX_RANGE): a template
// that renders in transformers renders here, and a bigger range fails the
// same way.
const maxRange = 100000

// globals are the names every template sees besides its variables.
var globals map[string]Value

func init() {
	globals = map[string]Value{
		"range":     &builtinFunc{name: "range", fn: gRange},
		"namespace": &builtinFunc{name: "namespace", fn: gNamespace},
		"dict":      &builtinFunc{name: "dict", fn: gDict},
		"joiner":    &builtinFunc{name: "joiner", fn: gJoiner},
	}
}

func gRange(e *evaluator, a *args) (Value, error) {
	if err := noKwargs("range", a); err != nil {
		return nil, err
	}
	var n [3]int64
	for i, v := range a.pos {
		if i >= 3 {
			return nil, fmt.Errorf("range expected at most 3 arguments, got %d", len(a.pos))
		}
		x, err := argInt("range", "argument", v)
		if err != nil {
			return nil, err
		}
		n[i] = x
	}
	var r Range
	switch len(a.pos) {
	case 0:
		return nil, fmt.Errorf("range expected at least 1 argument, got 0")
	case 1:
		r = Range{0, n[0], 1}
	case 2:
		r = Range{n[0], n[1], 1}
	default:
		if n[2] == 0 {
			return nil, fmt.Errorf("range() arg 3 must not be zero")
		}
		r = Range{n[0], n[1], n[2]}
	}
	if r.Len() > maxRange {
		return nil, limitErr("range of %d items: the sandbox blocks ranges larger than %d (as jinja2's does)", r.Len(), maxRange)
	}
	return r, nil
}

// dictFrom fills d from dict()'s or namespace()'s arguments.
func (e *evaluator) dictFrom(fn string, d *Dict, a *args) error {
	if len(a.pos) > 1 {
		return fmt.Errorf("%s expected at most 1 positional argument, got %d", fn, len(a.pos))
	}
	if len(a.pos) == 1 {
		switch src := a.pos[0].(type) {
		case *Dict:
			for i, k := range src.keys {
				if err := d.Set(k, src.vals[i]); err != nil {
					return err
				}
			}
		default:
			items, err := e.iterate(src)
			if err != nil {
				return err
			}
			for _, it := range items {
				pair, err := e.unpack(it, 2)
				if err != nil {
					return fmt.Errorf("%s(): each element must be a key/value pair", fn)
				}
				if err := d.Set(pair[0], pair[1]); err != nil {
					return err
				}
			}
		}
	}
	if err := e.needList(2 * (d.Len() + len(a.kwNames))); err != nil {
		return err
	}
	for i, k := range a.kwNames {
		d.SetString(k, a.kwVals[i])
	}
	return nil
}

func gDict(e *evaluator, a *args) (Value, error) {
	d := NewDict()
	return d, e.dictFrom("dict", d, a)
}

func gNamespace(e *evaluator, a *args) (Value, error) {
	d := NewDict()
	return &Namespace{d: d}, e.dictFrom("namespace", d, a)
}

// gJoiner is jinja2's joiner(sep=", "): a callable that returns "" the first
// time and sep after.
func gJoiner(e *evaluator, a *args) (Value, error) {
	p, err := a.bind("joiner", 0, "sep")
	if err != nil {
		return nil, err
	}
	sep := or(p[0], ", ")
	used := false
	return &builtinFunc{name: "joiner", fn: func(e *evaluator, a *args) (Value, error) {
		if used {
			return sep, nil
		}
		used = true
		return "", nil
	}}, nil
}
