package jinja

import "fmt"

func (e *evaluator) eval(x expr, s *scope) (Value, error) {
	switch n := x.(type) {
	case *constExpr:
		return n.v, nil
	case *nameExpr:
		return e.lookup(n.name, s), nil
	case *getattrExpr:
		o, err := e.eval(n.x, s)
		if err != nil {
			return nil, err
		}
		v, err := e.getattr(plain(o), n.name)
		return v, at(n.off, err)
	case *getitemExpr:
		o, err := e.eval(n.x, s)
		if err != nil {
			return nil, err
		}
		k, err := e.eval(n.key, s)
		if err != nil {
			return nil, err
		}
		v, err := e.getitem(plain(o), plain(k))
		return v, at(n.off, err)
	case *sliceExpr:
		o, err := e.eval(n.x, s)
		if err != nil {
			return nil, err
		}
		var bounds [3]Value
		for i, b := range []expr{n.start, n.stop, n.step} {
			if b != nil {
				if bounds[i], err = e.eval(b, s); err != nil {
					return nil, err
				}
			}
		}
		v, err := e.slice(plain(o), bounds[0], bounds[1], bounds[2])
		return v, at(n.off, err)
	case *binExpr:
		l, err := e.eval(n.l, s)
		if err != nil {
			return nil, err
		}
		switch n.op {
		case "and":
			if !truthy(l) {
				return l, nil
			}
			return e.eval(n.r, s)
		case "or":
			if truthy(l) {
				return l, nil
			}
			return e.eval(n.r, s)
		}
		r, err := e.eval(n.r, s)
		if err != nil {
			return nil, err
		}
		v, err := e.binop(n.op, l, r)
		return v, at(n.off, err)
	case *unaryExpr:
		v, err := e.eval(n.x, s)
		if err != nil {
			return nil, err
		}
		if n.op == "not" {
			return !truthy(v), nil
		}
		v, err = unary(n.op, v)
		return v, at(n.off, err)
	case *compareExpr:
		a, err := e.eval(n.first, s)
		if err != nil {
			return nil, err
		}
		for i, op := range n.ops {
			b, err := e.eval(n.rest[i], s)
			if err != nil {
				return nil, err
			}
			ok, err := e.compareOp(op, a, b)
			if err != nil {
				return nil, at(n.off, err)
			}
			if !ok {
				return false, nil
			}
			a = b
		}
		return true, nil
	case *condExpr:
		c, err := e.eval(n.cond, s)
		if err != nil {
			return nil, err
		}
		if truthy(c) {
			return e.eval(n.then, s)
		}
		if n.els == nil {
			return Undefined{hint: "the conditional expression was false and has no else"}, nil
		}
		return e.eval(n.els, s)
	case *listExpr:
		if err := e.needList(len(n.items)); err != nil {
			return nil, at(n.off, err)
		}
		l := make(List, len(n.items))
		for i, it := range n.items {
			v, err := e.eval(it, s)
			if err != nil {
				return nil, err
			}
			l[i] = v
		}
		return l, nil
	case *tupleExpr:
		if err := e.needList(len(n.items)); err != nil {
			return nil, at(n.off, err)
		}
		t := make(Tuple, len(n.items))
		for i, it := range n.items {
			v, err := e.eval(it, s)
			if err != nil {
				return nil, err
			}
			t[i] = v
		}
		return t, nil
	case *dictExpr:
		if err := e.needList(2 * len(n.keys)); err != nil {
			return nil, at(n.off, err)
		}
		d := NewDict()
		for i, kx := range n.keys {
			k, err := e.eval(kx, s)
			if err != nil {
				return nil, err
			}
			v, err := e.eval(n.vals[i], s)
			if err != nil {
				return nil, err
			}
			if err := d.Set(k, v); err != nil {
				return nil, at(kx.exprPos(), err)
			}
		}
		return d, nil
	case *callExpr:
		return e.evalCall(n, s, nil)
	case *filterExpr:
		return e.evalFilter(n, s, nil)
	case *testExpr:
		return e.evalTest(n, s)
	}
	return nil, fmt.Errorf("internal error: unknown expression %T", x)
}

