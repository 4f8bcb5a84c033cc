package toolcall

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// familyOutputs are answers as the added families' models write them:
// the forms their chat templates render calls in and llama.cpp's
// tests/test-chat.cpp parses (DeepSeek R1 with its thinking, V3.1,
// Granite 3.3, Command R7B, gpt-oss's harmony messages, functionary
// v3.1), Command R+'s "Action:" block as its template asks for it, with
// several calls, text first, nested and unicode arguments.
var familyOutputs = []struct {
	name      string
	f         Format
	out       string
	text      string
	reasoning string
	calls     []want
}{
	{"deepseek r1 thinking then a call", DeepSeekR1,
		"<think>I'm\nthinking</think>\n\n" + dsCallsBegin + dsCallBegin + "function" + dsSep + "special_function\n```json\n{\"arg1\": 1}\n```" + dsCallEnd + dsCallsEnd,
		"<think>I'm\nthinking</think>", "", []want{{"special_function", `{"arg1": 1}`}}},
	{"deepseek r1 two calls", DeepSeekR1,
		dsCallsBegin + dsCallBegin + "function" + dsSep + "get_weather\n```json\n{\"city\": \"東京\", \"days\": [1, 2]}\n```" + dsCallEnd + "\n" +
			dsCallBegin + "function" + dsSep + "get_time\n```json\n{\"zone\": \"Asia/Tokyo\", \"fmt\": \"}```{\"}\n```" + dsCallEnd + dsCallsEnd,
		"", "", []want{{"get_weather", `{"city": "東京", "days": [1, 2]}`}, {"get_time", `{"zone": "Asia/Tokyo", "fmt": "}` + "```" + `{"}`}}},
	{"deepseek v3.1 text then two calls", DeepSeekV31,
		"CONTENT" + dsCallsBegin + dsCallBegin + "get_time" + dsSep + `{"city": "Paris"}` + dsCallEnd + dsCallBegin + "get_weather" + dsSep + `{"city": "Paris", "unit": {"t": "°C"}}` + dsCallEnd + dsCallsEnd,
		"CONTENT", "", []want{{"get_time", `{"city": "Paris"}`}, {"get_weather", `{"city": "Paris", "unit": {"t": "°C"}}`}}},
	{"deepseek v3.1 after its reasoning", DeepSeekV31,
		"REASONING</think>" + dsCallsBegin + dsCallBegin + "get_time" + dsSep + `{"city": "Tokyo"}` + dsCallEnd + dsCallsEnd,
		"REASONING</think>", "", []want{{"get_time", `{"city": "Tokyo"}`}}},
	{"deepseek plain answer naming the marker", DeepSeekV31, "It starts with <｜tool and ends.", "It starts with <｜tool and ends.", "", nil},

	{"granite 3.3 one call", Granite, `<|tool_call|>[{"name": "special_function", "arguments": {"arg1": 1}}]`,
		"", "", []want{{"special_function", `{"arg1": 1}`}}},
	{"granite thinking, two calls", Granite,
		"<think>I'm\nthinking</think><|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\"}}, {\"arguments\": {\"q\": \"[a] {b}\"}, \"name\": \"search\"}]",
		"<think>I'm\nthinking</think>", "", []want{{"get_weather", `{"city": "Zürich"}`}, {"search", `{"q": "[a] {b}"}`}}},
	{"granite plain answer", Granite, "No tool needed: [1, 2] is a list.", "No tool needed: [1, 2] is a list.", "", nil},

	{"command r+ action block", CommandR,
		"Action:\n```json\n[\n    {\n        \"tool_name\": \"internet_search\",\n        \"parameters\": {\n            \"query\": \"biggest penguin in the world\"\n        }\n    },\n    {\n        \"tool_name\": \"get_weather\",\n        \"parameters\": {\"city\": \"Москва\"}\n    }\n]```",
		"", "", []want{{"internet_search", `{"query": "biggest penguin in the world"}`}, {"get_weather", `{"city": "Москва"}`}}},
	{"command r+ text, then an action", CommandR,
		"I will look it up.\nAction:\n```json\n[\n    {\n        \"tool_name\": \"directly-answer\",\n        \"parameters\": {}\n    }\n]\n```",
		"I will look it up.", "", []want{{"directly-answer", `{}`}}},
	{"command r+ prose with Action:", CommandR, "Action: take the train.", "Action: take the train.", "", nil},
	{"command r7b plan and action", CommandR7B,
		"<|START_THINKING|>I'm\nthinking<|END_THINKING|><|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"special_function\", \"parameters\": {\"arg1\": 1}}\n]<|END_ACTION|>",
		"<|START_THINKING|>I'm\nthinking<|END_THINKING|>", "", []want{{"special_function", `{"arg1": 1}`}}},

	{"gpt-oss analysis then a call", Harmony,
		"<|channel|>analysis<|message|>I'm\nthinking<|end|><|start|>assistant<|channel|>commentary to=functions.special_function <|constrain|>json<|message|>{\"arg1\": 1}<|call|>",
		"", "I'm\nthinking", []want{{"special_function", `{"arg1": 1}`}}},
	{"gpt-oss final answer", Harmony,
		"<|channel|>analysis<|message|>I'm\nthinking<|end|><|start|>assistant<|channel|>final<|message|>Hello, world!\nWhat's up?<|return|>",
		"Hello, world!\nWhat's up?", "I'm\nthinking", nil},
	{"gpt-oss preamble then a call without constrain", Harmony,
		"<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary<|message|>Checking the weather…<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather<|message|>{\"city\": \"Ōsaka\", \"opts\": {\"u\": \"<|end|>\"}}<|call|>",
		"Checking the weather…", "Need weather.", []want{{"get_weather", `{"city": "Ōsaka", "opts": {"u": "<|end|>"}}`}}},
	{"gpt-oss recipient before the channel", Harmony,
		" to=functions.special_function<|channel|>commentary <|constrain|>json<|message|>{\"arg1\": 1}",
		"", "", []want{{"special_function", `{"arg1": 1}`}}},
	{"gpt-oss without markers is text", Harmony, "Plain words < and > only.", "Plain words < and > only.", "", nil},

	{"functionary v3.1 two calls", FunctionaryV31,
		"<function=special_function>{\"arg1\": 1}</function>\n<function=get_weather>{\"city\": \"Paris\", \"tags\": [\"</function>\"]}</function>",
		"", "", []want{{"special_function", `{"arg1": 1}`}, {"get_weather", `{"city": "Paris", "tags": ["</function>"]}`}}},
	{"functionary v3.1 text first", FunctionaryV31,
		"Let me check.<function=get_time>{\"zone\": \"UTC\"}</function>",
		"Let me check.", "", []want{{"get_time", `{"zone": "UTC"}`}}},
	{"functionary v3.2 text then a call", FunctionaryV32,
		"all\nHello, world!\nnono\nWhat's up?>>>special_function\n{\"arg1\": 1}\n",
		"Hello, world!\nnono\nWhat's up?", "", []want{{"special_function", `{"arg1": 1}`}}},
	{"functionary v3.2 two calls", FunctionaryV32,
		"special_function\n{\"arg1\": 1} \n                    >>>get_time\n{\"zone\": \">>>Tokyo\"}",
		"", "", []want{{"special_function", `{"arg1": 1}`}, {"get_time", `{"zone": ">>>Tokyo"}`}}},
	{"functionary v3.2 plain answer", FunctionaryV32, "all\nNo function needed.", "No function needed.", "", nil},
	{"llama 3.2 pythonic calls", Llama,
		"[get_weather(city=\"San Francisco\", metric='celsius'), get_time(zone='Europe/Paris', n=2, ok=True, opts={'a': None, \"l\": [1, 2.5, -3e2], 7: (1,)}, s='it\\'s \"x\" ]')]",
		"", "", []want{{"get_weather", `{"city": "San Francisco", "metric": "celsius"}`},
			{"get_time", `{"zone": "Europe/Paris", "n": 2, "ok": true, "opts": {"a": null, "l": [1, 2.5, -300], "7": [1]}, "s": "it's \"x\" ]"}`}}},
	{"llama 3.2 pythonic call without arguments", Llama, " [get_news()]", "", "", []want{{"get_news", `{}`}}},
	{"llama answer that is a python list", Llama, "[1, 2, 3] are the numbers.", "[1, 2, 3] are the numbers.", "", nil},
	{"llama answer that looks like a call", Llama, "[print(x) for x in range(3)]", "[print(x) for x in range(3)]", "", nil},
	{"functionary prose with a tag", FunctionaryV31, "Use <function=x y> tags.", "Use <function=x y> tags.", "", nil},

	// Llama 3.1's built-in tools after <|python_tag|> (Meta's prompt
	// format; llama.cpp's tests/test-chat.cpp), and functionary v3.1's
	// python tool.
	{"llama 3.1 brave_search", Llama, `<|python_tag|>brave_search.call(query="weather in Oslo, \"today\"")`,
		"", "", []want{{"brave_search", `{"query": "weather in Oslo, \"today\""}`}}},
	{"llama 3.1 wolfram_alpha after text", Llama, "Let me compute that. <|python_tag|>wolfram_alpha.call(query=\"integrate x^2 dx ≈ ∫\")",
		"Let me compute that.", "", []want{{"wolfram_alpha", `{"query": "integrate x^2 dx ≈ ∫"}`}}},
	{"llama 3.1 builtin call, JSON values", Llama, `<|python_tag|>python.call(code="print('hey')", timeout=30, quiet=true)`,
		"", "", []want{{"python", `{"code": "print('hey')", "timeout": 30, "quiet": true}`}}},
	{"llama 3.1 code_interpreter code", Llama, "<|python_tag|>import math\nprint(math.sqrt(2), \"→ √\")\n",
		"", "", []want{{"code_interpreter", `{"code": "import math\nprint(math.sqrt(2), \"→ √\")\n"}`}}},
	{"llama 3.1 code that calls .call", Llama, "<|python_tag|>obj.call(1)",
		"", "", []want{{"code_interpreter", `{"code": "obj.call(1)"}`}}},
	{"llama 3.1 JSON call after text and the tag", Llama, `Checking. <|python_tag|>{"name": "get_time", "parameters": {"zone": "CET"}}`,
		"Checking.", "", []want{{"get_time", `{"zone": "CET"}`}}},
	{"llama answer mentioning python", Llama, "Use python.call for it: <|python", "Use python.call for it: <|python", "", nil},
	{"functionary v3.1 python code after text", FunctionaryV31, "Running it.<|python_tag|>print('ok')",
		"Running it.", "", []want{{"python", `{"code": "print('ok')"}`}}},
	{"functionary v3.2 text then raw python", FunctionaryV32, "all\nLet me run it.>>>python\nfor i in range(3):\n    print({i: 'é'})\n",
		"Let me run it.", "", []want{{"python", `{"code": "for i in range(3):\n    print({i: 'é'})\n"}`}}},
	{"functionary v3.2 python with JSON arguments", FunctionaryV32, "python\n{\"code\": \"print(1)\"}\n>>>get_time\n{\"zone\": \"UTC\"}",
		"", "", []want{{"python", `{"code": "print(1)"}`}, {"get_time", `{"zone": "UTC"}`}}},
}

