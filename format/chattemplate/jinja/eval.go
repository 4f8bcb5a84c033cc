package jinja

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// scope is one frame of variables: the template's top level, one loop
// iteration, a macro call, a with block. Lookups walk outwards; assignments
// go to the innermost frame, which is how jinja2 scopes them (a {% set %}
// inside a loop body does not outlive the iteration; namespaces exist for
// that).
type scope struct {
	parent *scope
	vars   []binding
	inline [3]binding       // vars' first backing array: one allocation per scope
	top    map[string]Value // the template's top level only
}

type binding struct {
	name string
	val  Value
}

func newScope(parent *scope) *scope {
	s := &scope{parent: parent}
	s.vars = s.inline[:0]
	return s
}

func (s *scope) set(name string, v Value) {
	if s.top != nil {
		s.top[name] = v
		return
	}
	for i := range s.vars {
		if s.vars[i].name == name {
			s.vars[i].val = v
			return
		}
	}
	s.vars = append(s.vars, binding{name, v})
}

// reset empties a scope for reuse.
func (s *scope) reset() {
	clear(s.vars)
	s.vars = s.vars[:0]
}

type ctrl uint8

const (
	ctrlNone ctrl = iota
	ctrlBreak
	ctrlContinue
)

type outBuf struct {
	b       []byte
	max     int
	capture bool // a macro, {% set %} or {% filter %} body, not the prompt
}

type evaluator struct {
	ctx       context.Context
	lim       Limits
	deadline  time.Time
	steps     int64
	alloc     int64
	callDepth int
	vars      map[string]Value
	out       *outBuf
}

// at attaches a position to an error that has none yet.
func at[T int | int32](off T, err error) error {
	if err == nil {
		return nil
	}
	var pe *posErr
	if errors.As(err, &pe) {
		return err
	}
	var cause error = err
	if u := errors.Unwrap(err); u != nil {
		cause = u
	}
	return &posErr{off: int(off), msg: err.Error(), err: cause}
}

// limitErr is an ErrLimit whose message is only what went over.
func limitErr(format string, args ...any) error {
	return &kindErr{msg: fmt.Sprintf(format, args...), kind: ErrLimit}
}

type kindErr struct {
	msg  string
	kind error
}

func (e *kindErr) Error() string { return e.msg }
func (e *kindErr) Unwrap() error { return e.kind }

// step counts one unit of work and, every 256 units, checks the deadline
// and the context.
func (e *evaluator) step() error {
	e.steps++
	if e.steps > e.lim.MaxSteps {
		return limitErr("template ran more than %d steps (an endless or huge loop?)", e.lim.MaxSteps)
	}
	if e.steps&255 == 0 {
		return e.checkTime()
	}
	return nil
}

func (e *evaluator) checkTime() error {
	if err := e.ctx.Err(); err != nil {
		return fmt.Errorf("render stopped: %w", err)
	}
	if time.Now().After(e.deadline) {
		return fmt.Errorf("template did not finish within its deadline (%v): %w", e.lim.Timeout, context.DeadlineExceeded)
	}
	return nil
}

// work counts an operation over n bytes or items (1 step per 256).
func (e *evaluator) work(n int) error {
	if n < 256 {
		return e.step()
	}
	before := e.steps
	e.steps += int64(n >> 8)
	if e.steps > e.lim.MaxSteps {
		return limitErr("template ran more than %d steps (an endless or huge loop?)", e.lim.MaxSteps)
	}
	if e.steps>>8 != before>>8 {
		return e.checkTime()
	}
	return nil
}

// sizeWork counts an operation that may walk all of v once.
func (e *evaluator) sizeWork(v Value) error {
	switch x := v.(type) {
	case string:
		return e.work(len(x))
	case Markup:
		return e.work(len(x))
	case List:
		return e.work(len(x))
	case Tuple:
		return e.work(len(x))
	case *Dict:
		return e.work(x.Len())
	}
	return e.step()
}

// charge counts n bytes about to be allocated.
func (e *evaluator) charge(n int) error {
	e.alloc += int64(n)
	if e.alloc > e.lim.MaxAllocBytes {
		return limitErr("template built more than %d MiB of strings and lists (the allocation limit)", e.lim.MaxAllocBytes>>20)
	}
	return e.work(n)
}

// needStr checks a string of n bytes may be built, before building it.
func (e *evaluator) needStr(n int) error {
	if n > e.lim.MaxStringBytes || n < 0 {
		return limitErr("string of %d bytes is over the %d-byte limit", n, e.lim.MaxStringBytes)
	}
	return e.charge(n)
}

// needList checks a list of n items may be built, before building it.
func (e *evaluator) needList(n int) error {
	if n > e.lim.MaxListLen || n < 0 {
		return limitErr("list of %d items is over the %d-item limit", n, e.lim.MaxListLen)
	}
	return e.charge(16 * n)
}

