package jinja

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Filters over numbers, and Python's int(), float() and round().

func fAbs(e *evaluator, v Value, a *args) (Value, error) {
	i, f, isF, ok := number(v)
	if !ok {
		return nil, fmt.Errorf("bad operand type for abs(): '%s'", typeName(v))
	}
	if isF {
		return math.Abs(f), nil
	}
	if i < 0 {
		if i == math.MinInt64 {
			return nil, errIntTooLarge
		}
		return -i, nil
	}
	return i, nil
}

// pyFloat is Python's float(v).
func pyFloat(v Value) (float64, bool) {
	if i, f, isF, ok := number(v); ok {
		return asFloat(i, f, isF), true
	}
	s, ok := v.(string)
	if !ok {
		return 0, false
	}
	s = strings.ReplaceAll(trimPySpace(s), "_", "")
	switch strings.ToLower(strings.TrimLeft(s, "+-")) {
	case "inf", "infinity":
		if strings.HasPrefix(s, "-") {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case "nan":
		return math.NaN(), true
	}
	if s == "" || strings.ContainsAny(s, "xXpP") {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

func fFloat(e *evaluator, v Value, a *args) (Value, error) {
	p, err := a.bind("float", 0, "default")
	if err != nil {
		return nil, err
	}
	if f, ok := pyFloat(v); ok {
		return f, nil
	}
	return or(p[0], 0.0), nil
}

func fInt(e *evaluator, v Value, a *args) (Value, error) {
	p, err := a.bind("int", 0, "default", "base")
	if err != nil {
		return nil, err
	}
	def := or(p[0], int64(0))
	base, err := argInt("int", "base", or(p[1], int64(10)))
	if err != nil {
		return nil, err
	}
	if s, ok := v.(string); ok {
		t := strings.ReplaceAll(trimPySpace(s), "_", "")
		if base == 16 || base == 8 || base == 2 {
			t = strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(strings.ToLower(t), "0x"), "0o"), "0b")
		}
		if i, err := strconv.ParseInt(t, int(base), 64); err == nil {
			return i, nil
		}
	} else if i, _, isF, ok := number(v); ok && !isF {
		return i, nil
	}
	f, ok := pyFloat(v)
	if !ok || math.IsNaN(f) {
		return def, nil
	}
	if math.IsInf(f, 0) || math.Abs(f) >= 1<<63 {
		return nil, fmt.Errorf("cannot convert float infinity or a huge float to integer")
	}
	return int64(f), nil
}

func fRound(e *evaluator, v Value, a *args) (Value, error) {
	p, err := a.bind("round", 0, "precision", "method")
	if err != nil {
		return nil, err
	}
	prec, err := argInt("round", "precision", or(p[0], int64(0)))
	if err != nil {
		return nil, err
	}
	method := or(p[1], "common")
	i, f, isF, ok := number(v)
	if !ok {
		return nil, fmt.Errorf("round(): expected a number, got %s", typeName(v))
	}
	if prec > 300 || prec < -300 {
		return nil, fmt.Errorf("round(): precision out of range")
	}
	switch method {
	case "common":
		if !isF {
			return roundInt(i, prec), nil
		}
		return pyRound(f, int(prec)), nil
	case "ceil", "floor":
		x := asFloat(i, f, isF)
		scale := math.Pow(10, float64(prec))
		if method == "ceil" {
			return math.Ceil(x*scale) / scale, nil
		}
		return math.Floor(x*scale) / scale, nil
	}
	return nil, fmt.Errorf("method must be common, ceil or floor")
}

// pyRound is Python's round(x, n) for floats: exact decimal rounding of the
// binary value, ties to even.
func pyRound(x float64, n int) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	if n >= 0 {
		r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', n, 64), 64)
		return r
	}
	scale := math.Pow(10, float64(-n))
	y := x / scale
	r := math.RoundToEven(y)
	if math.Abs(y-math.Trunc(y)) != 0.5 {
		r = math.Round(y)
	}
	return r * scale
}

// roundInt is Python's round(int, n): ties to even.
func roundInt(i, n int64) int64 {
	if n >= 0 {
		return i
	}
	if n < -18 {
		return 0
	}
	p := int64(1)
	for k := int64(0); k < -n; k++ {
		p *= 10
	}
	q, r := i/p, i%p
	if r < 0 {
		q--
		r += p
	}
	switch {
	case 2*r > p, 2*r == p && q%2 != 0:
		q++
	}
	return q * p
}
