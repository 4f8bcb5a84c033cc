package toolcall

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// answer is what a parse made of an answer: its text and its calls, each
// with the arguments its Args events added up to.
type answer struct {
	text      string
	reasoning string
	calls     []Call
	args      []string
	order     []Kind // the kinds in order, for the shape of the stream
}

func collect(t *testing.T, p *Parser, chunks []string) answer {
	t.Helper()
	var a answer
	add := func(evs []Event) {
		for _, e := range evs {
			a.order = append(a.order, e.Kind)
			switch e.Kind {
			case Text:
				a.text += e.Text
			case Reasoning:
				a.reasoning += e.Text
			case Start:
				if e.Index != len(a.args) || e.Call.ID == "" || e.Call.Name == "" {
					t.Fatalf("start %+v after %d calls", e, len(a.args))
				}
				a.args = append(a.args, "")
			case Args:
				if e.Index != len(a.args)-1 {
					t.Fatalf("arguments for call %d while call %d is open", e.Index, len(a.args)-1)
				}
				a.args[e.Index] += e.Text
			case End:
				if e.Index != len(a.calls) || e.Index != len(a.args)-1 {
					t.Fatalf("end of call %d: %d ended, %d started", e.Index, len(a.calls), len(a.args))
				}
				a.calls = append(a.calls, e.Call)
			}
		}
	}
	for _, c := range chunks {
		add(p.Push(c))
	}
	add(p.Flush())
	return a
}

// want is a call as the test expects it: name and arguments (compared as
// JSON values).
type want struct {
	name, args string
}