// writeValue writes v as {{ v }} prints it.
func (e *evaluator) writeValue(v Value) error {
	str, err := e.str(v)
	if err != nil {
		return err
	}
	return e.write(str)
}

func (e *evaluator) write(s string) error {
	o := e.out
	n := len(o.b) + len(s)
	if n > o.max {
		if o.capture {
			return limitErr("a block's output is over the %d-byte limit", o.max)
		}
		return limitErr("rendered prompt is over the %d-byte limit", o.max)
	}
	if n > cap(o.b) {
		// Grow by doubling, and count what is allocated.
		c := max(2*cap(o.b), n, 256)
		c = min(c, o.max)
		if err := e.charge(c); err != nil {
			return err
		}
		nb := make([]byte, len(o.b), c)
		copy(nb, o.b)
		o.b = nb
	}
	o.b = append(o.b, s...)
	return nil
}

// capture renders body into a string.
func (e *evaluator) capture(body []stmt, s *scope) (string, error) {
	saved := e.out
	buf := &outBuf{max: e.lim.MaxStringBytes, capture: true}
	e.out = buf
	_, err := e.execBody(body, s)
	e.out = saved
	if err != nil {
		return "", err
	}
	if err := e.charge(len(buf.b)); err != nil {
		return "", err
	}
	return string(buf.b), nil
}

func (e *evaluator) lookup(name string, s *scope) Value {
	for sc := s; sc != nil; sc = sc.parent {
		for i := range sc.vars {
			if sc.vars[i].name == name {
				return sc.vars[i].val
			}
		}
		if sc.top != nil {
			if v, ok := sc.top[name]; ok {
				return v
			}
		}
	}
	if v, ok := e.vars[name]; ok {
		return v
	}
	if v, ok := globals[name]; ok {
		return v
	}
	return Undefined{name: name}
}

func (e *evaluator) execBody(body []stmt, s *scope) (ctrl, error) {
	for _, st := range body {
		if err := e.step(); err != nil {
			return ctrlNone, at(st.stmtPos(), err)
		}
		c, err := e.exec(st, s)
		if err != nil || c != ctrlNone {
			return c, err
		}
	}
	return ctrlNone, nil
}

func (e *evaluator) exec(st stmt, s *scope) (ctrl, error) {
	switch n := st.(type) {
	case *textStmt:
		return ctrlNone, at(n.off, e.write(n.text))
	case *outputStmt:
		v, err := e.eval(n.x, s)
		if err != nil {
			return ctrlNone, err
		}
		return ctrlNone, at(n.off, e.writeValue(v))
	case *ifStmt:
		for i, c := range n.conds {
			v, err := e.eval(c, s)
			if err != nil {
				return ctrlNone, err
			}
			if truthy(v) {
				return e.execBody(n.bodies[i], s)
			}
		}
		return e.execBody(n.els, s)
	case *forStmt:
		return ctrlNone, e.execFor(n, s)
	case *setStmt:
		v, err := e.eval(n.x, s)
		if err != nil {
			return ctrlNone, err
		}
		return ctrlNone, at(n.off, e.assign(n.target, v, s))
	case *setBlockStmt:
		str, err := e.capture(n.body, newScope(s))
		if err != nil {
			return ctrlNone, err
		}
		var v Value = str
		if n.filter != nil {
			if v, err = e.evalFilter(n.filter, s, str); err != nil {
				return ctrlNone, err
			}
		}
		return ctrlNone, at(n.off, e.assign(n.target, v, s))
	case *macroStmt:
		s.set(n.m.name, &macroVal{def: n.m, closure: s})
		return ctrlNone, nil
	case *callBlockStmt:
		caller := &macroVal{def: n.caller, closure: s}
		v, err := e.evalCall(n.call, s, caller)
		if err != nil {
			return ctrlNone, err
		}
		return ctrlNone, at(n.off, e.writeValue(v))
	case *filterBlockStmt:
		str, err := e.capture(n.body, newScope(s))
		if err != nil {
			return ctrlNone, err
		}
		v, err := e.evalFilter(n.filter, s, str)
		if err != nil {
			return ctrlNone, err
		}
		return ctrlNone, at(n.off, e.writeValue(v))
	case *withStmt:
		inner := newScope(s)
		vals := make([]Value, len(n.values))
		for i, x := range n.values {
			v, err := e.eval(x, s)
			if err != nil {
				return ctrlNone, err
			}
			vals[i] = v
		}
		for i, t := range n.targets {
			if err := e.assign(t, vals[i], inner); err != nil {
				return ctrlNone, at(n.off, err)
			}
		}
		return e.execBody(n.body, inner)
	case *scopeStmt:
		return e.execBody(n.body, newScope(s))
	case *breakStmt:
		return ctrlBreak, nil
	case *continueStmt:
		return ctrlContinue, nil
	}
	return ctrlNone, fmt.Errorf("internal error: unknown statement %T", st)
}

