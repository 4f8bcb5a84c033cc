package toolcall

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/grammar"
)

const testTools = `[
 {"type":"function","function":{"name":"get_weather","description":"Weather in a city","parameters":
   {"type":"object","properties":{"city":{"type":"string","maxLength":12},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city","unit"],"additionalProperties":false}}},
 {"type":"function","function":{"name":"get_time","parameters":
   {"type":"object","properties":{"zone":{"type":"string","maxLength":8},"offsets":{"type":"array","items":{"type":"integer"},"maxItems":2}},"required":["zone","offsets"],"additionalProperties":false}}},
 {"type":"function","function":{"name":"ping"}}
]`

// checkArgs fails unless args validate against the tool's schema in
// testTools (checked by hand: required keys, types, enums, limits).
func checkArgs(t *testing.T, name, args string) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(args), &m); err != nil {
		t.Errorf("%s: arguments %q are not a JSON object: %v", name, args, err)
		return
	}
	ok := true
	switch name {
	case "get_weather":
		city, c := m["city"].(string)
		unit, u := m["unit"].(string)
		ok = c && u && len([]rune(city)) <= 12 && (unit == "celsius" || unit == "fahrenheit") && len(m) == 2
	case "get_time":
		zone, z := m["zone"].(string)
		offs, o := m["offsets"].([]any)
		ok = z && o && len([]rune(zone)) <= 8 && len(offs) <= 2 && len(m) == 2
		for _, x := range offs {
			f, isNum := x.(float64)
			ok = ok && isNum && f == float64(int64(f))
		}
	case "ping":
	default:
		ok = false
	}
	if !ok {
		t.Errorf("%s: arguments %s do not validate", name, args)
	}
}

// byteVocab spells anything: every byte, plus the family's marker as one
// special token (id 256) and an EOS (257).
func byteVocab() [][]byte {
	v := make([][]byte, 258)
	for b := range 256 {
		v[b] = []byte{byte(b)}
	}
	return v
}

// Under each family's grammar, random generations are one call, in the
// family's own format, to an offered function (the named one with
// ToolFunction) whose arguments validate; the family's parser reads it
// back as exactly that call.
func TestGrammarGenerationsParse(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	pieces := byteVocab()
	v := grammar.NewVocab(pieces)
	for _, f := range allFormats {
		for _, choice := range []string{engine.ToolRequired, engine.ToolFunction} {
			tools := &engine.Tools{Defs: json.RawMessage(testTools), Choice: choice, Name: "get_time"}
			g, err := Grammar(f, tools)
			if err != nil {
				t.Fatalf("%v %s: %v", f, choice, err)
			}
			seen := map[string]bool{}
			for walk := range 30 {
				x := grammar.NewMatcher(g, v, []int{257})
				marker := ""
				if ms := f.Markers(); len(ms) > 0 {
					marker = ms[0]
					x.AllowSpecial(256, []byte(marker))
				}
				var out strings.Builder
				for step := 0; step < 600 && !x.Done(); step++ {
					bits := x.Allowed()
					var ids []int
					for id := range pieces {
						if bits[id>>6]>>(id&63)&1 != 0 {
							ids = append(ids, id)
						}
					}
					if len(ids) == 0 {
						t.Fatalf("%v %s: nothing allowed after %q", f, choice, out.String())
					}
					id := ids[r.IntN(len(ids))]
					if id != 256 && r.IntN(2) == 0 && bits[256>>6]>>(256&63)&1 != 0 {
						id = 256 // the model's own marker token
					}
					if err := x.Accept(id); err != nil {
						t.Fatal(err)
					}
					if id == 256 {
						out.WriteString(marker)
					} else {
						out.WriteString(string(pieces[id]))
					}
				}
				if !x.Done() {
					continue
				}
				a := collect(t, NewParser(f), []string{out.String()})
				if len(a.calls) != 1 || !a.calls[0].Valid || a.text != "" {
					t.Fatalf("%v %s walk %d: %q parses to %+v", f, choice, walk, out.String(), a)
				}
				if walk == 0 {
					t.Logf("%v %s: %q", f, choice, out.String())
				}
				c := a.calls[0]
				if choice == engine.ToolFunction && c.Name != "get_time" {
					t.Errorf("%v: named get_time, called %s", f, c.Name)
				}
				checkArgs(t, c.Name, c.Arguments)
				seen[c.Name] = true
			}
			if choice == engine.ToolRequired && len(seen) < 2 {
				t.Errorf("%v required: only %v called in 30 generations", f, seen)
			}
			if len(seen) == 0 {
				t.Errorf("%v %s: no generation completed", f, choice)
			}
		}
	}
}

