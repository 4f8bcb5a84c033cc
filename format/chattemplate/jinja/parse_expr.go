package jinja

// Expressions, by precedence as in jinja2/parser.py: conditional, or, and,
// not, comparisons (chained as in Python), + -, ~, * / // %, ** (left
// associative), unary, then postfix (attribute, item, call) and filters
// and tests.

func (p *parser) parseExpression(withCond bool) (expr, error) {
	if withCond {
		return p.parseCondExpr()
	}
	return p.parseOr()
}

func (p *parser) parseCondExpr() (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	x, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	for p.isName("if") {
		off := int(p.cur().off)
		p.i++
		cond, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		var els expr
		if p.isName("else") {
			p.i++
			if els, err = p.parseCondExpr(); err != nil {
				return nil, err
			}
		}
		n := &condExpr{ebase: ebase{off: int32(off)}, cond: cond, then: x, els: els}
		if x, err = p.fin(n, &n.ebase, cond, x, els); err != nil {
			return nil, err
		}
	}
	return x, nil
}

func (p *parser) binary(op string, off int, l, r expr) (expr, error) {
	n := &binExpr{ebase: ebase{off: int32(off)}, op: op, l: l, r: r}
	return p.fin(n, &n.ebase, l, r)
}

func (p *parser) parseOr() (expr, error) {
	x, err := p.parseAnd()
	for err == nil && p.isName("or") {
		off := int(p.cur().off)
		p.i++
		var r expr
		if r, err = p.parseAnd(); err == nil {
			x, err = p.binary("or", off, x, r)
		}
	}
	return x, err
}

func (p *parser) parseAnd() (expr, error) {
	x, err := p.parseNot()
	for err == nil && p.isName("and") {
		off := int(p.cur().off)
		p.i++
		var r expr
		if r, err = p.parseNot(); err == nil {
			x, err = p.binary("and", off, x, r)
		}
	}
	return x, err
}

func (p *parser) parseNot() (expr, error) {
	if p.isName("not") {
		off := int(p.cur().off)
		p.i++
		if err := p.enter(); err != nil {
			return nil, err
		}
		x, err := p.parseNot()
		p.leave()
		if err != nil {
			return nil, err
		}
		n := &unaryExpr{ebase: ebase{off: int32(off)}, op: "not", x: x}
		return p.fin(n, &n.ebase, x)
	}
	return p.parseCompare()
}

var compareOps = map[string]bool{"==": true, "!=": true, "<": true, "<=": true, ">": true, ">=": true}

func (p *parser) parseCompare() (expr, error) {
	off := int(p.cur().off)
	x, err := p.parseMath1()
	if err != nil {
		return nil, err
	}
	var ops []string
	var rest []expr
	for {
		t := p.cur()
		switch {
		case t.kind == tokOp && compareOps[t.val]:
			p.i++
			ops = append(ops, t.val)
		case p.isName("in"):
			p.i++
			ops = append(ops, "in")
		case p.isName("not") && p.peek(1).kind == tokName && p.peek(1).val == "in":
			p.i += 2
			ops = append(ops, "notin")
		default:
			if len(ops) == 0 {
				return x, nil
			}
			n := &compareExpr{ebase: ebase{off: int32(off)}, first: x, ops: ops, rest: rest}
			return p.fin(n, &n.ebase, append([]expr{x}, rest...)...)
		}
		r, err := p.parseMath1()
		if err != nil {
			return nil, err
		}
		rest = append(rest, r)
	}
}

