package jinja

// Statement nodes.
type stmt interface{ stmtPos() int }

// Expression nodes. depth is how deep the node's subtree is: the evaluator
// recurses over it, so the parser bounds it (Limits.MaxNesting).
type expr interface {
	exprPos() int
	exprDepth() int
}

type sbase struct{ off int }

func (b sbase) stmtPos() int { return b.off }

type ebase struct{ off, depth int32 }

func (b *ebase) exprPos() int   { return int(b.off) }
func (b *ebase) exprDepth() int { return int(b.depth) }

type (
	textStmt struct {
		sbase
		text string
	}
	outputStmt struct {
		sbase
		x expr
	}
	ifStmt struct {
		sbase
		conds  []expr
		bodies [][]stmt
		els    []stmt
	}
	forStmt struct {
		sbase
		target     target
		iter, cond expr // cond may be nil
		body, els  []stmt
		captures   bool // the body defines a macro or call block
	}
	setStmt struct {
		sbase
		target target
		x      expr
	}
	// setBlockStmt is {% set x %}…{% endset %}, optionally filtered.
	setBlockStmt struct {
		sbase
		target target
		filter *filterExpr // chain whose innermost arg is nil: the body
		body   []stmt
	}
	macroStmt struct {
		sbase
		m *macroDef
	}
	callBlockStmt struct {
		sbase
		call   *callExpr
		caller *macroDef
	}
	filterBlockStmt struct {
		sbase
		filter *filterExpr
		body   []stmt
	}
	withStmt struct {
		sbase
		targets []target
		values  []expr
		body    []stmt
	}
	// scopeStmt renders its body in a scope of its own ({% generation %}).
	scopeStmt struct {
		sbase
		body []stmt
	}
	breakStmt    struct{ sbase }
	continueStmt struct{ sbase }
)

// macroDef is a macro's (or a call block's caller's) signature and body.
type macroDef struct {
	name     string
	params   []string
	defaults []expr // for the last len(defaults) params
	body     []stmt
	// What the body reads, which decides what a call may pass (as jinja2).
	usesVarargs, usesKwargs, usesCaller bool
}

// Assignment targets.
type target interface{ targetPos() int }

type (
	nameTarget struct {
		off  int
		name string
	}
	tupleTarget struct {
		off   int
		items []target
	}
	nsTarget struct {
		off        int
		name, attr string
	}
)

func (t *nameTarget) targetPos() int  { return t.off }
func (t *tupleTarget) targetPos() int { return t.off }
func (t *nsTarget) targetPos() int    { return t.off }

type (
	constExpr struct {
		ebase
		v Value
	}
	nameExpr struct {
		ebase
		name string
	}
	listExpr struct {
		ebase
		items []expr
	}
	tupleExpr struct {
		ebase
		items []expr
	}
	dictExpr struct {
		ebase
		keys, vals []expr
	}
	getattrExpr struct {
		ebase
		x    expr
		name string
	}
	getitemExpr struct {
		ebase
		x, key expr
	}
	sliceExpr struct {
		ebase
		x                 expr
		start, stop, step expr // nil when absent
	}
	callExpr struct {
		ebase
		fn          expr
		args        []expr
		kwNames     []string
		kwVals      []expr
		star, dstar expr
	}
	filterExpr struct {
		ebase
		x           expr // nil for the innermost filter of a filter block
		name        string
		args        []expr
		kwNames     []string
		kwVals      []expr
		star, dstar expr
	}
	testExpr struct {
		ebase
		x           expr
		name        string
		args        []expr
		kwNames     []string
		kwVals      []expr
		star, dstar expr
	}
	unaryExpr struct {
		ebase
		op string // "-", "+", "not"
		x  expr
	}
	binExpr struct {
		ebase
		op   string // + - * / // % ** ~ and or
		l, r expr
	}
	compareExpr struct {
		ebase
		first expr
		ops   []string // == != < <= > >= in notin
		rest  []expr
	}
	condExpr struct {
		ebase
		cond, then, els expr // els may be nil
	}
)