func (e *evaluator) assign(t target, v Value, s *scope) error {
	switch n := t.(type) {
	case *nameTarget:
		s.set(n.name, v)
		return nil
	case *nsTarget:
		ns, ok := e.lookup(n.name, s).(*Namespace)
		if !ok {
			return fmt.Errorf("cannot assign attribute on non-namespace object '%s'", n.name)
		}
		ns.d.SetString(n.attr, v)
		return nil
	case *tupleTarget:
		items, err := e.unpack(v, len(n.items))
		if err != nil {
			return err
		}
		for i, sub := range n.items {
			if err := e.assign(sub, items[i], s); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("internal error: unknown target %T", t)
}

func (e *evaluator) unpack(v Value, n int) ([]Value, error) {
	switch v.(type) {
	case List, Tuple, string, *Dict, Range:
	default:
		return nil, fmt.Errorf("cannot unpack non-iterable %s object", typeName(v))
	}
	items, err := e.iterate(v)
	if err != nil {
		return nil, err
	}
	if len(items) > n {
		return nil, fmt.Errorf("too many values to unpack (expected %d)", n)
	}
	if len(items) < n {
		return nil, fmt.Errorf("not enough values to unpack (expected %d, got %d)", n, len(items))
	}
	return items, nil
}

// loopObj is the loop variable of a for loop.
type loopObj struct {
	index0, length int
	items          []Value
	rng            *Range
	lastChanged    Value
	changedSet     bool
}

func (l *loopObj) item(i int) Value {
	if l.rng != nil {
		return l.rng.At(int64(i))
	}
	return l.items[i]
}

func (e *evaluator) execFor(n *forStmt, s *scope) error {
	it, err := e.eval(n.iter, s)
	if err != nil {
		return err
	}
	lp := &loopObj{}
	if r, ok := it.(Range); ok && n.cond == nil {
		lp.rng = &r
		lp.length = int(r.Len())
	} else {
		items, err := e.iterate(it)
		if err != nil {
			return at(n.iter.exprPos(), err)
		}
		if n.cond != nil {
			kept := make([]Value, 0, len(items))
			for _, item := range items {
				if err := e.step(); err != nil {
					return at(n.off, err)
				}
				sc := newScope(s)
				if err := e.assign(n.target, item, sc); err != nil {
					return at(n.off, err)
				}
				ok, err := e.eval(n.cond, sc)
				if err != nil {
					return err
				}
				if truthy(ok) {
					kept = append(kept, item)
				}
			}
			items = kept
		}
		lp.items = items
		lp.length = len(items)
	}
	if lp.length == 0 {
		if len(n.els) > 0 {
			_, err := e.execBody(n.els, newScope(s))
			return err
		}
		return nil
	}
	// One scope per iteration, as jinja2 scopes them; reused when nothing
	// in the body can keep it (a macro or call block defined there would).
	var sc *scope
	for i := 0; i < lp.length; i++ {
		if err := e.step(); err != nil {
			return at(n.off, err)
		}
		if sc == nil || n.captures {
			sc = newScope(s)
		} else {
			sc.reset()
		}
		if err := e.assign(n.target, lp.item(i), sc); err != nil {
			return at(n.off, err)
		}
		lp.index0 = i
		sc.set("loop", lp)
		c, err := e.execBody(n.body, sc)
		if err != nil {
			return err
		}
		if c == ctrlBreak {
			break
		}
	}
	return nil
}

// str is Python's str(v), bounded by MaxStringBytes.
func (e *evaluator) str(v Value) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case Markup:
		return string(x), nil
	case List, Tuple, *Dict, *Namespace:
		b := &limBuf{max: e.lim.MaxStringBytes}
		if !writeRepr(b, x, 0) {
			if b.over {
				return "", limitErr("printed value is over the %d-byte limit", e.lim.MaxStringBytes)
			}
			return "", fmt.Errorf("value nests too deeply to print")
		}
		if err := e.charge(b.Len()); err != nil {
			return "", err
		}
		return b.String(), nil
	}
	return scalarStr(v), nil
}

// repr is Python's repr(v), bounded by MaxStringBytes.
func (e *evaluator) repr(v Value) (string, error) {
	if s, ok := v.(string); ok {
		b := &limBuf{max: e.lim.MaxStringBytes}
		pyQuote(b, s)
		if b.over {
			return "", limitErr("printed value is over the %d-byte limit", e.lim.MaxStringBytes)
		}
		return b.String(), e.charge(b.Len())
	}
	if _, ok := v.(Undefined); ok {
		return "Undefined", nil
	}
	return e.str(v)
}
