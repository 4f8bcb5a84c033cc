package grammar

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// callSchemas are two tools' parameters, as a tool-call grammar composes
// them: heads that share a long prefix pick which schema follows.
var callSchemas = map[string]string{
	"get_weather": `{"type":"object","properties":{"city":{"type":"string","maxLength":20},"unit":{"enum":["c","f"]}},"required":["city"]}`,
	"get_time":    `{"type":"object","properties":{"zone":{"type":"string"},"when":{"type":"array","items":{"type":"integer"},"maxItems":3}},"required":["zone","when"],"additionalProperties":false}`,
}

// composeCall is the Hermes-shaped grammar of one call to either tool.
func composeCall(t *testing.T) (*Grammar, []string) {
	t.Helper()
	k := NewComposer()
	var heads []string
	var then []Part
	tail, err := k.Literal("}\n</tool_call>")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"get_weather", "get_time"} {
		args, err := k.Schema([]byte(callSchemas[name]))
		if err != nil {
			t.Fatal(err)
		}
		seq, err := k.Seq(args, tail)
		if err != nil {
			t.Fatal(err)
		}
		heads = append(heads, "<tool_call>\n{\"name\": \""+name+"\", \"arguments\": ")
		then = append(then, seq)
	}
	sw, err := k.Switch(heads, then)
	if err != nil {
		t.Fatal(err)
	}
	g, err := k.Grammar(sw)
	if err != nil {
		t.Fatal(err)
	}
	return g, heads
}

// A composed grammar masks exactly what token-by-token checks allow, at
// every step of random generations, and what they complete is a head, a
// document of that head's schema, and the tail; EOS comes only then, and
// generation is done there.
func TestComposedSwitchGenerates(t *testing.T) {
	g, heads := composeCall(t)
	r := rand.New(rand.NewPCG(5, 6))
	pieces := testVocab(r, 3000)
	for _, s := range []string{"<tool_call>", "\n{\"name\": \"", "get", "_weather", "_time", "\", \"arguments\": ", "}\n</tool_call>", "</", "tool", "_call", ">"} {
		pieces = append(pieces[:len(pieces)-1], []byte(s), nil) // keep EOS last
	}
	v := NewVocab(pieces)
	eos := []int{len(pieces) - 1}
	seen := map[string]bool{}
	for walk := range 24 {
		x := NewMatcher(g, v, eos)
		var doc []byte
		for step := 0; step < 400 && !x.Done(); step++ {
			got := x.Allowed()
			if want := allowedByBruteForce(x); !slices.Equal(got, want) {
				t.Fatalf("walk %d after %q: the mask differs from token-by-token checks at %s", walk, doc, diffIDs(pieces, got, want))
			}
			if got[eos[0]>>6]>>(eos[0]&63)&1 != 0 != x.CanEnd() {
				t.Fatalf("walk %d after %q: EOS allowed %v, can end %v", walk, doc, !x.CanEnd(), x.CanEnd())
			}
			var ids []int
			for id := range pieces {
				if got[id>>6]>>(id&63)&1 != 0 {
					ids = append(ids, id)
				}
			}
			if len(ids) == 0 {
				t.Fatalf("walk %d: no token allowed after %q", walk, doc)
			}
			id := ids[r.IntN(len(ids))]
			if err := x.Accept(id); err != nil {
				t.Fatal(err)
			}
			doc = append(doc, pieces[id]...)
		}
		if !x.Done() {
			continue
		}
		s := string(doc)
		i := slices.IndexFunc(heads, func(h string) bool { return strings.HasPrefix(s, h) })
		if i < 0 || !strings.HasSuffix(s, "}\n</tool_call>") {
			t.Fatalf("walk %d: %q is not a head, arguments and the tail", walk, s)
		}
		name := []string{"get_weather", "get_time"}[i]
		seen[name] = true
		args := strings.TrimSuffix(strings.TrimPrefix(s, heads[i]), "}\n</tool_call>")
		if err := validates([]byte(callSchemas[name]), []byte(args)); err != nil {
			t.Errorf("walk %d: %s arguments %s do not validate: %v", walk, name, args, err)
		}
		if !g.Match(doc) || g.Match(doc[:len(doc)-1]) {
			t.Errorf("walk %d: Match disagrees with the generation %q", walk, s)
		}
	}
	if !seen["get_weather"] || !seen["get_time"] {
		t.Errorf("random generations completed calls to %v only", seen)
	}
}

