package toolcall

// DeepSeek's tool calls (DeepSeek V3, R1 and its distills; V3.1 and
// later drop the type and the code fence), as their chat templates write
// them in the history (llama.cpp's models/templates copies of
// DeepSeek-R1-Distill-Qwen-32B and DeepSeek-V3.1):
//
//	<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
//	```json
//	{"city": "Paris"}
//	```<｜tool▁call▁end｜>
//	<｜tool▁call▁begin｜>function<｜tool▁sep｜>…<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//
//	<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//
// The bars are U+FF5C and the spaces U+2581: each marker is one special
// token in DeepSeek's vocabulary. One parser reads both forms.
const (
	dsCallsBegin = "<｜tool▁calls▁begin｜>"
	dsCallBegin  = "<｜tool▁call▁begin｜>"
	dsSep        = "<｜tool▁sep｜>"
	dsCallEnd    = "<｜tool▁call▁end｜>"
	dsCallsEnd   = "<｜tool▁calls▁end｜>"
)

var deepseekFamily = &family{
	markers: []string{dsCallsBegin, dsCallBegin},
	head:    deepseekHead,
	then:    deepseekName,
	fences:  []string{"```json"},
	closers: []string{"```", dsCallEnd, dsCallsEnd},
	named:   true,
}

// deepseekHead reads `<｜tool▁call▁begin｜>` (after the list's marker),
// then `name<｜tool▁sep｜>`, or `function<｜tool▁sep｜>name\n` (V3/R1).
func deepseekHead(p *Parser, final bool) {
	if p.take(dsCallBegin, true, final) == wait {
		return
	}
	kind, m := p.nameUntil(dsSep, final)
	switch {
	case m == wait:
		return
	case m == miss:
		p.notCall()
		return
	case kind != "function":
		p.namedHead(kind)
		return
	}
	p.st = sThen // the name follows on its own line
}

// deepseekName reads V3/R1's name line, after `function<｜tool▁sep｜>`.
func deepseekName(p *Parser, final bool) { p.headUntil("\n", final) }