// checkFamilyAnswer compares a parse with the expected answer.
func checkFamilyAnswer(t *testing.T, where string, a answer, text, wantReasoning string, calls []want, out string) {
	t.Helper()
	if a.text != text || a.reasoning != wantReasoning {
		t.Errorf("%s: text %q reasoning %q, want %q and %q", where, a.text, a.reasoning, text, wantReasoning)
	}
	if len(a.calls) != len(calls) {
		t.Fatalf("%s: %d calls %+v, want %d", where, len(a.calls), a.calls, len(calls))
	}
	for i, c := range a.calls {
		w := calls[i]
		if c.Name != w.name || !sameJSON(c.Arguments, w.args) || !c.Valid {
			t.Errorf("%s: call %d = %s(%s) valid %v, want %s(%s)", where, i, c.Name, c.Arguments, c.Valid, w.name, w.args)
		}
		if a.args[i] != c.Arguments {
			t.Errorf("%s: call %d's Args pieces add up to %q, its arguments are %q", where, i, a.args[i], c.Arguments)
		}
		if !strings.Contains(out, strings.TrimSpace(c.Raw)) {
			t.Errorf("%s: call %d's raw text %q is not in the output", where, i, c.Raw)
		}
		if !strings.HasPrefix(c.ID, "call_") || len(c.ID) != 29 {
			t.Errorf("%s: call id %q", where, c.ID)
		}
	}
}