// args are evaluated call arguments.
type args struct {
	pos     []Value
	kwNames []string
	kwVals  []Value
}

func (e *evaluator) evalArgs(pos []expr, kwNames []string, kwVals []expr, star, dstar expr, s *scope) (*args, error) {
	a := &args{pos: make([]Value, 0, len(pos))}
	for _, x := range pos {
		v, err := e.eval(x, s)
		if err != nil {
			return nil, err
		}
		a.pos = append(a.pos, v)
	}
	if star != nil {
		v, err := e.eval(star, s)
		if err != nil {
			return nil, err
		}
		items, err := e.iterate(v)
		if err != nil {
			return nil, at(star.exprPos(), err)
		}
		a.pos = append(a.pos, items...)
	}
	for i, x := range kwVals {
		v, err := e.eval(x, s)
		if err != nil {
			return nil, err
		}
		a.kwNames = append(a.kwNames, kwNames[i])
		a.kwVals = append(a.kwVals, v)
	}
	if dstar != nil {
		v, err := e.eval(dstar, s)
		if err != nil {
			return nil, err
		}
		d, ok := v.(*Dict)
		if !ok {
			return nil, at(dstar.exprPos(), fmt.Errorf("argument after ** must be a mapping, not %s", typeName(v)))
		}
		for i, k := range d.keys {
			ks, ok := k.(string)
			if !ok {
				return nil, at(dstar.exprPos(), fmt.Errorf("keywords must be strings"))
			}
			a.kwNames = append(a.kwNames, ks)
			a.kwVals = append(a.kwVals, d.vals[i])
		}
	}
	return a, nil
}

func (e *evaluator) evalCall(n *callExpr, s *scope, caller *macroVal) (Value, error) {
	fn, err := e.eval(n.fn, s)
	if err != nil {
		return nil, err
	}
	a, err := e.evalArgs(n.args, n.kwNames, n.kwVals, n.star, n.dstar, s)
	if err != nil {
		return nil, err
	}
	if caller != nil {
		a.kwNames = append(a.kwNames, "caller")
		a.kwVals = append(a.kwVals, caller)
	}
	v, err := e.call(fn, a)
	return v, at(n.off, err)
}

func (e *evaluator) call(fn Value, a *args) (Value, error) {
	if err := e.step(); err != nil {
		return nil, err
	}
	switch f := fn.(type) {
	case *macroVal:
		return e.callMacro(f, a)
	case *builtinFunc:
		return f.fn(e, a)
	case *boundMethod:
		if err := e.sizeWork(f.recv); err != nil {
			return nil, err
		}
		return f.fn(e, f.recv, a)
	case *Func:
		for i, v := range a.pos {
			a.pos[i] = plain(v)
		}
		var kw map[string]Value
		if len(a.kwNames) > 0 {
			kw = make(map[string]Value, len(a.kwNames))
			for i, k := range a.kwNames {
				kw[k] = a.kwVals[i]
			}
		}
		return f.Fn(a.pos, kw)
	case Undefined:
		return nil, fmt.Errorf("%s", f.errMsg())
	}
	return nil, fmt.Errorf("'%s' object is not callable", typeName(fn))
}

// macroVal is a macro (or a call block's caller) and the scope it was
// defined in.
type macroVal struct {
	def     *macroDef
	closure *scope
}

