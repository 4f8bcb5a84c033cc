package jinja

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

type snippet struct {
	name, src string
	data      string // JSON object of variables, or ""
}

// readSnippets parses testdata/snippets.txt the way render_ref.py does.
func readSnippets(t testing.TB) []snippet {
	t.Helper()
	b, err := os.ReadFile("testdata/snippets.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out []snippet
	var cur *snippet
	var lines []string
	inData := false
	flush := func() {
		if cur != nil {
			cur.src = strings.Join(lines, "\n")
			out = append(out, *cur)
		}
	}
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "=== "):
			flush()
			cur, lines, inData = &snippet{name: line[4:]}, nil, false
		case strings.HasPrefix(line, "--- data"):
			inData = true
		case cur == nil:
		case inData:
			cur.data += line
		default:
			lines = append(lines, line)
		}
	}
	flush()
	return out
}

func testFuncs() map[string]Value {
	return map[string]Value{
		"raise_exception": &Func{Name: "raise_exception", Fn: func(args []Value, _ map[string]Value) (Value, error) {
			return nil, errors.New("raised")
		}},
	}
}

// TestSnippetsLikeJinja2 checks the language, case by case, against what
// Python's jinja2 renders in transformers' environment
// (testdata/snippets_expected.json, written by
// ../testdata/render_ref.py): scoping, whitespace control, operators,
// literals, filters, tests, methods, macros, Python's str() of values, and
// the cases where Python fails.
func TestSnippetsLikeJinja2(t *testing.T) {
	var want map[string]json.RawMessage
	b, err := os.ReadFile("testdata/snippets_expected.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	snips := readSnippets(t)
	if len(snips) != len(want) {
		t.Fatalf("%d snippets but %d expected; rerun ../testdata/render_ref.py", len(snips), len(want))
	}
	for _, s := range snips {
		vars := testFuncs()
		if s.data != "" {
			d, err := FromJSON([]byte(s.data))
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			for i, k := range d.(*Dict).Keys() {
				vars[k.(string)] = d.(*Dict).Values()[i]
			}
		}
		var got string
		tm, err := Parse(s.src, Limits{})
		if err == nil {
			got, err = tm.Render(context.Background(), vars)
		}
		var w string
		if json.Unmarshal(want[s.name], &w) != nil {
			if err == nil {
				t.Errorf("%s: rendered %q, but jinja2 fails: %s", s.name, got, want[s.name])
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", s.name, err)
		} else if got != w {
			t.Errorf("%s:\n got %q\nwant %q", s.name, got, w)
		}
	}
}