// leftAssoc parses next (op next)* for the operators in ops.
func (p *parser) leftAssoc(next func() (expr, error), ops ...string) (expr, error) {
	x, err := next()
	for err == nil {
		t := p.cur()
		if t.kind != tokOp || !contains(ops, t.val) {
			break
		}
		p.i++
		var r expr
		if r, err = next(); err == nil {
			x, err = p.binary(t.val, int(t.off), x, r)
		}
	}
	return x, err
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (p *parser) parseMath1() (expr, error) { return p.leftAssoc(p.parseConcat, "+", "-") }

func (p *parser) parseConcat() (expr, error) { return p.leftAssoc(p.parseMath2, "~") }

func (p *parser) parseMath2() (expr, error) {
	return p.leftAssoc(p.parsePow, "*", "/", "//", "%")
}

// parsePow is left-associative, as in jinja2 (2**3**2 is 64).
func (p *parser) parsePow() (expr, error) {
	return p.leftAssoc(func() (expr, error) { return p.parseUnary(true) }, "**")
}

func (p *parser) parseUnary(withFilter bool) (expr, error) {
	t := p.cur()
	var x expr
	var err error
	if t.kind == tokOp && (t.val == "-" || t.val == "+") {
		p.i++
		if err := p.enter(); err != nil {
			return nil, err
		}
		inner, err := p.parseUnary(false)
		p.leave()
		if err != nil {
			return nil, err
		}
		n := &unaryExpr{ebase: ebase{off: t.off}, op: t.val, x: inner}
		if x, err = p.fin(n, &n.ebase, inner); err != nil {
			return nil, err
		}
	} else if x, err = p.parsePrimary(); err != nil {
		return nil, err
	}
	if x, err = p.parsePostfix(x); err != nil {
		return nil, err
	}
	if withFilter {
		return p.parseFilterExpr(x)
	}
	return x, nil
}

func (p *parser) constant(off int, v Value) expr {
	return &constExpr{ebase: ebase{off: int32(off), depth: 1}, v: v}
}

func (p *parser) parsePrimary() (expr, error) {
	t := p.cur()
	off := int(t.off)
	switch t.kind {
	case tokName:
		p.i++
		switch t.val {
		case "true", "True":
			return p.constant(off, true), nil
		case "false", "False":
			return p.constant(off, false), nil
		case "none", "None":
			return p.constant(off, nil), nil
		}
		for _, m := range p.macros {
			switch t.val {
			case "varargs":
				m.usesVarargs = true
			case "kwargs":
				m.usesKwargs = true
			case "caller":
				m.usesCaller = true
			}
		}
		return &nameExpr{ebase: ebase{off: int32(off), depth: 1}, name: t.val}, nil
	case tokString:
		s := t.val
		p.i++
		for p.cur().kind == tokString {
			s += p.cur().val
			p.i++
		}
		return p.constant(off, s), nil
	case tokInt:
		p.i++
		v, ok := parseIntLiteral(t.val)
		if !ok {
			return nil, p.fail(t, "integer literal %s is too large", t.val)
		}
		return p.constant(off, v), nil
	case tokFloat:
		p.i++
		v, err := parseFloatLiteral(t.val)
		if err != nil {
			return nil, p.fail(t, "bad float literal %s", t.val)
		}
		return p.constant(off, v), nil
	case tokOp:
		switch t.val {
		case "(":
			p.i++
			if err := p.enter(); err != nil {
				return nil, err
			}
			defer p.leave()
			x, err := p.parseTuple(false, true, nil, true)
			if err != nil {
				return nil, err
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			return x, nil
		case "[", "{":
			p.i++
			if err := p.enter(); err != nil {
				return nil, err
			}
			defer p.leave()
			if t.val == "[" {
				return p.parseList(off)
			}
			return p.parseDict(off)
		}
	}
	return nil, p.fail(t, "unexpected %s", describe(t))
}

// parseTuple parses an expression or a comma-separated tuple of them.
// simplified parses only primaries (assignment targets).
func (p *parser) parseTuple(simplified, withCond bool, extraEnd []string, explicitParens bool) (expr, error) {
	off := int(p.cur().off)
	var items []expr
	isTuple := false
	for {
		if len(items) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		if p.isTupleEnd(extraEnd) {
			break
		}
		var x expr
		var err error
		if simplified {
			x, err = p.parsePrimary()
		} else {
			x, err = p.parseExpression(withCond)
		}
		if err != nil {
			return nil, err
		}
		items = append(items, x)
		if !p.isOp(",") {
			break
		}
		isTuple = true
	}
	if !isTuple {
		if len(items) > 0 {
			return items[0], nil
		}
		if !explicitParens {
			return nil, p.unexpected("an expression")
		}
	}
	n := &tupleExpr{ebase: ebase{off: int32(off)}, items: items}
	return p.fin(n, &n.ebase, items...)
}

func (p *parser) isTupleEnd(extraEnd []string) bool {
	t := p.cur()
	switch {
	case t.kind == tokVarEnd, t.kind == tokBlockEnd, t.kind == tokOp && t.val == ")":
		return true
	case t.kind == tokName:
		return contains(extraEnd, t.val)
	}
	return false
}

func (p *parser) parseList(off int) (expr, error) {
	var items []expr
	for !p.isOp("]") {
		if len(items) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp("]") {
				break
			}
		}
		x, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		items = append(items, x)
	}
	p.i++
	n := &listExpr{ebase: ebase{off: int32(off)}, items: items}
	return p.fin(n, &n.ebase, items...)
}

func (p *parser) parseDict(off int) (expr, error) {
	var keys, vals []expr
	for !p.isOp("}") {
		if len(keys) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp("}") {
				break
			}
		}
		k, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(":"); err != nil {
			return nil, err
		}
		v, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
		vals = append(vals, v)
	}
	p.i++
	n := &dictExpr{ebase: ebase{off: int32(off)}, keys: keys, vals: vals}
	return p.fin(n, &n.ebase, append(keys, vals...)...)
}