func TestComposeRefuses(t *testing.T) {
	k := NewComposer()
	if _, err := k.Literal(""); err == nil {
		t.Error("empty literal accepted")
	}
	a, _ := k.Literal("x")
	if _, err := k.Switch([]string{"ab", "abc"}, []Part{a, a}); err == nil {
		t.Error("a head that begins another accepted")
	}
	if _, err := k.Switch([]string{"ab"}, []Part{a, a}); err == nil {
		t.Error("heads and continuations of different counts accepted")
	}
	if _, err := k.Schema([]byte(`{"type":"string","pattern":"x"}`)); err == nil || !strings.Contains(err.Error(), `"pattern"`) {
		t.Errorf("pattern: %v", err)
	}
	// A continuation no finite document satisfies makes the grammar fail.
	bad, err := k.Schema([]byte(`{"type":"object","properties":{"a":{"$ref":"#"}},"required":["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	sw, _ := k.Switch([]string{"p", "q"}, []Part{a, bad})
	if _, err := k.Grammar(sw); err == nil {
		t.Error("a switch with an unsatisfiable continuation compiled")
	}
}

// Two schemas in one composition keep their own $refs.
func TestComposeSchemasKeepTheirRefs(t *testing.T) {
	k := NewComposer()
	a, err := k.Schema([]byte(`{"$defs":{"v":{"type":"integer"}},"type":"object","properties":{"x":{"$ref":"#/$defs/v"}},"required":["x"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := k.Schema([]byte(`{"$defs":{"v":{"type":"boolean"}},"type":"object","properties":{"x":{"$ref":"#/$defs/v"}},"required":["x"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	sw, err := k.Switch([]string{"a", "b"}, []Part{a, b})
	if err != nil {
		t.Fatal(err)
	}
	g, err := k.Grammar(sw)
	if err != nil {
		t.Fatal(err)
	}
	for doc, want := range map[string]bool{`a{"x":1}`: true, `b{"x":true}`: true, `a{"x":true}`: false, `b{"x":1}`: false, `c{"x":1}`: false} {
		if g.Match([]byte(doc)) != want {
			t.Errorf("%s: match %v", doc, !want)
		}
	}
}

// A special token (no text in the trie) the matcher is told to take as
// text is allowed exactly where its text may come, and followed.
func TestAllowSpecial(t *testing.T) {
	k := NewComposer()
	obj := k.AnyObject()
	sw, err := k.Switch([]string{"[TOOL_CALLS]["}, []Part{obj})
	if err != nil {
		t.Fatal(err)
	}
	g, err := k.Grammar(sw)
	if err != nil {
		t.Fatal(err)
	}
	pieces := [][]byte{[]byte("["), []byte("TOOL"), []byte("_CALLS"), []byte("]"), []byte("{}"), nil, nil} // 5: [TOOL_CALLS], 6: EOS
	x := NewMatcher(g, NewVocab(pieces), []int{6})
	x.AllowSpecial(5, []byte("[TOOL_CALLS]"))
	if m := x.Allowed()[0]; m != 1<<0|1<<5 {
		t.Fatalf("start: mask %b, want [ and the special token", m)
	}
	if err := x.Accept(5); err != nil {
		t.Fatal(err)
	}
	if m := x.Allowed()[0]; m != 1<<0 {
		t.Fatalf("after [TOOL_CALLS]: mask %b, want [", m)
	}
	if err := x.Accept(5); err == nil {
		t.Fatal("the special token accepted where its text cannot come")
	}
	for _, id := range []int{0, 4} {
		if err := x.Accept(id); err != nil {
			t.Fatal(err)
		}
	}
	if !x.Done() || x.Allowed()[0] != 1<<6 {
		t.Errorf("complete: done %v, mask %b", x.Done(), x.Allowed()[0])
	}
}

// BenchmarkMaskToolCall is the per-token cost of a required tool call on
// the 151,936-token vocabulary: the Hermes wrapper around one of eight
// tools' arguments, the name picking the schema (what engine/toolcall
// composes), as BenchmarkMask measures a schema's document.
func BenchmarkMaskToolCall(b *testing.B) {
	pieces := benchVocab(b)
	v := NewVocab(pieces)
	eos := []int{len(pieces) - 1}
	k := NewComposer()
	tail, _ := k.Literal("}\n</tool_call>")
	var heads []string
	var then []Part
	for i := range 4 {
		for _, name := range []string{"get_weather", "get_time"} {
			args, err := k.Schema([]byte(callSchemas[name]))
			if err != nil {
				b.Fatal(err)
			}
			seq, _ := k.Seq(args, tail)
			heads = append(heads, fmt.Sprintf("<tool_call>\n{\"name\": \"%s_%d\", \"arguments\": ", name, i))
			then = append(then, seq)
		}
	}
	sw, err := k.Switch(heads, then)
	if err != nil {
		b.Fatal(err)
	}
	g, err := k.Grammar(sw)
	if err != nil {
		b.Fatal(err)
	}
	doc := "<tool_call>\n{\"name\": \"get_weather_3\", \"arguments\": {\"city\": \"Zürich\", \"unit\": \"c\"}}\n</tool_call>"
	benchMatch(b, g, v, eos, greedyTokens(v, doc), pieces)
}
