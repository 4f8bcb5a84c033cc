package chattemplate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgectl/edgectl/format/chattemplate/jinja"
)

// What one hostile template may cost: it fails on a limit (most within
// milliseconds, the endless loops on the step budget in about 0.3 s; the
// 2.5 s bound is the 2 s render deadline plus slack for a loaded CI
// machine) with its heap and stacks growing by less than 64 MiB at peak.
const (
	hostileTime   = 2500 * time.Millisecond
	hostileMemory = 64 << 20
)

// peakHeapGrowth runs f and reports the largest growth of the in-use heap
// and stacks seen while it ran (sampled every millisecond, and at the end).
func peakHeapGrowth(f func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse + ms.StackInuse
	var peak atomic.Uint64
	sample := func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		if in := m.HeapInuse + m.StackInuse; in > base && in-base > peak.Load() {
			peak.Store(in - base)
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	f()
	sample()
	close(done)
	wg.Wait()
	return peak.Load()
}

// hostileCase is one hostile template and a piece of the error it must give
// (alternatives separated by "|"; "no error" where it must render
// harmlessly).
type hostileCase struct {
	name, src, want string
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func hostileCorpus(t *testing.T) []hostileCase {
	files, err := filepath.Glob("testdata/hostile/*.jinja")
	if err != nil || len(files) < 30 {
		t.Fatalf("hostile corpus: %d files, %v", len(files), err)
	}
	var cases []hostileCase
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		want, ok := strings.CutPrefix(src, "{# want: ")
		if !ok {
			t.Fatalf("%s: starts with no {# want: … #} comment", f)
		}
		want = want[:strings.Index(want, " #}")]
		cases = append(cases, hostileCase{filepath.Base(f), src, want})
	}
	// Inputs too big or too regular for a file.
	deep := func(open, mid, close string, n int) string {
		return strings.Repeat(open, n) + mid + strings.Repeat(close, n)
	}
	items := strings.TrimSuffix(strings.Repeat("1,", 250_000), ",")
	pairs := strings.TrimSuffix(strings.Repeat("'k': 1, ", 60_000), ", ")
	cases = append(cases,
		hostileCase{"200k nested parens", "{{ " + deep("(", "1", ")", 200_000) + " }}", "nests deeper than"},
		hostileCase{"100k nested lists", "{{ " + deep("[", "1", "]", 100_000) + " }}", "nests deeper than"},
		hostileCase{"20k nested dicts", "{{ " + deep("{'a': ", "1", "}", 20_000) + " }}", "nests deeper than"},
		hostileCase{"10k nested ifs", deep("{% if true %}", "x", "{% endif %}", 10_000), "nests deeper than"},
		hostileCase{"10k nested for loops", deep("{% for m in messages %}", "x", "{% endfor %}", 10_000), "nests deeper than"},
		hostileCase{"10k nested macros", deep("{% macro m() %}", "x", "{% endmacro %}", 10_000), "nests deeper than"},
		hostileCase{"100k not", "{{ " + strings.Repeat("not ", 100_000) + "x }}", "nests deeper than"},
		hostileCase{"100k unary minus", "{{ " + strings.Repeat("-", 100_000) + "1 }}", "nests deeper than"},
		hostileCase{"100k additions", "{{ 1" + strings.Repeat(" + 1", 100_000) + " }}", "nests deeper than"},
		hostileCase{"100k attribute chain", "{{ messages" + strings.Repeat(".x", 100_000) + " }}", "nests deeper than"},
		hostileCase{"70k filter chain", "{{ 1" + strings.Repeat("|string", 70_000) + " }}", "nests deeper than"},
		hostileCase{"40k conditional chain", "{{ 1" + strings.Repeat(" if 1 else 1", 40_000) + " }}", "nests deeper than"},
		hostileCase{"recursion through deep blocks", "{% macro r(n) %}" + deep("{% if true %}", "{{ "+deep("(", "r(n)", ")", 40)+" }}", "{% endif %}", 8) + "{% endmacro %}{{ r(0) }}", "macro calls nest deeper than"},
		hostileCase{"recursion through deep expressions", "{% macro r(n) %}{{ " + deep("[", "r(n)"+strings.Repeat("|string", 300), "]", 45) + " }}{% endmacro %}{{ r(0) }}", "macro calls nest deeper than"},
		hostileCase{"250k-item list literal", "{{ [" + items + "]|length }}", "no error"},
		hostileCase{"60k-key dict literal", "{{ {" + pairs + "}|length }}", "no error"},
		hostileCase{"1 MiB template", strings.Repeat("x", 1<<20), "over the 524288-byte limit"},
	)
	return cases
}

// TestHostileTemplates runs every hostile template: each gives a clear error
// (or, where marked, renders harmlessly) within a second and some tens of
// MiB, and no error or output carries a local file's content or the
// process environment.
func TestHostileTemplates(t *testing.T) {
	const secret = "edgectl-test-secret-5d1f"
	t.Setenv("EDGECTL_HOSTILE_SECRET", secret)
	passwd, _ := os.ReadFile("/etc/passwd")
	msgs := []Message{{Role: "user", Content: "hello"}}
	for _, c := range hostileCorpus(t) {
		var out string
		var err error
		start := time.Now()
		peak := peakHeapGrowth(func() {
			var tm *Template
			if tm, err = Parse(c.src); err == nil {
				out, err = tm.Render(context.Background(), msgs, Vars{})
			}
		})
		took := time.Since(start)
		switch {
		case c.want == "no error" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "no error" && err == nil:
			t.Errorf("%s: rendered %d bytes, want an error containing %q", c.name, len(out), c.want)
		case err != nil && !containsAny(err.Error(), strings.Split(c.want, "|")):
			t.Errorf("%s: error %q does not contain %q", c.name, err, c.want)
		case errors.Is(err, jinja.ErrInternal):
			t.Errorf("%s: %v", c.name, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "chat template") {
			t.Errorf("%s: error %q does not say it is the chat template's", c.name, err)
		}
		for _, leak := range []string{secret, "root:x:0:0", "PATH=", "HOME="} {
			if strings.Contains(out, leak) || (err != nil && strings.Contains(err.Error(), leak)) {
				t.Errorf("%s: output or error carries %q", c.name, leak)
			}
		}
		if len(passwd) > 0 && len(out) > 0 && strings.Contains(out, string(passwd[:min(len(passwd), 32)])) {
			t.Errorf("%s: output carries /etc/passwd", c.name)
		}
		if took > hostileTime {
			t.Errorf("%s: took %v", c.name, took)
		}
		if peak > hostileMemory {
			t.Errorf("%s: heap grew by %d MiB", c.name, peak>>20)
		}
		if testing.Verbose() {
			t.Logf("%-36s %6.0f ms %4d MiB  %v", c.name, float64(took.Microseconds())/1000, peak>>20, err)
		}
	}
}
