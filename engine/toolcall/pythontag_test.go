package toolcall

import (
	"strings"
	"testing"
)

// Code after <|python_tag|> streams: the code_interpreter call starts and
// its arguments grow while the code is written, before the answer ends.
func TestPythonTagCodeStreams(t *testing.T) {
	p := NewParser(Llama)
	var started bool
	var args string
	for _, piece := range []string{"<|python_tag|>", "import ", "os\n", "print(", "os.getcwd())"} {
		for _, e := range p.Push(piece) {
			switch e.Kind {
			case Start:
				started = e.Call.Name == codeTool
			case Args:
				args += e.Text
			}
		}
	}
	if !started || args != `{"code": "import os\nprint(os.getcwd())` {
		t.Fatalf("before the end: started %v, arguments so far %q", started, args)
	}
	for _, e := range p.Flush() {
		if e.Kind == Args {
			args += e.Text
		}
		if e.Kind == End && (e.Call.Arguments != args || !e.Call.Valid || e.Call.Arguments != `{"code": "import os\nprint(os.getcwd())"}`) {
			t.Errorf("end %+v, streamed %q", e.Call, args)
		}
	}
}

// Hostile built-in calls stay bounded: a parenthesis that does not close
// within maxPythonic bytes, or a name that never ends, is code, streamed
// as it comes rather than held.
func TestPythonTagBounds(t *testing.T) {
	open := `<|python_tag|>brave_search.call(query="` + strings.Repeat("x", maxPythonic)
	long := "<|python_tag|>" + strings.Repeat("a", 4096)
	for _, out := range []string{open, long} {
		p := NewParser(Llama)
		var streamed int
		for i := 0; i < len(out); i += 512 {
			for _, e := range p.Push(out[i:min(i+512, len(out))]) {
				if e.Kind == Args {
					streamed += len(e.Text)
				}
			}
		}
		a := collect(t, NewParser(Llama), []string{out})
		if streamed == 0 || len(a.calls) != 1 || a.calls[0].Name != codeTool || !a.calls[0].Valid || a.calls[0].Raw != out {
			t.Errorf("%d bytes: streamed %d bytes of arguments before the end; calls %d", len(out), streamed, len(a.calls))
		}
	}
}
