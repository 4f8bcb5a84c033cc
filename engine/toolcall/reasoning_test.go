package toolcall

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// thinkCase is an answer as a reasoning model writes it and how it splits.
type thinkCase struct {
	name, answer       string
	opened             bool // the generation prompt opened the block
	reasoning, answer2 string
}

var thinkCases = []thinkCase{
	{name: "qwen3 thinking", answer: "<think>\nOkay, the user asks for 2+2. That is 4.\n</think>\n\nThe answer is 4.",
		reasoning: "Okay, the user asks for 2+2. That is 4.", answer2: "The answer is 4."},
	{name: "qwen3 no thinking (empty block in the prompt)", answer: "The answer is 4.", answer2: "The answer is 4."},
	{name: "qwen3 empty block written", answer: "<think>\n\n</think>\n\nHi there!", answer2: "Hi there!"},
	{name: "r1 distill, opened by the prompt", opened: true, answer: "Okay, so 2+2…\n\nIt is 4.\n</think>\n\n**4**",
		reasoning: "Okay, so 2+2…\n\nIt is 4.", answer2: "**4**"},
	{name: "opened, model writes <think> again", opened: true, answer: "<think>\nHmm.\n</think>\n\nYes.", reasoning: "Hmm.", answer2: "Yes."},
	{name: "cut short inside (max_tokens)", answer: "<think>\nLet me think about  \n", reasoning: "Let me think about"},
	{name: "opened, never closed", opened: true, answer: "I wonder", reasoning: "I wonder"},
	{name: "a block later in the answer is text", answer: "Sure. <think>x</think> y", answer2: "Sure. <think>x</think> y"},
	{name: "whitespace then block", answer: "\n\n<think>a < b </thin k></think>ok", reasoning: "a < b </thin k>", answer2: "ok"},
	{name: "text that begins like the marker", answer: "<thinking> is a tag", answer2: "<thinking> is a tag"},
	{name: "prefix of the marker at the end", answer: "<thi", answer2: "<thi"},
	{name: "unicode inside", answer: "<think>日本語で考える…</think>答え", reasoning: "日本語で考える…", answer2: "答え"},
}

// splitAll runs pieces through a splitter and gathers both parts.
func splitAll(opened bool, pieces []string) (reasoning, text string, order []Kind) {
	s := NewThinkSplitter(opened)
	var r, t strings.Builder
	add := func(evs []Event) {
		for _, e := range evs {
			if len(order) == 0 || order[len(order)-1] != e.Kind {
				order = append(order, e.Kind)
			}
			switch e.Kind {
			case Reasoning:
				r.WriteString(e.Text)
			case Text:
				t.WriteString(e.Text)
			}
		}
	}
	for _, p := range pieces {
		add(s.Push(p))
	}
	add(s.Flush())
	return r.String(), t.String(), order
}