func (e *evaluator) callMacro(m *macroVal, a *args) (Value, error) {
	d := m.def
	if e.callDepth >= e.lim.MaxCallDepth {
		return nil, limitErr("macro calls nest deeper than %d (endless recursion?)", e.lim.MaxCallDepth)
	}
	sc := newScope(m.closure)
	// jinja2's Macro.__call__: positional, then by keyword, then defaults.
	kwUsed := make([]bool, len(a.kwNames))
	provided := make([]bool, len(d.params))
	for i, name := range d.params {
		if i < len(a.pos) {
			sc.set(name, a.pos[i])
			provided[i] = true
			continue
		}
		for j, k := range a.kwNames {
			if k == name && !kwUsed[j] {
				kwUsed[j] = true
				sc.set(name, a.kwVals[j])
				provided[i] = true
				break
			}
		}
	}
	firstDefault := len(d.params) - len(d.defaults)
	for i, name := range d.params {
		if provided[i] {
			continue
		}
		if i >= firstDefault {
			v, err := e.eval(d.defaults[i-firstDefault], sc)
			if err != nil {
				return nil, err
			}
			sc.set(name, v)
		} else {
			sc.set(name, Undefined{name: name, hint: fmt.Sprintf("parameter '%s' was not provided", name)})
		}
	}
	if d.usesCaller {
		var caller Value = Undefined{name: "caller", hint: "No caller defined"}
		for j, k := range a.kwNames {
			if k == "caller" && !kwUsed[j] {
				kwUsed[j] = true
				caller = a.kwVals[j]
			}
		}
		sc.set("caller", caller)
	}
	if d.usesKwargs {
		kw := NewDict()
		for j, k := range a.kwNames {
			if !kwUsed[j] {
				kw.SetString(k, a.kwVals[j])
			}
		}
		sc.set("kwargs", kw)
	} else {
		for j, k := range a.kwNames {
			if !kwUsed[j] {
				if k == "caller" {
					return nil, fmt.Errorf("macro '%s' was invoked with two values for the special caller argument", d.name)
				}
				return nil, fmt.Errorf("macro '%s' takes no keyword argument '%s'", d.name, k)
			}
		}
	}
	if d.usesVarargs {
		var rest Tuple
		if len(a.pos) > len(d.params) {
			rest = append(Tuple{}, a.pos[len(d.params):]...)
		} else {
			rest = Tuple{}
		}
		sc.set("varargs", rest)
	} else if len(a.pos) > len(d.params) {
		return nil, fmt.Errorf("macro '%s' takes not more than %d argument(s)", d.name, len(d.params))
	}
	e.callDepth++
	out, err := e.capture(d.body, sc)
	e.callDepth--
	return out, err
}

func (e *evaluator) evalFilter(n *filterExpr, s *scope, inner Value) (Value, error) {
	var v Value
	var err error
	switch x := n.x.(type) {
	case nil:
		v = inner
	case *filterExpr:
		v, err = e.evalFilter(x, s, inner)
	default:
		v, err = e.eval(x, s)
	}
	if err != nil {
		return nil, err
	}
	f, ok := filters[n.name]
	if !ok {
		return nil, at(n.off, fmt.Errorf("no filter named '%s'", n.name))
	}
	if !markupFilters[n.name] {
		v = plain(v)
	}
	a, err := e.evalArgs(n.args, n.kwNames, n.kwVals, n.star, n.dstar, s)
	if err != nil {
		return nil, err
	}
	if err := e.sizeWork(v); err != nil {
		return nil, at(n.off, err)
	}
	v, err = f(e, v, a)
	return v, at(n.off, err)
}

func (e *evaluator) evalTest(n *testExpr, s *scope) (Value, error) {
	v, err := e.eval(n.x, s)
	if err != nil {
		return nil, err
	}
	if n.name == "escaped" {
		_, ok := v.(Markup)
		return ok, nil
	}
	v = plain(v)
	t, ok := tests[n.name]
	if !ok {
		return nil, at(n.off, fmt.Errorf("no test named '%s'", n.name))
	}
	a, err := e.evalArgs(n.args, n.kwNames, n.kwVals, n.star, n.dstar, s)
	if err != nil {
		return nil, err
	}
	ok, err = t(e, v, a)
	return ok, at(n.off, err)
}
