package jinja

import "strings"

// The parser follows jinja2's grammar (jinja2/parser.py) so that templates
// mean what they mean in Python. Nesting is bounded: recursion through
// brackets, unary operators and blocks counts against Limits.MaxNesting, and
// every expression node records its depth, bounded at 4×MaxNesting (long
// left-associative chains such as a + b + c …).

type parser struct {
	toks      []token
	i         int
	maxNest   int
	nest      int
	loopDepth int
	macros    []*macroDef // being parsed, innermost last
	fors      []*forStmt  // open for loops
	blocks    []string    // open block tags, for error messages
}

func parse(toks []token, lim Limits) ([]stmt, error) {
	p := &parser{toks: toks, maxNest: lim.MaxNesting}
	body, err := p.subparse(nil)
	if err != nil {
		return nil, err
	}
	return body, nil
}

// cur is the current token (the end of the template once past it).
func (p *parser) cur() token {
	if p.i >= len(p.toks) {
		return p.toks[len(p.toks)-1]
	}
	return p.toks[p.i]
}

func (p *parser) peek(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) isOp(v string) bool {
	t := p.cur()
	return t.kind == tokOp && t.val == v
}

func (p *parser) isName(v string) bool {
	t := p.cur()
	return t.kind == tokName && t.val == v
}

func describe(t token) string {
	switch t.kind {
	case tokEOF:
		return "end of template"
	case tokText:
		return "template data"
	case tokVarBegin:
		return "'{{'"
	case tokVarEnd:
		return "'}}'"
	case tokBlockBegin:
		return "'{%'"
	case tokBlockEnd:
		return "'%}'"
	case tokString:
		return "string literal"
	case tokInt, tokFloat:
		return "number " + t.val
	}
	return "'" + t.val + "'"
}

func (p *parser) fail(t token, format string, args ...any) error {
	return errAt(int(t.off), ErrSyntax, format, args...)
}

func (p *parser) unexpected(want string) error {
	t := p.cur()
	return p.fail(t, "expected %s, got %s", want, describe(t))
}

func (p *parser) expectOp(v string) error {
	if !p.isOp(v) {
		return p.unexpected("'" + v + "'")
	}
	p.i++
	return nil
}

func (p *parser) expectKind(k tokKind, what string) (token, error) {
	t := p.cur()
	if t.kind != k {
		return t, p.unexpected(what)
	}
	p.i++
	return t, nil
}

func (p *parser) expectName(v string) error {
	if !p.isName(v) {
		return p.unexpected("'" + v + "'")
	}
	p.i++
	return nil
}

// enter counts one level of recursion.
func (p *parser) enter() error {
	p.nest++
	if p.nest > p.maxNest {
		return errAt(int(p.cur().off), ErrLimit, "template nests deeper than %d levels (blocks, brackets and operators); simplify it or raise Limits.MaxNesting", p.maxNest)
	}
	return nil
}

func (p *parser) leave() { p.nest-- }

// fin sets an expression node's depth from its children and bounds it.
func (p *parser) fin(n expr, b *ebase, kids ...expr) (expr, error) {
	d := 0
	for _, k := range kids {
		if k != nil && k.exprDepth() > d {
			d = k.exprDepth()
		}
	}
	if d+1 > 4*p.maxNest {
		return nil, errAt(int(b.off), ErrLimit, "expression nests deeper than %d levels; split it or raise Limits.MaxNesting", 4*p.maxNest)
	}
	b.depth = int32(d + 1)
	return n, nil
}

// subparse parses statements until a block tag named in ends (left as the
// current token) or the end of the template (only when ends is empty).
func (p *parser) subparse(ends []string) ([]stmt, error) {
	var body []stmt
	for {
		t := p.cur()
		switch t.kind {
		case tokEOF:
			if len(ends) > 0 {
				open := p.blocks[len(p.blocks)-1]
				return nil, p.fail(t, "unexpected end of template: {%% end%s %%} is missing for the {%% %s %%} that is still open", open, open)
			}
			return body, nil
		case tokText:
			body = append(body, &textStmt{sbase{int(t.off)}, t.val})
			p.i++
		case tokVarBegin:
			p.i++
			x, err := p.parseTuple(false, true, nil, false)
			if err != nil {
				return nil, err
			}
			if _, err := p.expectKind(tokVarEnd, "'}}'"); err != nil {
				return nil, err
			}
			body = append(body, &outputStmt{sbase{int(t.off)}, x})
		case tokBlockBegin:
			p.i++
			n := p.cur()
			if n.kind == tokName {
				for _, e := range ends {
					if n.val == e {
						return body, nil
					}
				}
			}
			st, err := p.statement()
			if err != nil {
				return nil, err
			}
			body = append(body, st...)
			if _, err := p.expectKind(tokBlockEnd, "'%}'"); err != nil {
				return nil, err
			}
		default:
			return nil, p.unexpected("template data or a tag")
		}
	}
}

