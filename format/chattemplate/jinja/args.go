package jinja

import "fmt"

// missingT marks a parameter the call did not pass.
type missingT struct{}

var missing Value = missingT{}

func isMissing(v Value) bool { _, ok := v.(missingT); return ok }

// or returns v, or def when v was not passed.
func or(v, def Value) Value {
	if isMissing(v) {
		return def
	}
	return v
}

// bind matches a call's arguments to named parameters the way Python does;
// the first required ones must be passed.
func (a *args) bind(fn string, required int, names ...string) ([]Value, error) {
	if len(a.pos) > len(names) {
		return nil, fmt.Errorf("%s() takes at most %d argument(s) (%d given)", fn, len(names), len(a.pos))
	}
	out := make([]Value, len(names))
	for i := range out {
		out[i] = missing
	}
	copy(out, a.pos)
	for j, k := range a.kwNames {
		idx := -1
		for i, n := range names {
			if n == k {
				idx = i
				break
			}
		}
		if idx < 0 {
			return nil, fmt.Errorf("%s() got an unexpected keyword argument '%s'", fn, k)
		}
		if !isMissing(out[idx]) {
			return nil, fmt.Errorf("%s() got multiple values for argument '%s'", fn, k)
		}
		out[idx] = a.kwVals[j]
	}
	for i := 0; i < required; i++ {
		if isMissing(out[i]) {
			return nil, fmt.Errorf("%s() missing required argument '%s'", fn, names[i])
		}
	}
	return out, nil
}

func noKwargs(fn string, a *args) error {
	if len(a.kwNames) > 0 {
		return fmt.Errorf("%s() takes no keyword arguments", fn)
	}
	return nil
}

func argInt(fn, name string, v Value) (int64, error) {
	i, _, isF, ok := number(v)
	if !ok || isF {
		return 0, fmt.Errorf("%s(): '%s' must be an integer, not %s", fn, name, typeName(v))
	}
	return i, nil
}

func argStr(fn, name string, v Value) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s(): '%s' must be a string, not %s", fn, name, typeName(v))
	}
	return s, nil
}