func (p *parser) parsePostfix(x expr) (expr, error) {
	var err error
	for err == nil {
		switch {
		case p.isOp(".") || p.isOp("["):
			x, err = p.parseSubscript(x)
		case p.isOp("("):
			x, err = p.parseCall(x)
		default:
			return x, nil
		}
	}
	return nil, err
}

func (p *parser) parseFilterExpr(x expr) (expr, error) {
	var err error
	for err == nil {
		switch {
		case p.isOp("|"):
			x, err = p.parseFilter(x, false)
		case p.isName("is"):
			x, err = p.parseTest(x)
		case p.isOp("("):
			x, err = p.parseCall(x)
		default:
			return x, nil
		}
	}
	return nil, err
}

func (p *parser) parseSubscript(x expr) (expr, error) {
	t := p.cur()
	off := int(t.off)
	p.i++
	if t.val == "." {
		a := p.cur()
		p.i++
		switch a.kind {
		case tokName:
			n := &getattrExpr{ebase: ebase{off: int32(off)}, x: x, name: a.val}
			return p.fin(n, &n.ebase, x)
		case tokInt:
			v, ok := parseIntLiteral(a.val)
			if !ok {
				return nil, p.fail(a, "integer literal %s is too large", a.val)
			}
			n := &getitemExpr{ebase: ebase{off: int32(off)}, x: x, key: p.constant(int(a.off), v)}
			return p.fin(n, &n.ebase, x)
		}
		return nil, p.fail(a, "expected an attribute name after '.', got %s", describe(a))
	}
	var args []expr
	var slice *sliceExpr
	for !p.isOp("]") {
		if len(args) > 0 || slice != nil {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		a, s, err := p.parseSubscribed()
		if err != nil {
			return nil, err
		}
		if s != nil {
			if slice != nil || len(args) > 0 {
				return nil, p.fail(t, "a subscript with a slice takes nothing else")
			}
			slice = s
			continue
		}
		if slice != nil {
			return nil, p.fail(t, "a subscript with a slice takes nothing else")
		}
		args = append(args, a)
	}
	p.i++
	if slice != nil {
		slice.x = x
		slice.off = int32(off)
		return p.fin(slice, &slice.ebase, x, slice.start, slice.stop, slice.step)
	}
	var key expr
	switch len(args) {
	case 0:
		return nil, p.fail(t, "empty subscript")
	case 1:
		key = args[0]
	default:
		tu := &tupleExpr{ebase: ebase{off: int32(off)}, items: args}
		var err error
		if key, err = p.fin(tu, &tu.ebase, args...); err != nil {
			return nil, err
		}
	}
	n := &getitemExpr{ebase: ebase{off: int32(off)}, x: x, key: key}
	return p.fin(n, &n.ebase, x, key)
}

// parseSubscribed parses one subscript: an expression or a slice.
func (p *parser) parseSubscribed() (expr, *sliceExpr, error) {
	var start expr
	if !p.isOp(":") {
		x, err := p.parseExpression(true)
		if err != nil {
			return nil, nil, err
		}
		if !p.isOp(":") {
			return x, nil, nil
		}
		start = x
	}
	p.i++ // the first ':'
	s := &sliceExpr{start: start}
	endOfPart := func() bool { return p.isOp("]") || p.isOp(",") || p.isOp(":") }
	var err error
	if !endOfPart() {
		if s.stop, err = p.parseExpression(true); err != nil {
			return nil, nil, err
		}
	}
	if p.isOp(":") {
		p.i++
		if !p.isOp("]") && !p.isOp(",") {
			if s.step, err = p.parseExpression(true); err != nil {
				return nil, nil, err
			}
		}
	}
	return nil, s, nil
}

type callArgs struct {
	args        []expr
	kwNames     []string
	kwVals      []expr
	star, dstar expr
}

func (c *callArgs) all() []expr {
	out := append(append([]expr{}, c.args...), c.kwVals...)
	return append(out, c.star, c.dstar)
}

func (p *parser) parseCallArgs() (callArgs, error) {
	var c callArgs
	if err := p.expectOp("("); err != nil {
		return c, err
	}
	if err := p.enter(); err != nil {
		return c, err
	}
	defer p.leave()
	first := true
	for !p.isOp(")") {
		if !first {
			if err := p.expectOp(","); err != nil {
				return c, err
			}
			if p.isOp(")") {
				break
			}
		}
		first = false
		t := p.cur()
		switch {
		case p.isOp("**"):
			p.i++
			x, err := p.parseExpression(true)
			if err != nil {
				return c, err
			}
			c.dstar = x
		case p.isOp("*"):
			p.i++
			x, err := p.parseExpression(true)
			if err != nil {
				return c, err
			}
			c.star = x
		case t.kind == tokName && p.peek(1).kind == tokOp && p.peek(1).val == "=":
			p.i += 2
			if c.dstar != nil {
				return c, p.fail(t, "keyword argument after **")
			}
			x, err := p.parseExpression(true)
			if err != nil {
				return c, err
			}
			c.kwNames = append(c.kwNames, t.val)
			c.kwVals = append(c.kwVals, x)
		default:
			if c.star != nil || c.dstar != nil || len(c.kwNames) > 0 {
				return c, p.fail(t, "positional argument after keyword arguments")
			}
			x, err := p.parseExpression(true)
			if err != nil {
				return c, err
			}
			c.args = append(c.args, x)
		}
	}
	p.i++
	return c, nil
}

func (p *parser) parseCall(fn expr) (expr, error) {
	off := int(p.cur().off)
	c, err := p.parseCallArgs()
	if err != nil {
		return nil, err
	}
	n := &callExpr{ebase: ebase{off: int32(off)}, fn: fn, args: c.args, kwNames: c.kwNames, kwVals: c.kwVals, star: c.star, dstar: c.dstar}
	return p.fin(n, &n.ebase, append(c.all(), fn)...)
}

// dottedName reads a filter or test name (which may contain dots).
func (p *parser) dottedName() (string, error) {
	t, err := p.expectKind(tokName, "a name")
	if err != nil {
		return "", err
	}
	name := t.val
	for p.isOp(".") {
		p.i++
		t, err := p.expectKind(tokName, "a name")
		if err != nil {
			return "", err
		}
		name += "." + t.val
	}
	return name, nil
}

func (p *parser) parseFilter(x expr, startInline bool) (expr, error) {
	for p.isOp("|") || startInline {
		if !startInline {
			p.i++
		}
		startInline = false
		off := int(p.cur().off)
		name, err := p.dottedName()
		if err != nil {
			return nil, err
		}
		var c callArgs
		if p.isOp("(") {
			if c, err = p.parseCallArgs(); err != nil {
				return nil, err
			}
		}
		n := &filterExpr{ebase: ebase{off: int32(off)}, x: x, name: name, args: c.args, kwNames: c.kwNames, kwVals: c.kwVals, star: c.star, dstar: c.dstar}
		if x, err = p.fin(n, &n.ebase, append(c.all(), x)...); err != nil {
			return nil, err
		}
	}
	return x, nil
}

func (p *parser) parseTest(x expr) (expr, error) {
	off := int(p.cur().off)
	p.i++ // is
	negated := false
	if p.isName("not") {
		p.i++
		negated = true
	}
	name, err := p.dottedName()
	if err != nil {
		return nil, err
	}
	var c callArgs
	t := p.cur()
	switch {
	case p.isOp("("):
		if c, err = p.parseCallArgs(); err != nil {
			return nil, err
		}
	case (t.kind == tokName || t.kind == tokString || t.kind == tokInt || t.kind == tokFloat || p.isOp("[") || p.isOp("{")) &&
		!p.isName("else") && !p.isName("or") && !p.isName("and"):
		if p.isName("is") {
			return nil, p.fail(t, "tests cannot be chained with 'is'")
		}
		a, err := p.parsePrimary()
		if err != nil {
			return nil, err
		}
		if a, err = p.parsePostfix(a); err != nil {
			return nil, err
		}
		c.args = []expr{a}
	}
	n := &testExpr{ebase: ebase{off: int32(off)}, x: x, name: name, args: c.args, kwNames: c.kwNames, kwVals: c.kwVals, star: c.star, dstar: c.dstar}
	res, err := p.fin(n, &n.ebase, append(c.all(), x)...)
	if err != nil || !negated {
		return res, err
	}
	u := &unaryExpr{ebase: ebase{off: int32(off)}, op: "not", x: res}
	return p.fin(u, &u.ebase, res)
}
