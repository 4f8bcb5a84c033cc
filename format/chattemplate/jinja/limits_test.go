package jinja

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func mustParse(t *testing.T, src string, lim Limits) *Template {
	t.Helper()
	tm, err := Parse(src, lim)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

const endless = `{% for a in range(100000) %}{% for b in range(100000) %}{% for c in range(100000) %}{% endfor %}{% endfor %}{% endfor %}`

// A render stops soon after its context is cancelled.
func TestRenderStopsWhenCancelled(t *testing.T) {
	tm := mustParse(t, endless, Limits{MaxSteps: 1 << 60, Timeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := tm.Render(ctx, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("stopped after %v", d)
	}
}

// Without a deadline in the context, Limits.Timeout bounds the render; with
// one, the context's deadline does.
func TestRenderDeadline(t *testing.T) {
	tm := mustParse(t, endless, Limits{MaxSteps: 1 << 60, Timeout: 60 * time.Millisecond})
	start := time.Now()
	_, err := tm.Render(context.Background(), nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d < 60*time.Millisecond || d > 600*time.Millisecond {
		t.Fatalf("stopped after %v", d)
	}
	tm = mustParse(t, endless, Limits{MaxSteps: 1 << 60, Timeout: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := tm.Render(ctx, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 600*time.Millisecond {
		t.Fatalf("stopped after %v", d)
	}
}

func TestStepBudget(t *testing.T) {
	tm := mustParse(t, `{% for i in range(1000) %}{{ i }}{% endfor %}`, Limits{MaxSteps: 500})
	if _, err := tm.Render(context.Background(), nil); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "500 steps") {
		t.Fatalf("err = %v", err)
	}
	tm = mustParse(t, `{% for i in range(10) %}{{ i }}{% endfor %}`, Limits{MaxSteps: 500})
	if out, err := tm.Render(context.Background(), nil); err != nil || out != "0123456789" {
		t.Fatalf("%q %v", out, err)
	}
}

func TestOutputCap(t *testing.T) {
	lim := Limits{MaxOutputBytes: 100}
	tm := mustParse(t, `{{ "x" * n }}`, lim)
	if out, err := tm.Render(context.Background(), map[string]Value{"n": int64(100)}); err != nil || len(out) != 100 {
		t.Fatalf("%d %v", len(out), err)
	}
	_, err := tm.Render(context.Background(), map[string]Value{"n": int64(101)})
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "rendered prompt is over the 100-byte limit") {
		t.Fatalf("err = %v", err)
	}
}

// Size-producing operations are refused before they allocate.
func TestSizesCheckedBeforeAllocating(t *testing.T) {
	for _, src := range []string{
		`{{ "x" * 10**9 }}`,
		`{{ [1, 2] * 10**9 }}`,
		`{{ ("x" * 1000000).replace("x", "x" * 1000) }}`,
		`{{ "x"|center(10**9) }}`,
		`{{ "%1000000000s" % "x" }}`,
	} {
		tm := mustParse(t, src, Limits{})
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := tm.Render(context.Background(), nil)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrLimit) {
			t.Errorf("%s: err = %v", src, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
			t.Errorf("%s: allocated %d bytes before refusing", src, grew)
		}
	}
}

func TestAllocBudget(t *testing.T) {
	src := `{% set ns = namespace(s="") %}{% for i in range(1000) %}{% set ns.s = ns.s ~ "0123456789" %}{% endfor %}{{ ns.s|length }}`
	if _, err := mustParse(t, src, Limits{MaxAllocBytes: 1 << 20}).Render(context.Background(), nil); !errors.Is(err, ErrLimit) {
		t.Fatalf("err = %v", err)
	}
	if out, err := mustParse(t, src, Limits{}).Render(context.Background(), nil); err != nil || out != "10000" {
		t.Fatalf("%q %v", out, err)
	}
}

func TestNestingLimit(t *testing.T) {
	deep := strings.Repeat("(", 60) + "1" + strings.Repeat(")", 60)
	_, err := Parse("{{ "+deep+" }}", Limits{})
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "nests deeper than 100") {
		t.Fatalf("err = %v", err)
	}
	if out, err := mustParse(t, "{{ "+deep+" }}", Limits{MaxNesting: 200}).Render(context.Background(), nil); err != nil || out != "1" {
		t.Fatalf("%q %v", out, err)
	}
}

func TestCallDepth(t *testing.T) {
	src := `{% macro r(n) %}{% if n > 0 %}{{ r(n - 1) }}{% endif %}.{% endmacro %}{{ r(depth) }}`
	tm := mustParse(t, src, Limits{MaxCallDepth: 5})
	if out, err := tm.Render(context.Background(), map[string]Value{"depth": int64(4)}); err != nil || out != "....." {
		t.Fatalf("%q %v", out, err)
	}
	_, err := tm.Render(context.Background(), map[string]Value{"depth": int64(5)})
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "macro calls nest deeper than 5") {
		t.Fatalf("err = %v", err)
	}
}

// Errors say where: line and column of the tag or expression.
func TestErrorsCarryPosition(t *testing.T) {
	_, err := mustParse(t, "line one\n{% if true %}\n  {{ 1 + 'a' }}\n{% endif %}", Limits{}).Render(context.Background(), nil)
	var e *Error
	if !errors.As(err, &e) || e.Line != 3 || e.Col != 8 || !strings.HasPrefix(err.Error(), "line 3 col 8: unsupported operand type(s) for +") {
		t.Fatalf("err = %v (%+v)", err, e)
	}
	_, err = Parse("a\n\n  {% for x in y %}", Limits{})
	if !errors.As(err, &e) || e.Line != 3 || !errors.Is(err, ErrSyntax) {
		t.Fatalf("err = %v", err)
	}
}

// There is no loader: every tag that would read a file fails at parse time,
// even in a branch that never runs.
func TestNoLoader(t *testing.T) {
	for _, src := range []string{
		`{% include "/etc/passwd" %}`,
		`{% if false %}{% include "x" ignore missing %}{% endif %}`,
		`{% import "/proc/self/environ" as e %}`,
		`{% from "/etc/passwd" import x %}`,
		`{% extends "/etc/passwd" %}`,
	} {
		_, err := Parse(src, Limits{})
		if !errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), "is not allowed: templates render without file access") {
			t.Errorf("%s: err = %v", src, err)
		}
	}
}

// Line endings are normalized as jinja2 does (\r\n and \r become \n, one
// trailing newline is dropped).
func TestNewlineNormalization(t *testing.T) {
	lf := "a{% if true %}\nb\n{% endif %}\nc\n"
	for _, src := range []string{strings.ReplaceAll(lf, "\n", "\r\n"), strings.ReplaceAll(lf, "\n", "\r")} {
		got, err := mustParse(t, src, Limits{}).Render(context.Background(), nil)
		if err != nil || got != "ab\nc" {
			t.Errorf("%q: %q %v", src, got, err)
		}
	}
}

// A Template renders concurrently; each render has its own scopes and
// namespaces.
func TestConcurrentRenders(t *testing.T) {
	tm := mustParse(t, `{% set ns = namespace(n=0) %}{% for i in range(k) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}`, Limits{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(k int64) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				out, err := tm.Render(context.Background(), map[string]Value{"k": k})
				if want := k * (k - 1) / 2; err != nil || out != scalarStr(want) {
					errs <- errors.New(out)
					return
				}
			}
		}(int64(100 + g))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// FromJSON keeps key order and int/float as Python's json.loads does;
// ValueOf sorts Go map keys.
func TestHostData(t *testing.T) {
	v, err := FromJSON([]byte(`{"z": 1, "a": [1.0, 2, {"m": null, "b": true}], "big": 12345678901234567890}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := mustParse(t, `{{ d|tojson }} {{ d }}`, Limits{}).Render(context.Background(), map[string]Value{"d": v})
	if want := `{"z": 1, "a": [1.0, 2, {"m": null, "b": true}], "big": 1.2345678901234567e+19} {'z': 1, 'a': [1.0, 2, {'m': None, 'b': True}], 'big': 1.2345678901234567e+19}`; err != nil || out != want {
		t.Fatalf("%q %v", out, err)
	}
	g, err := ValueOf(map[string]any{"z": 1, "a": []any{"x", 2.5}, "n": nil})
	if err != nil {
		t.Fatal(err)
	}
	out, err = mustParse(t, `{{ g|tojson }}`, Limits{}).Render(context.Background(), map[string]Value{"g": g})
	if err != nil || out != `{"a": ["x", 2.5], "n": null, "z": 1}` {
		t.Fatalf("%q %v", out, err)
	}
	for _, bad := range []string{`{"a": 1} x`, `{"a": `, `[1, 2`} {
		if _, err := FromJSON([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if _, err := FromJSON([]byte(strings.Repeat("[", 5000) + strings.Repeat("]", 5000))); err == nil {
		t.Error("5000-deep JSON accepted")
	}
}

func TestRangeEdges(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`{{ range(-9000000000000000000, 9000000000000000000)|length }}`, "error"},
		{`{{ range(9000000000000000000, -9000000000000000000, -1)|length }}`, "error"},
		{`{{ range(-9223372036854775807, 9223372036854775807, 9223372036854775807)|list }}`, "[-9223372036854775807, 0]"},
		{`{{ range(5, 0, -2)|list }}{{ range(0)|list }}{{ range(3, 1)|list }}`, "[5, 3, 1][][]"},
		{`{{ range(10)[2:8:3]|list }}{{ range(10)[::-1][:2]|list }}`, "[2, 5][9, 8]"},
	} {
		out, err := mustParse(t, c.src, Limits{}).Render(context.Background(), nil)
		if c.want == "error" {
			if !errors.Is(err, ErrLimit) {
				t.Errorf("%s: %q %v", c.src, out, err)
			}
		} else if err != nil || out != c.want {
			t.Errorf("%s: %q %v", c.src, out, err)
		}
	}
}

// Inputs that once could panic the interpreter.
func TestNoPanics(t *testing.T) {
	for _, src := range []string{
		`{{ [1,2,3][::9223372036854775807] }}{{ [1,2,3][::-9223372036854775807] }}{{ 'abc'[::-9223372036854775807] }}`,
		`{{ bad[1] }}{% for c in bad %}{{ c }}{% endfor %}{{ bad|list }}`,
		`{{ '%*s' % (10**12, 'x') }}`,
		`{{ '{:e}'.format(true) }}`,
		`{{ [1]|batch(10**18, 'x') }}`,
		`{{ 'abcdef'|truncate(9223372036854775807) }}`,
		`{{ x.`,
		`{{ x[`,
		`{{ f(`,
		`{% for`,
		`{% set x = [1, 2`,
	} {
		tm, err := Parse(src, Limits{})
		if err == nil {
			_, err = tm.Render(context.Background(), map[string]Value{"bad": "a\xffb\xe2\x82"})
		}
		if errors.Is(err, ErrInternal) {
			t.Errorf("%s: %v", src, err)
		}
	}
}
