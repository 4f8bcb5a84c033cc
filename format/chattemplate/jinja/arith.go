package jinja

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
)

// Arithmetic with Python semantics: ints are 64-bit here and overflow is an
// error (Python would make a big integer no chat template needs); every
// operation that makes a string or list checks its size first.

func unary(op string, v Value) (Value, error) {
	v = plain(v)
	i, f, isF, ok := number(v)
	if !ok {
		return nil, fmt.Errorf("bad operand type for unary %s: '%s'", op, typeName(v))
	}
	if op == "+" {
		if isF {
			return f, nil
		}
		return i, nil
	}
	if isF {
		return -f, nil
	}
	if i == math.MinInt64 {
		return nil, errIntTooLarge
	}
	return -i, nil
}

var errIntTooLarge = &kindErr{msg: "integer result too large for a chat template (over 64 bits)", kind: ErrLimit}

func errOperands(op string, a, b Value) error {
	return fmt.Errorf("unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(a), typeName(b))
}

func (e *evaluator) binop(op string, a, b Value) (Value, error) {
	if u, ok := a.(Undefined); ok && op != "~" {
		return nil, fmt.Errorf("%s", u.errMsg())
	}
	if u, ok := b.(Undefined); ok && op != "~" {
		return nil, fmt.Errorf("%s", u.errMsg())
	}
	if r, ok, err := e.markupOp(op, a, b); ok {
		return r, err
	}
	a, b = plain(a), plain(b)
	if op == "~" {
		x, err := e.str(a)
		if err != nil {
			return nil, err
		}
		y, err := e.str(b)
		if err != nil {
			return nil, err
		}
		if err := e.needStr(len(x) + len(y)); err != nil {
			return nil, err
		}
		return x + y, nil
	}
	ai, af, aIsF, aok := number(a)
	bi, bf, bIsF, bok := number(b)
	if aok && bok {
		if aIsF || bIsF || op == "/" {
			return floatOp(op, asFloat(ai, af, aIsF), asFloat(bi, bf, bIsF))
		}
		return intOp(op, ai, bi)
	}
	switch op {
	case "+":
		switch x := a.(type) {
		case string:
			y, ok := b.(string)
			if !ok {
				return nil, fmt.Errorf("can only concatenate str (not \"%s\") to str", typeName(b))
			}
			if err := e.needStr(len(x) + len(y)); err != nil {
				return nil, err
			}
			return x + y, nil
		case List:
			y, ok := b.(List)
			if !ok {
				return nil, fmt.Errorf("can only concatenate list (not \"%s\") to list", typeName(b))
			}
			if err := e.needList(len(x) + len(y)); err != nil {
				return nil, err
			}
			return append(append(make(List, 0, len(x)+len(y)), x...), y...), nil
		case Tuple:
			y, ok := b.(Tuple)
			if !ok {
				return nil, fmt.Errorf("can only concatenate tuple (not \"%s\") to tuple", typeName(b))
			}
			if err := e.needList(len(x) + len(y)); err != nil {
				return nil, err
			}
			return append(append(make(Tuple, 0, len(x)+len(y)), x...), y...), nil
		}
	case "*":
		if bok && !bIsF {
			return e.repeat(a, bi)
		}
		if aok && !aIsF {
			return e.repeat(b, ai)
		}
	case "%":
		if s, ok := a.(string); ok {
			return e.percentFormat(s, b)
		}
	}
	return nil, errOperands(op, a, b)
}

// markupOp is Markup's +, % and *: the plain strings it meets are
// HTML-escaped and the result stays Markup (markupsafe's semantics).
func (e *evaluator) markupOp(op string, a, b Value) (Value, bool, error) {
	ma, aIs := a.(Markup)
	mb, bIs := b.(Markup)
	if !aIs && !bIs {
		return nil, false, nil
	}
	switch op {
	case "+":
		x, xok := markupText(a)
		y, yok := markupText(b)
		if !xok || !yok {
			return nil, false, nil
		}
		if err := e.needStr(len(x) + len(y)); err != nil {
			return nil, true, err
		}
		return Markup(x + y), true, nil
	case "%":
		if !aIs {
			return nil, false, nil
		}
		escaped := b
		switch x := b.(type) {
		case string:
			escaped = htmlEscaper.Replace(x)
		case Tuple:
			t := make(Tuple, len(x))
			for i, it := range x {
				if s, ok := it.(string); ok {
					it = htmlEscaper.Replace(s)
				}
				t[i] = it
			}
			escaped = t
		}
		r, err := e.percentFormat(string(ma), plain(escaped))
		if err != nil {
			return nil, true, err
		}
		return Markup(r.(string)), true, nil
	case "*":
		var r Value
		var err error
		if aIs {
			r, err = e.binop("*", string(ma), b)
		} else {
			r, err = e.binop("*", a, string(mb))
		}
		if s, ok := r.(string); ok {
			return Markup(s), true, err
		}
		return r, true, err
	}
	return nil, false, nil
}

// markupText is an operand of Markup +: Markup as is, a string escaped.
func markupText(v Value) (string, bool) {
	switch x := v.(type) {
	case Markup:
		return string(x), true
	case string:
		return htmlEscaper.Replace(x), true
	}
	return "", false
}

// repeat is seq * n, checked before allocating.
func (e *evaluator) repeat(seq Value, n int64) (Value, error) {
	if n < 0 {
		n = 0
	}
	switch x := seq.(type) {
	case string:
		if len(x) > 0 && n > int64(e.lim.MaxStringBytes/len(x)) {
			return nil, limitErr("string repetition of %d × %d bytes is over the %d-byte limit", n, len(x), e.lim.MaxStringBytes)
		}
		if err := e.needStr(len(x) * int(n)); err != nil {
			return nil, err
		}
		return strings.Repeat(x, int(n)), nil
	case List:
		return e.repeatItems(x, n, false)
	case Tuple:
		return e.repeatItems(x, n, true)
	}
	return nil, errOperands("*", seq, n)
}

func (e *evaluator) repeatItems(src []Value, n int64, tuple bool) (Value, error) {
	if len(src) == 0 || n <= 0 {
		src, n = nil, 0 // [] * 10**9 is [] at once
	}
	if len(src) > 0 && n > int64(e.lim.MaxListLen/len(src)) {
		return nil, limitErr("list repetition of %d × %d items is over the %d-item limit", n, len(src), e.lim.MaxListLen)
	}
	if err := e.needList(len(src) * int(n)); err != nil {
		return nil, err
	}
	out := make([]Value, 0, len(src)*int(n))
	for i := int64(0); i < n; i++ {
		out = append(out, src...)
	}
	if tuple {
		return Tuple(out), nil
	}
	return List(out), nil
}

func intOp(op string, a, b int64) (Value, error) {
	switch op {
	case "+":
		r := a + b
		if (a >= 0) == (b >= 0) && (r >= 0) != (a >= 0) {
			return nil, errIntTooLarge
		}
		return r, nil
	case "-":
		r := a - b
		if (a >= 0) != (b >= 0) && (r >= 0) != (a >= 0) {
			return nil, errIntTooLarge
		}
		return r, nil
	case "*":
		return mulInt(a, b)
	case "//", "%":
		if b == 0 {
			return nil, fmt.Errorf("integer division or modulo by zero")
		}
		if a == math.MinInt64 && b == -1 {
			return nil, errIntTooLarge
		}
		q, r := a/b, a%b
		if r != 0 && (r < 0) != (b < 0) {
			q--
			r += b
		}
		if op == "//" {
			return q, nil
		}
		return r, nil
	case "**":
		if b < 0 {
			if a == 0 {
				return nil, fmt.Errorf("0.0 cannot be raised to a negative power")
			}
			return math.Pow(float64(a), float64(b)), nil
		}
		result := int64(1)
		base := a
		for b > 0 {
			var err error
			if b&1 == 1 {
				if result, err = mulInt64(result, base); err != nil {
					return nil, err
				}
			}
			b >>= 1
			if b > 0 {
				if base, err = mulInt64(base, base); err != nil {
					return nil, err
				}
			}
		}
		return result, nil
	}
	return nil, fmt.Errorf("internal error: unknown operator %s", op)
}

func mulInt(a, b int64) (Value, error) {
	r, err := mulInt64(a, b)
	if err != nil {
		return nil, err
	}
	return r, nil
}

func mulInt64(a, b int64) (int64, error) {
	neg := (a < 0) != (b < 0)
	ua, ub := uint64(a), uint64(b)
	if a < 0 {
		ua = uint64(-a)
	}
	if b < 0 {
		ub = uint64(-b)
	}
	hi, lo := bits.Mul64(ua, ub)
	if hi != 0 || lo > math.MaxInt64+1 || (!neg && lo > math.MaxInt64) {
		return 0, errIntTooLarge
	}
	if neg {
		return -int64(lo), nil
	}
	return int64(lo), nil
}

func floatOp(op string, a, b float64) (Value, error) {
	switch op {
	case "+":
		return a + b, nil
	case "-":
		return a - b, nil
	case "*":
		return a * b, nil
	case "/":
		if b == 0 {
			return nil, fmt.Errorf("division by zero")
		}
		return a / b, nil
	case "//", "%":
		if b == 0 {
			return nil, fmt.Errorf("float modulo or floor division by zero")
		}
		// CPython's float divmod.
		mod := math.Mod(a, b)
		div := (a - mod) / b
		if mod != 0 {
			if (b < 0) != (mod < 0) {
				mod += b
				div -= 1
			}
		} else {
			mod = math.Copysign(0, b)
		}
		if op == "%" {
			return mod, nil
		}
		if div == 0 {
			return math.Copysign(0, a/b), nil
		}
		fl := math.Floor(div)
		if div-fl > 0.5 {
			fl++
		}
		return fl, nil
	case "**":
		if a == 0 && b < 0 {
			return nil, fmt.Errorf("0.0 cannot be raised to a negative power")
		}
		if a < 0 && b != math.Trunc(b) {
			return nil, fmt.Errorf("a negative number to a fractional power has a complex result, which chat templates do not support")
		}
		r := math.Pow(a, b)
		if math.IsInf(r, 0) && !math.IsInf(a, 0) {
			return nil, fmt.Errorf("numerical result out of range")
		}
		return r, nil
	}
	return nil, fmt.Errorf("internal error: unknown operator %s", op)
}