// tokenPieces splits like a tokenizer would: markers whole, words with
// their leading space, newlines alone.
func tokenPieces(s string) []string {
	var out []string
	for s != "" {
		n := len(s)
		for _, m := range []string{thinkOpen, thinkClose} {
			if strings.HasPrefix(s, m) {
				n = len(m)
			}
		}
		if n == len(s) {
			if i := strings.IndexAny(s[1:], " \n<"); i >= 0 {
				n = i + 1
			}
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func TestThinkSplitterForms(t *testing.T) {
	for _, c := range thinkCases {
		splits := map[string][]string{"whole": {c.answer}, "per token": tokenPieces(c.answer)}
		for i := range len(c.answer) + 1 { // every two-piece split, at any byte
			splits["at byte "+strconv.Itoa(i)] = []string{c.answer[:i], c.answer[i:]}
		}
		var bytes []string
		for i := range len(c.answer) {
			bytes = append(bytes, c.answer[i:i+1])
		}
		splits["byte by byte"] = bytes
		for how, pieces := range splits {
			r, a, order := splitAll(c.opened, pieces)
			if r != c.reasoning || a != c.answer2 {
				t.Errorf("%s, %s: reasoning %q answer %q; want %q and %q", c.name, how, r, a, c.reasoning, c.answer2)
			}
			if len(order) > 2 || len(order) == 2 && order[0] != Reasoning {
				t.Errorf("%s, %s: events in order %v; want reasoning, then text", c.name, how, order)
			}
		}
	}
}

// TestThinkSplitterStreams checks reasoning goes out as it comes, not
// all at the end: what is held back is a partial marker or whitespace.
func TestThinkSplitterStreams(t *testing.T) {
	s := NewThinkSplitter(false)
	if evs := s.Push("<think>\nStep one"); len(evs) != 1 || evs[0].Kind != Reasoning || evs[0].Text != "Step one" {
		t.Fatalf("after the first piece: %+v; want reasoning \"Step one\"", evs)
	}
	if evs := s.Push(", step two</th"); len(evs) != 1 || evs[0].Text != ", step two" {
		t.Fatalf("before a partial marker: %+v; want reasoning \", step two\"", evs)
	}
	if !s.Thinking() {
		t.Fatal("Thinking() false inside the block")
	}
	evs := s.Push("ink>\n\nDone")
	if len(evs) != 1 || evs[0].Kind != Text || evs[0].Text != "Done" || s.Thinking() {
		t.Fatalf("after the marker: %+v; want text \"Done\"", evs)
	}
}

// TestThinkSplitterBounded: hostile whitespace and long reasoning are not
// held back without bound.
func TestThinkSplitterBounded(t *testing.T) {
	s := NewThinkSplitter(false)
	s.Push(strings.Repeat(" ", 10_000))
	if len(s.held) > maxHeldSpace {
		t.Fatalf("held %d bytes of leading whitespace; want at most %d", len(s.held), maxHeldSpace)
	}
	s = NewThinkSplitter(true)
	for range 1000 {
		s.Push("word \n\t ")
		if len(s.held) > maxHeldSpace+len(thinkClose) {
			t.Fatalf("held %d bytes inside the block", len(s.held))
		}
	}
	s.Push(strings.Repeat("\n", 5000))
	if len(s.held) > maxHeldSpace+len(thinkClose) {
		t.Fatalf("held %d bytes of trailing whitespace inside the block", len(s.held))
	}
}

func TestDetectThinking(t *testing.T) {
	files, err := templateFiles()
	if err != nil {
		t.Skipf("no templates in %s: %v", templateDir, err)
	}
	want := map[string]Thinking{
		"Qwen-Qwen3-0.6B.jinja":                          ThinkTags,
		"Qwen-QwQ-32B.jinja":                             ThinkTags,
		"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": ThinkTags,
		"deepseek-ai-DeepSeek-V3.1.jinja":                ThinkTags,
		"openai-gpt-oss-120b.jinja":                      ThinkHarmony,
		"Qwen-Qwen2.5-7B-Instruct.jinja":                 NoThinking,
		"meta-llama-Llama-3.1-8B-Instruct.jinja":         NoThinking,
		"mistralai-Mistral-Nemo-Instruct-2407.jinja":     NoThinking,
	}
	for name, w := range want {
		src, ok := files[name]
		if !ok {
			t.Errorf("%s missing from %s", name, templateDir)
			continue
		}
		if got := DetectThinking(src); got != w {
			t.Errorf("%s: DetectThinking %v; want %v", name, got, w)
		}
	}
}

func TestOpensThinking(t *testing.T) {
	files, err := templateFiles()
	if err != nil {
		t.Skipf("no templates in %s: %v", templateDir, err)
	}
	cases := []struct {
		name string
		on   bool
		want bool
	}{
		{"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", true, true}, // '<｜Assistant｜><think>\n'
		{"Qwen-QwQ-32B.jinja", true, true},
		{"Qwen-Qwen3-0.6B.jinja", true, false},  // the model opens it
		{"Qwen-Qwen3-0.6B.jinja", false, false}, // an empty block closes it
		{"deepseek-ai-DeepSeek-V3.1.jinja", true, true},
		{"deepseek-ai-DeepSeek-V3.1.jinja", false, false}, // '</think>'
	}
	for _, c := range cases {
		src := files[c.name]
		if got := OpensThinking(src, ThinkVars(src, c.on)); got != c.want {
			t.Errorf("%s with thinking %v: OpensThinking %v; want %v", c.name, c.on, got, c.want)
		}
		// the cached answer is the same
		if got := OpensThinking(src, ThinkVars(src, c.on)); got != c.want {
			t.Errorf("%s with thinking %v, cached: OpensThinking %v; want %v", c.name, c.on, got, c.want)
		}
	}
	const shared = "../../../shared/fixtures/qwen3-tokenizer/chat_template.jinja"
	b, err := os.ReadFile(shared)
	if err != nil {
		t.Logf("skipping the shared Qwen3 template: %v (it is in /work/shared/fixtures)", err)
		return
	}
	if !OpensThinking(string(b), map[string]any{"open_thinking": true}) || OpensThinking(string(b), nil) {
		t.Errorf("%s: want the block opened with open_thinking true only", shared)
	}
}

// BenchmarkThinkSplitter is the splitter's cost per token: a 4 KiB
// thinking block and a short answer pushed in 4-byte pieces.
func BenchmarkThinkSplitter(b *testing.B) {
	answer := "<think>\n" + strings.Repeat("Let me think about it. ", 180) + "\n</think>\n\nThe answer is 4."
	b.SetBytes(int64(len(answer)))
	for b.Loop() {
		s := NewThinkSplitter(false)
		for i := 0; i < len(answer); i += 4 {
			s.Push(answer[i:min(i+4, len(answer))])
		}
		s.Flush()
	}
}