// statements parses "%}" body up to one of ends; the end tag's name is
// consumed when drop is set.
func (p *parser) statements(ends []string, drop bool) ([]stmt, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	if p.isOp(":") {
		p.i++
	}
	if _, err := p.expectKind(tokBlockEnd, "'%}'"); err != nil {
		return nil, err
	}
	body, err := p.subparse(ends)
	if err != nil {
		return nil, err
	}
	if drop {
		p.i++
	}
	return body, nil
}

var forbiddenTags = map[string]string{
	"include": "templates render without file access",
	"import":  "templates render without file access",
	"from":    "templates render without file access",
	"extends": "templates render without file access",
	"block":   "template inheritance is not supported",
}

func (p *parser) statement() ([]stmt, error) {
	t := p.cur()
	if t.kind != tokName {
		return nil, p.fail(t, "tag name expected, got %s", describe(t))
	}
	if why, ok := forbiddenTags[t.val]; ok {
		return nil, errAt(int(t.off), ErrNotAllowed, "{%% %s %%} is not allowed: %s", t.val, why)
	}
	p.blocks = append(p.blocks, t.val)
	defer func() { p.blocks = p.blocks[:len(p.blocks)-1] }()
	var st stmt
	var err error
	switch t.val {
	case "if":
		st, err = p.parseIf()
	case "for":
		st, err = p.parseFor()
	case "set":
		st, err = p.parseSet()
	case "macro":
		st, err = p.parseMacro()
	case "call":
		st, err = p.parseCallBlock()
	case "filter":
		st, err = p.parseFilterBlock()
	case "with":
		st, err = p.parseWith()
	case "print":
		p.i++
		var x expr
		x, err = p.parseTuple(false, true, nil, false)
		st = &outputStmt{sbase{int(t.off)}, x}
	case "break", "continue":
		p.i++
		if p.loopDepth == 0 {
			return nil, p.fail(t, "{%% %s %%} outside a for loop", t.val)
		}
		if t.val == "break" {
			st = &breakStmt{sbase{int(t.off)}}
		} else {
			st = &continueStmt{sbase{int(t.off)}}
		}
	case "generation":
		// transformers' AssistantTracker: the body renders as is (as a
		// call block would, in a scope of its own).
		p.i++
		var body []stmt
		body, err = p.statements([]string{"endgeneration"}, true)
		st = &scopeStmt{sbase{int(t.off)}, body}
	default:
		if strings.HasPrefix(t.val, "end") || t.val == "else" || t.val == "elif" {
			return nil, p.fail(t, "unexpected {%% %s %%}: no open block it closes (check the nesting of the tags before it)", t.val)
		}
		return nil, p.fail(t, "unknown tag {%% %s %%}", t.val)
	}
	if err != nil {
		return nil, err
	}
	return []stmt{st}, nil
}

func (p *parser) parseIf() (stmt, error) {
	st := &ifStmt{sbase: sbase{int(p.cur().off)}}
	p.i++
	for {
		cond, err := p.parseTuple(false, false, nil, false)
		if err != nil {
			return nil, err
		}
		body, err := p.statements([]string{"elif", "else", "endif"}, false)
		if err != nil {
			return nil, err
		}
		st.conds = append(st.conds, cond)
		st.bodies = append(st.bodies, body)
		tag := p.cur().val
		p.i++
		switch tag {
		case "elif":
			continue
		case "else":
			st.els, err = p.statements([]string{"endif"}, true)
			if err != nil {
				return nil, err
			}
		}
		return st, nil
	}
}

func (p *parser) parseFor() (stmt, error) {
	st := &forStmt{sbase: sbase{int(p.cur().off)}}
	p.i++
	tgt, err := p.parseAssignTarget(false, []string{"in"})
	if err != nil {
		return nil, err
	}
	st.target = tgt
	if err := p.expectName("in"); err != nil {
		return nil, err
	}
	if st.iter, err = p.parseTuple(false, false, []string{"recursive"}, false); err != nil {
		return nil, err
	}
	if p.isName("if") {
		p.i++
		if st.cond, err = p.parseExpression(true); err != nil {
			return nil, err
		}
	}
	if p.isName("recursive") {
		return nil, p.fail(p.cur(), "recursive for loops are not supported in chat templates")
	}
	p.loopDepth++
	p.fors = append(p.fors, st)
	st.body, err = p.statements([]string{"endfor", "else"}, false)
	p.fors = p.fors[:len(p.fors)-1]
	p.loopDepth--
	if err != nil {
		return nil, err
	}
	tag := p.cur().val
	p.i++
	if tag == "else" {
		if st.els, err = p.statements([]string{"endfor"}, true); err != nil {
			return nil, err
		}
	}
	return st, nil
}

func (p *parser) parseSet() (stmt, error) {
	off := int(p.cur().off)
	p.i++
	tgt, err := p.parseAssignTarget(true, nil)
	if err != nil {
		return nil, err
	}
	if p.isOp("=") {
		p.i++
		x, err := p.parseTuple(false, true, nil, false)
		if err != nil {
			return nil, err
		}
		return &setStmt{sbase{off}, tgt, x}, nil
	}
	st := &setBlockStmt{sbase: sbase{off}, target: tgt}
	if p.isOp("|") {
		f, err := p.parseFilter(nil, false)
		if err != nil {
			return nil, err
		}
		st.filter = f.(*filterExpr)
	}
	if st.body, err = p.statements([]string{"endset"}, true); err != nil {
		return nil, err
	}
	return st, nil
}