// Each added family's real output parses into its text, reasoning and
// calls whole, in pieces as tokens come, and split in two at every byte.
func TestParseFamilyOutputs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range familyOutputs {
		pieces := chunkings(r, tc.out)
		for i := 1; i < len(tc.out); i++ {
			pieces = append(pieces, []string{tc.out[:i], tc.out[i:]})
		}
		for _, chunks := range pieces {
			a := collect(t, NewParser(tc.f), chunks)
			where := fmt.Sprintf("%s (%d pieces, first %d bytes)", tc.name, len(chunks), len(chunks[0]))
			checkFamilyAnswer(t, where, a, tc.text, tc.reasoning, tc.calls, tc.out)
		}
	}
}

// Hostile pythonic answers stay bounded: nesting past maxPyDepth, or a
// list that does not close within maxPythonic bytes, is text.
func TestParsePythonicBounds(t *testing.T) {
	deep := "[f(a=" + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + ")]"
	open := "[f(a='" + strings.Repeat("x", maxPythonic) + "')]"
	for _, out := range []string{deep, open} {
		a := collect(t, NewParser(Llama), []string{out[:len(out)/2], out[len(out)/2:]})
		if len(a.calls) != 0 || a.text != out {
			t.Errorf("%d bytes: %d calls, text %d bytes", len(out), len(a.calls), len(a.text))
		}
	}
	ok := "[f(a=" + strings.Repeat("[", maxPyDepth-1) + strings.Repeat("]", maxPyDepth-1) + ")]"
	if a := collect(t, NewParser(Llama), []string{ok}); len(a.calls) != 1 || !a.calls[0].Valid {
		t.Errorf("nesting %d: %+v", maxPyDepth-1, a.calls)
	}
}