// realOutputs are answers as each family's models write them (the
// formats their chat templates show in the history and their model cards
// document): several calls, arguments nested, with unicode, braces and
// quotes inside strings, text before a call, the keys in the other order.
var realOutputs = []struct {
	name  string
	f     Format
	out   string
	text  string
	calls []want
}{
	{"qwen2.5 two calls", Hermes,
		"<tool_call>\n{\"name\": \"get_current_temperature\", \"arguments\": {\"location\": \"San Francisco, CA, USA\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_temperature_date\", \"arguments\": {\"location\": \"San Francisco, CA, USA\", \"date\": \"2024-10-01\"}}\n</tool_call>",
		"", []want{{"get_current_temperature", `{"location": "San Francisco, CA, USA"}`}, {"get_temperature_date", `{"location": "San Francisco, CA, USA", "date": "2024-10-01"}`}}},
	{"qwen3 thinking, then a call with unicode", Hermes,
		"<think>\nThe user asks about 東京; I should call get_weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"東京\", \"note\": \"très chaud 😀\"}}\n</tool_call>",
		"<think>\nThe user asks about 東京; I should call get_weather.\n</think>", []want{{"get_weather", `{"city": "東京", "note": "très chaud 😀"}`}}},
	{"hermes text before, nested arguments, braces in strings", Hermes,
		"Let me search that for you.\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": {\"filters\": [{\"field\": \"città\", \"eq\": \"Zürich }\"}], \"limit\": 5}, \"raw\": \"a \\\"quoted\\\" {brace\"}}\n</tool_call>",
		"Let me search that for you.", []want{{"search", `{"query": {"filters": [{"field": "città", "eq": "Zürich }"}], "limit": 5}, "raw": "a \"quoted\" {brace"}`}}},
	{"hermes 2 pro: arguments before the name", Hermes,
		"<tool_call>\n{\"arguments\": {\"symbol\": \"TSLA\"}, \"name\": \"get_stock_fundamentals\"}\n</tool_call>",
		"", []want{{"get_stock_fundamentals", `{"symbol": "TSLA"}`}}},
	{"hermes arguments as a JSON string", Hermes,
		"<tool_call>\n{\"name\": \"get_time\", \"arguments\": \"{\\\"zone\\\": \\\"Europe/Paris\\\"}\"}\n</tool_call>",
		"", []want{{"get_time", `{"zone": "Europe/Paris"}`}}},
	{"hermes plain answer", Hermes, "The weather in Paris is sunny, 22°C. <b>Enjoy</b>", "The weather in Paris is sunny, 22°C. <b>Enjoy</b>", nil},
	{"hermes tag without JSON is text", Hermes, "Use <tool_call> tags like this.", "Use <tool_call> tags like this.", nil},

	{"llama 3.1 json call", Llama,
		`{"name": "get_current_conditions", "parameters": {"location": "San Francisco, CA", "unit": "Fahrenheit"}}`,
		"", []want{{"get_current_conditions", `{"location": "San Francisco, CA", "unit": "Fahrenheit"}`}}},
	{"llama 3.3 with type, python tag and two calls", Llama,
		"<|python_tag|>{\"type\": \"function\", \"name\": \"get_weather\", \"parameters\": {\"city\": \"München\", \"days\": [1, 2]}}; {\"name\": \"get_time\", \"parameters\": {\"zone\": \"CET\"}}",
		"", []want{{"get_weather", `{"city": "München", "days": [1, 2]}`}, {"get_time", `{"zone": "CET"}`}}},
	{"llama answer that mentions json", Llama, `The call would be {"name": "x"} but I can answer directly: 4.`, `The call would be {"name": "x"} but I can answer directly: 4.`, nil},
	{"llama json that is not a call", Llama, `{"answer": 4}`, `{"answer": 4}`, nil},

	{"mistral v3 two calls", Mistral,
		"[TOOL_CALLS][{\"name\": \"get_current_weather\", \"arguments\": {\"location\": \"Paris, France\", \"format\": \"celsius\"}}, {\"name\": \"get_current_weather\", \"arguments\": {\"location\": \"Zürich\", \"format\": \"celsius\"}, \"id\": \"a1b2c3d4e\"}]",
		"", []want{{"get_current_weather", `{"location": "Paris, France", "format": "celsius"}`}, {"get_current_weather", `{"location": "Zürich", "format": "celsius"}`}}},
	{"mistral nested", Mistral,
		`[TOOL_CALLS] [{"name": "create_event", "arguments": {"title": "Réunion \"Q3\"", "attendees": [{"name": "Zoë", "tags": ["a", "b"]}], "meta": {}}}]`,
		"", []want{{"create_event", `{"title": "Réunion \"Q3\"", "attendees": [{"name": "Zoë", "tags": ["a", "b"]}], "meta": {}}`}}},
	{"mistral plain answer with brackets", Mistral, "The list is [1, 2] and [TOOL] is not a marker.", "The list is [1, 2] and [TOOL] is not a marker.", nil},

	{"mistral small 3.2", MistralArgs,
		`[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "units": {"temp": "°C"}}[TOOL_CALLS]get_time[ARGS]{"zone": "Europe/Paris"}`,
		"", []want{{"get_weather", `{"city": "Paris", "units": {"temp": "°C"}}`}, {"get_time", `{"zone": "Europe/Paris"}`}}},
	{"mistral small 3.2 with a call id", MistralArgs,
		`[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Lyon"}`,
		"", []want{{"get_weather", `{"city": "Lyon"}`}}},
}

func sameJSON(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// chunkings splits s at rune boundaries: whole, rune by rune, and at
// random places (what a model's tokens look like).
func chunkings(r *rand.Rand, s string) [][]string {
	out := [][]string{{s}}
	var runes []string
	for _, c := range s {
		runes = append(runes, string(c))
	}
	out = append(out, runes)
	for range 20 {
		var ch []string
		for i := 0; i < len(runes); {
			n := 1 + r.IntN(6)
			ch = append(ch, strings.Join(runes[i:min(i+n, len(runes))], ""))
			i += n
		}
		out = append(out, ch)
	}
	return out
}

// Each family's real output parses into its text and calls, however the
// answer is cut into streamed pieces: the same text, the same calls, and
// the Args pieces of each call add up to its arguments.
func TestParseRealOutputs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range realOutputs {
		for _, chunks := range chunkings(r, tc.out) {
			a := collect(t, NewParser(tc.f), chunks)
			where := fmt.Sprintf("%s (%d pieces)", tc.name, len(chunks))
			if a.text != tc.text {
				t.Errorf("%s: text %q, want %q", where, a.text, tc.text)
			}
			if len(a.calls) != len(tc.calls) {
				t.Fatalf("%s: %d calls %+v, want %d", where, len(a.calls), a.calls, len(tc.calls))
			}
			for i, c := range a.calls {
				w := tc.calls[i]
				if c.Name != w.name || !sameJSON(c.Arguments, w.args) || !c.Valid {
					t.Errorf("%s: call %d = %s(%s) valid %v, want %s(%s)", where, i, c.Name, c.Arguments, c.Valid, w.name, w.args)
				}
				if a.args[i] != c.Arguments {
					t.Errorf("%s: call %d's Args pieces add up to %q, its arguments are %q", where, i, a.args[i], c.Arguments)
				}
				if !strings.Contains(tc.out, strings.TrimSpace(c.Raw)) || !utf8.ValidString(c.Raw) {
					t.Errorf("%s: call %d's raw text %q is not in the output", where, i, c.Raw)
				}
				if id := c.ID; tc.f == Mistral || tc.f == MistralArgs {
					if len(id) != 9 || mistralID(id) != id {
						t.Errorf("%s: Mistral call id %q is not 9 letters and digits", where, id)
					}
				} else if !strings.HasPrefix(id, "call_") || len(id) != 29 {
					t.Errorf("%s: call id %q", where, id)
				}
			}
		}
	}
}

// Arguments stream while they are written: a call's name goes out as
// soon as it is read and its arguments before the call ends, not in one
// piece at the end.
func TestParseStreamsArguments(t *testing.T) {
	out := "<tool_call>\n{\"name\": \"write\", \"arguments\": {\"text\": \"" + strings.Repeat("word ", 40) + "\"}}\n</tool_call>"
	p := NewParser(Hermes)
	var pieces, starts int
	for i := 0; i < len(out); i += 4 {
		for _, e := range p.Push(out[i:min(i+4, len(out))]) {
			switch e.Kind {
			case Start:
				starts++
				if i > len(`<tool_call>\n{"name": "write", "`)+4 {
					t.Errorf("the name went out at byte %d, after the arguments began", i)
				}
			case Args:
				pieces++
			}
		}
	}
	p.Flush()
	if starts != 1 || pieces < 40 {
		t.Errorf("%d starts, %d argument pieces: arguments should stream", starts, pieces)
	}
}

// An answer cut short (max_tokens) inside a call ends the call, not
// valid, with what was written; cut before the name was read, it is text.
func TestParseCutShort(t *testing.T) {
	a := collect(t, NewParser(Hermes), []string{"Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par"})
	if a.text != "Sure." || len(a.calls) != 1 || a.calls[0].Valid || a.calls[0].Name != "get_weather" || a.args[0] != `{"city": "Par` {
		t.Errorf("cut in the arguments: %+v", a)
	}
	a = collect(t, NewParser(Hermes), []string{"Sure.\n<tool_call>\n{\"na"})
	if a.text != "Sure.\n<tool_call>\n{\"na" || len(a.calls) != 0 {
		t.Errorf("cut before the name: %+v", a)
	}
	a = collect(t, NewParser(Mistral), []string{"[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}"})
	if len(a.calls) != 1 || !a.calls[0].Valid || a.text != "" {
		t.Errorf("cut before Mistral's ']': %+v", a)
	}
	a = collect(t, NewParser(Hermes), []string{"<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool"})
	if len(a.calls) != 1 || !a.calls[0].Valid || a.text != "" {
		t.Errorf("cut in the closing tag: %+v", a)
	}
	// A marker cut short at the end is text.
	a = collect(t, NewParser(Hermes), []string{"see <tool_ca"})
	if a.text != "see <tool_ca" {
		t.Errorf("partial marker: %+v", a)
	}
}

// Whitespace between and after calls is not answer text; whitespace of
// an answer without calls is.
func TestParseWhitespace(t *testing.T) {
	a := collect(t, NewParser(Hermes), []string{"\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n\n"})
	if a.text != "" || len(a.calls) != 1 {
		t.Errorf("%+v", a)
	}
	a = collect(t, NewParser(Llama), []string{"  \n"})
	if a.text != "  \n" {
		t.Errorf("%+v", a)
	}
}

func TestDetectTemplates(t *testing.T) {
	want := map[string]Format{
		"Qwen-Qwen2.5-7B-Instruct.jinja":                      Hermes,
		"Qwen-Qwen3-0.6B.jinja":                               Hermes,
		"Qwen-QwQ-32B.jinja":                                  Hermes,
		"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja":   Hermes,
		"meta-llama-Llama-3.1-8B-Instruct.jinja":              Llama,
		"meta-llama-Llama-3.2-3B-Instruct.jinja":              Llama,
		"mistralai-Mistral-Nemo-Instruct-2407.jinja":          Mistral,
		"mistralai-Mistral-Large-Instruct-2407.jinja":         Mistral,
		"Mistral-Small-3.2-24B-Instruct-2506.jinja":           MistralArgs,
		"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja":      DeepSeekR1,
		"deepseek-ai-DeepSeek-V3.1.jinja":                     DeepSeekV31,
		"ibm-granite-granite-3.3-2B-Instruct.jinja":           Granite,
		"ibm-granite-granite-3.0-8b-instruct.jinja":           Granite, // its template wants tool turns as role tool_response
		"CohereForAI-c4ai-command-r-plus-tool_use.jinja":      CommandR,
		"CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": CommandR7B,
		"openai-gpt-oss-120b.jinja":                           Harmony,
		"meetkai-functionary-medium-v3.1.jinja":               FunctionaryV31,
		"meetkai-functionary-medium-v3.2.jinja":               FunctionaryV32,
	}
	ents, err := templateFiles()
	if err != nil {
		t.Skip(err)
	}
	for name, src := range ents {
		got := Detect(src)
		if got != want[name] { // every other template: None
			t.Errorf("%s: %v, want %v", name, got, want[name])
		}
	}
	if len(ents) < 40 {
		t.Errorf("only %d templates read", len(ents))
	}
}

// Whatever the model writes (fragments of calls, markers, brackets,
// quotes and text, in random order), the parse does not depend on how
// the answer was cut into pieces, and each call's Args pieces add up to
// its arguments.
func TestParseAnyTextIsChunkingIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	frags := []string{"<tool_call>", "</tool_call>", "[TOOL_CALLS]", "[ARGS]", "<|python_tag|>", "{", "}", "[", "]", `"`, `\`, ",", ";", ":", " ", "\n",
		`{"name": "f", "arguments": `, `{"a": 1}`, `"name"`, `"arguments"`, `"parameters"`, "get_time", "héllo", "😀", "text",
		dsCallsBegin, dsCallBegin, dsSep, dsCallEnd, dsCallsEnd, "function", "```json", "```", graniteMarker, cohereAction, `"tool_name"`,
		r7bBegin, r7bEnd, hStart, "assistant", hChannel, "analysis", "final", " to=functions.f ", hMessage, hEnd, hCall, fnOpen, "f>", fnClose, fnTo, "all\n", "[get_time(", "a=1", "b='x'", ")", "True"}
	starts := map[Format]string{Hermes: "<tool_call>\n{\"name\": \"f\", \"arguments\": ", Llama: `{"name": "f", "parameters": `,
		Mistral: `[TOOL_CALLS][{"name": "f", "arguments": `, MistralArgs: "[TOOL_CALLS]get_time[ARGS]",
		DeepSeekR1: dsCallsBegin + dsCallBegin + "function" + dsSep + "f\n```json\n", DeepSeekV31: dsCallBegin + "f" + dsSep,
		Granite: graniteMarker + `[{"name": "f", "arguments": `, CommandR: cohereAction + "\n```json\n[{\"tool_name\": \"f\", \"parameters\": ",
		CommandR7B: r7bBegin + `[{"tool_name": "f", "parameters": `, Harmony: hChannel + "commentary to=functions.f" + hMessage, FunctionaryV31: fnOpen + "f>",
		FunctionaryV32: "f\n"}
	for _, f := range []Format{MistralArgs, DeepSeekR1, DeepSeekV31, Harmony, FunctionaryV31, FunctionaryV32} {
		starts[f] += "{" // the arguments begin at once: the JSON is theirs
	}
	for _, f := range allFormats {
		calls, valid := 0, 0
		for range 400 {
			var b strings.Builder
			if r.IntN(2) == 0 { // most often, a call's beginning first
				b.WriteString(starts[f])
			}
			for range 1 + r.IntN(14) {
				b.WriteString(frags[r.IntN(len(frags))])
			}
			out := b.String()
			want := collect(t, NewParser(f), []string{out})
			calls += len(want.calls)
			for _, c := range want.calls {
				if c.Valid {
					valid++
				}
			}
			for _, ch := range chunkings(r, out)[1:4] {
				got := collect(t, NewParser(f), ch)
				if got.text != want.text || got.reasoning != want.reasoning || len(got.calls) != len(want.calls) {
					t.Fatalf("%v %q: whole gives %q (reasoning %q) %d calls, in %d pieces %q (%q) %d calls", f, out, want.text, want.reasoning, len(want.calls), len(ch), got.text, got.reasoning, len(got.calls))
				}
				for i := range got.calls {
					g, w := got.calls[i], want.calls[i]
					if g.Name != w.Name || g.Arguments != w.Arguments || g.Valid != w.Valid || g.Raw != w.Raw || got.args[i] != g.Arguments {
						t.Fatalf("%v %q: call %d whole %+v, in pieces %+v (args pieces %q)", f, out, i, w, g, got.args[i])
					}
				}
			}
		}
		t.Logf("%v: %d calls, %d valid", f, calls, valid)
		if calls < 20 {
			t.Errorf("%v: only %d calls in 400 answers: the fragments should make some", f, calls)
		}
	}
}