// parseAssignTarget parses a name, a tuple of names, or (withNamespace)
// ns.attr.
func (p *parser) parseAssignTarget(withNamespace bool, extraEnd []string) (target, error) {
	t := p.cur()
	if withNamespace && t.kind == tokName && p.peek(1).kind == tokOp && p.peek(1).val == "." {
		p.i += 2
		a, err := p.expectKind(tokName, "an attribute name")
		if err != nil {
			return nil, err
		}
		return &nsTarget{int(t.off), t.val, a.val}, nil
	}
	x, err := p.parseTuple(true, false, extraEnd, false)
	if err != nil {
		return nil, err
	}
	return toTarget(x)
}

func toTarget(x expr) (target, error) {
	switch n := x.(type) {
	case *nameExpr:
		switch n.name {
		case "true", "false", "none", "True", "False", "None":
			return nil, errAt(int(n.off), ErrSyntax, "cannot assign to %s", n.name)
		}
		return &nameTarget{int(n.off), n.name}, nil
	case *tupleExpr:
		tt := &tupleTarget{off: int(n.off)}
		for _, it := range n.items {
			sub, err := toTarget(it)
			if err != nil {
				return nil, err
			}
			tt.items = append(tt.items, sub)
		}
		return tt, nil
	}
	return nil, errAt(x.exprPos(), ErrSyntax, "can only assign to a name, a tuple of names or a namespace attribute")
}

// parseSignature parses "(a, b=1, …)" into m.
func (p *parser) parseSignature(m *macroDef) error {
	if err := p.expectOp("("); err != nil {
		return err
	}
	for !p.isOp(")") {
		if len(m.params) > 0 {
			if err := p.expectOp(","); err != nil {
				return err
			}
		}
		t, err := p.expectKind(tokName, "a parameter name")
		if err != nil {
			return err
		}
		if p.isOp("=") {
			p.i++
			d, err := p.parseExpression(true)
			if err != nil {
				return err
			}
			m.defaults = append(m.defaults, d)
		} else if len(m.defaults) > 0 {
			return p.fail(t, "parameter %s without a default follows one with a default", t.val)
		}
		m.params = append(m.params, t.val)
	}
	p.i++
	return nil
}

// macroBody parses a macro's (or caller's) body, noting which of varargs,
// kwargs and caller it reads.
func (p *parser) macroBody(m *macroDef, end string) error {
	for _, f := range p.fors {
		f.captures = true // the macro keeps the loop's scope
	}
	p.macros = append(p.macros, m)
	saved := p.loopDepth
	p.loopDepth = 0
	body, err := p.statements([]string{end}, true)
	p.loopDepth = saved
	p.macros = p.macros[:len(p.macros)-1]
	m.body = body
	return err
}

func (p *parser) parseMacro() (stmt, error) {
	off := int(p.cur().off)
	p.i++
	name, err := p.expectKind(tokName, "a macro name")
	if err != nil {
		return nil, err
	}
	m := &macroDef{name: name.val}
	if err := p.parseSignature(m); err != nil {
		return nil, err
	}
	if err := p.macroBody(m, "endmacro"); err != nil {
		return nil, err
	}
	return &macroStmt{sbase{off}, m}, nil
}

func (p *parser) parseCallBlock() (stmt, error) {
	off := int(p.cur().off)
	p.i++
	m := &macroDef{name: "caller"}
	if p.isOp("(") {
		if err := p.parseSignature(m); err != nil {
			return nil, err
		}
	}
	x, err := p.parseExpression(true)
	if err != nil {
		return nil, err
	}
	call, ok := x.(*callExpr)
	if !ok {
		return nil, errAt(x.exprPos(), ErrSyntax, "{%% call %%} needs a macro call, like {%% call m(x) %%}")
	}
	if err := p.macroBody(m, "endcall"); err != nil {
		return nil, err
	}
	return &callBlockStmt{sbase{off}, call, m}, nil
}

func (p *parser) parseFilterBlock() (stmt, error) {
	off := int(p.cur().off)
	p.i++
	f, err := p.parseFilter(nil, true)
	if err != nil {
		return nil, err
	}
	body, err := p.statements([]string{"endfilter"}, true)
	if err != nil {
		return nil, err
	}
	return &filterBlockStmt{sbase{off}, f.(*filterExpr), body}, nil
}

func (p *parser) parseWith() (stmt, error) {
	st := &withStmt{sbase: sbase{int(p.cur().off)}}
	p.i++
	for p.cur().kind != tokBlockEnd {
		if len(st.targets) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		tgt, err := p.parseAssignTarget(false, nil)
		if err != nil {
			return nil, err
		}
		if err := p.expectOp("="); err != nil {
			return nil, err
		}
		v, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		st.targets = append(st.targets, tgt)
		st.values = append(st.values, v)
	}
	var err error
	st.body, err = p.statements([]string{"endwith"}, true)
	return st, err
}

// Expressions.