// What the grammar makes a model write is what the family's template
// writes for the same call in the history.
func TestGrammarWritesTheTemplateShape(t *testing.T) {
	for f, doc := range map[Format]string{
		Hermes:         "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>",
		Llama:          `{"name": "ping", "parameters": {}}`,
		Mistral:        `[TOOL_CALLS][{"name": "ping", "arguments": {}}]`,
		MistralArgs:    `[TOOL_CALLS]ping[ARGS]{}`,
		DeepSeekR1:     dsCallsBegin + dsCallBegin + "function" + dsSep + "ping\n```json\n{}\n```" + dsCallEnd + dsCallsEnd,
		DeepSeekV31:    dsCallsBegin + dsCallBegin + "ping" + dsSep + "{}" + dsCallEnd + dsCallsEnd,
		Granite:        `<|tool_call|>[{"name": "ping", "arguments": {}}]`,
		CommandR:       "Action:\n```json\n[\n    {\n        \"tool_name\": \"ping\",\n        \"parameters\": {}\n    }\n]```",
		CommandR7B:     "<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"ping\", \"parameters\": {}}\n]<|END_ACTION|>",
		Harmony:        "<|channel|>commentary to=functions.ping <|constrain|>json<|message|>{}<|call|>",
		FunctionaryV31: "<function=ping>{}</function>",
		FunctionaryV32: "ping\n{}",
	} {
		g, err := Grammar(f, &engine.Tools{Defs: json.RawMessage(testTools), Choice: engine.ToolFunction, Name: "ping"})
		if err != nil {
			t.Fatal(err)
		}
		if !g.Match([]byte(doc)) {
			t.Errorf("%v: the grammar refuses %q", f, doc)
		}
		if g.Match([]byte(strings.Replace(doc, "ping", "pong", 1))) {
			t.Errorf("%v: the grammar takes a function not offered", f)
		}
	}
}

// allFormats are the formats with a parser and a grammar.
var allFormats = []Format{Hermes, Llama, Mistral, MistralArgs, DeepSeekR1, DeepSeekV31, Granite, CommandR, CommandR7B, Harmony, FunctionaryV31, FunctionaryV32}

func TestGrammarRefuses(t *testing.T) {
	for _, tc := range []struct{ defs, choice, name, want string }{
		{testTools, engine.ToolFunction, "nope", `tool_choice names function "nope", which tools does not offer`},
		{`[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"d":{"type":"string","format":"date"}}}}}]`, engine.ToolRequired, "",
			`tools[0].function.parameters: schema keyword "format" at /properties/d`},
		{`[{"type":"function","function":{"name":"bad name"}}]`, engine.ToolRequired, "", `tools[0].function.name "bad name"`},
		{`[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]`, engine.ToolRequired, "", `two tools have that name`},
		{`[{"type":"retrieval"}]`, engine.ToolRequired, "", `tools[0]`},
		{`{"type":"function"}`, engine.ToolRequired, "", `tools must be an array`},
		{`[]`, engine.ToolRequired, "", `needs at least one tool`},
	} {
		_, err := Grammar(Hermes, &engine.Tools{Defs: json.RawMessage(tc.defs), Choice: tc.choice, Name: tc.name})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: %v, want %q", tc.defs, tc.choice, err, tc.want)
		}
	}
}

// Mistral's templates take only 9-character ids: calls and the tool
// turns answering them get matching ones; other formats are untouched.
func TestPrepareMessagesMistralIDs(t *testing.T) {
	call := func(id string) engine.ToolCall {
		return engine.ToolCall{ID: id, Type: "function", Function: engine.FunctionCall{Name: "f", Arguments: json.RawMessage(`{}`)}}
	}
	msgs := []engine.Message{
		{Role: "user", Content: "x"},
		{Role: "assistant", ToolCalls: []engine.ToolCall{call("call_abcdefghijklmnopqrstuvwx"), call("")}},
		{Role: "tool", ToolCallID: "call_abcdefghijklmnopqrstuvwx", Content: "1"},
		{Role: "tool", Content: "2"}, // Ollama: no id, answers the other call
		{Role: "assistant", ToolCalls: []engine.ToolCall{call("a1b2c3d4e")}},
		{Role: "tool", ToolCallID: "a1b2c3d4e", Content: "3"},
	}
	out := PrepareMessages(Mistral, msgs)
	ids := []string{out[1].ToolCalls[0].ID, out[1].ToolCalls[1].ID}
	for _, id := range ids {
		if len(id) != 9 || mistralID(id) != id {
			t.Errorf("id %q", id)
		}
	}
	if out[2].ToolCallID != ids[0] || out[3].ToolCallID != ids[1] || out[4].ToolCalls[0].ID != "a1b2c3d4e" || out[5].ToolCallID != "a1b2c3d4e" {
		t.Errorf("tool turns do not answer their calls: %+v", out)
	}
	if msgs[1].ToolCalls[0].ID != "call_abcdefghijklmnopqrstuvwx" || msgs[3].ToolCallID != "" {
		t.Error("the caller's messages changed")
	}
	if got := PrepareMessages(Hermes, msgs); &got[0] != &msgs[0] {
		t.Error("Hermes messages copied")
	}
}
