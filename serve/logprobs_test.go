package serve

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
)

// engineLogprobs runs req on the tinystories fixture directly: what serve
// must put on the wire.
func engineLogprobs(t *testing.T, req engine.Request) (string, []engine.TokenLogprob) {
	t.Helper()
	m, err := cpu.New().Load(context.Background(), tinyStories, engine.LoadOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, _ := m.NewSession()
	defer s.Close()
	var text strings.Builder
	var lps []engine.TokenLogprob
	if _, err := s.Generate(context.Background(), req, func(tk engine.Token) error {
		text.WriteString(tk.Text)
		lps = append(lps, tk.Logprobs...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return text.String(), lps
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6 }

func greedyRequest(prompt string, n, top int) engine.Request {
	z := 0.0
	return engine.Request{Prompt: prompt, MaxTokens: n, Logprobs: true, TopLogprobs: top, Sampling: engine.Sampling{Temperature: &z}}
}

// Chat logprobs through the official client, plain and streamed: one entry
// per token, in the OpenAI shape, equal to what the engine reports.
func TestChatLogprobsThroughOpenAIClient(t *testing.T) {
	ts := tinyServer(t)
	wantText, want := engineLogprobs(t, greedyRequest("Once upon a time", 10, 3))
	params := openai.ChatCompletionNewParams{Model: "tinystories", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")},
		MaxTokens: openai.Int(10), Temperature: openai.Float(0), Logprobs: openai.Bool(true), TopLogprobs: openai.Int(3)}
	resp, err := ts.chat().New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	got := resp.Choices[0].Logprobs.Content
	check := func(how string, text string, got []openai.ChatCompletionTokenLogprob) {
		if text != wantText || len(got) != len(want) {
			t.Fatalf("%s: %q with %d entries, want %q with %d", how, text, len(got), wantText, len(want))
		}
		for i, g := range got {
			w := want[i]
			var b []byte
			for _, c := range g.Bytes {
				b = append(b, byte(c))
			}
			if string(b) != string(w.Bytes) || g.Token != tokenText(w.Bytes) || !near(g.Logprob, w.Logprob.Logprob) || g.Logprob > 0 || len(g.TopLogprobs) != 3 {
				t.Errorf("%s entry %d: %q %v %v top %d, want %q %v", how, i, g.Token, g.Bytes, g.Logprob, len(g.TopLogprobs), w.Bytes, w.Logprob.Logprob)
				continue
			}
			for j, alt := range g.TopLogprobs {
				if alt.Token != tokenText(w.Top[j].Bytes) || !near(alt.Logprob, w.Top[j].Logprob) {
					t.Errorf("%s entry %d top %d: %q %v, want %q %v", how, i, j, alt.Token, alt.Logprob, w.Top[j].Bytes, w.Top[j].Logprob)
				}
			}
			// Greedy: the chosen token is the most likely one.
			if g.TopLogprobs[0].Token != g.Token || g.TopLogprobs[0].Logprob != g.Logprob {
				t.Errorf("%s entry %d: greedy chose %q, top is %q", how, i, g.Token, g.TopLogprobs[0].Token)
			}
		}
	}
	check("chat", resp.Choices[0].Message.Content, got)

	stream := ts.chat().NewStreaming(context.Background(), params)
	var text strings.Builder
	var streamed []openai.ChatCompletionTokenLogprob
	for stream.Next() {
		for _, c := range stream.Current().Choices {
			text.WriteString(c.Delta.Content)
			streamed = append(streamed, c.Logprobs.Content...)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	check("stream", text.String(), streamed)

	// Without logprobs the field is null.
	code, _, b := post(t, ts.URL+"/v1/chat/completions", `{"model":"tinystories","max_tokens":2,"messages":[{"role":"user","content":"Once"}]}`)
	if code != 200 || !strings.Contains(string(b), `"logprobs":null`) {
		t.Errorf("no logprobs asked: %d %s", code, b)
	}
}

// The legacy completions shape: tokens, token_logprobs, top_logprobs maps
// and character text_offset, continued across stream chunks.
func TestCompletionLogprobsLegacyShape(t *testing.T) {
	ts := tinyServer(t)
	wantText, want := engineLogprobs(t, greedyRequest("Once upon a time", 10, 2))
	c := ts.client()
	params := openai.CompletionNewParams{Model: "tinystories", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
		MaxTokens: openai.Int(10), Temperature: openai.Float(0), Logprobs: openai.Int(2)}
	resp, err := c.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	check := func(how, text string, lp openai.CompletionChoiceLogprobs) {
		if text != wantText || len(lp.Tokens) != len(want) || len(lp.TokenLogprobs) != len(want) || len(lp.TopLogprobs) != len(want) || len(lp.TextOffset) != len(want) {
			t.Fatalf("%s: %q %+v, want %q and %d tokens", how, text, lp, wantText, len(want))
		}
		var sofar string
		for i, w := range want {
			if lp.Tokens[i] != string(w.Bytes) || !near(lp.TokenLogprobs[i], w.Logprob.Logprob) || len(lp.TopLogprobs[i]) != 2 ||
				!near(lp.TopLogprobs[i][lp.Tokens[i]], lp.TokenLogprobs[i]) || int(lp.TextOffset[i]) != utf8.RuneCountInString(sofar) {
				t.Errorf("%s token %d: %q %v %v offset %d", how, i, lp.Tokens[i], lp.TokenLogprobs[i], lp.TopLogprobs[i], lp.TextOffset[i])
			}
			sofar += lp.Tokens[i]
		}
		if sofar != text {
			t.Errorf("%s: tokens join to %q, text %q", how, sofar, text)
		}
	}
	check("completion", resp.Choices[0].Text, resp.Choices[0].Logprobs)

	stream := c.Completions.NewStreaming(context.Background(), params)
	var text strings.Builder
	var all openai.CompletionChoiceLogprobs
	for stream.Next() {
		for _, ch := range stream.Current().Choices {
			text.WriteString(ch.Text)
			all.Tokens = append(all.Tokens, ch.Logprobs.Tokens...)
			all.TokenLogprobs = append(all.TokenLogprobs, ch.Logprobs.TokenLogprobs...)
			all.TopLogprobs = append(all.TopLogprobs, ch.Logprobs.TopLogprobs...)
			all.TextOffset = append(all.TextOffset, ch.Logprobs.TextOffset...)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	check("stream", text.String(), all)
}

// Ollama's logprobs list, streamed and not.
func TestOllamaLogprobs(t *testing.T) {
	ts := tinyServer(t)
	wantText, want := engineLogprobs(t, greedyRequest("Once upon a time", 6, 2))
	type lp struct {
		Token       string
		Logprob     float64
		Bytes       []int
		TopLogprobs []struct{ Token string } `json:"top_logprobs"`
	}
	body := `{"model":"tinystories","prompt":"Once upon a time","raw":true,"logprobs":true,"top_logprobs":2,"options":{"temperature":0,"num_predict":6}`
	code, _, b := post(t, ts.URL+"/api/generate", body+`,"stream":false}`)
	var one struct {
		Response string
		Logprobs []lp
	}
	if err := json.Unmarshal(b, &one); code != 200 || err != nil {
		t.Fatalf("%d %s", code, b)
	}
	_, _, b = post(t, ts.URL+"/api/generate", body+`}`)
	var text string
	var streamed []lp
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var l struct {
			Response string
			Logprobs []lp
		}
		json.Unmarshal([]byte(line), &l)
		text += l.Response
		streamed = append(streamed, l.Logprobs...)
	}
	for how, got := range map[string][]lp{"stream:false": one.Logprobs, "stream": streamed} {
		if len(got) != len(want) {
			t.Fatalf("%s: %d entries, want %d", how, len(got), len(want))
		}
		for i, g := range got {
			if g.Token != string(want[i].Bytes) || !near(g.Logprob, want[i].Logprob.Logprob) || len(g.Bytes) != len(want[i].Bytes) ||
				len(g.TopLogprobs) != 2 || g.TopLogprobs[0].Token != g.Token {
				t.Errorf("%s entry %d: %+v, want %q %v", how, i, g, want[i].Bytes, want[i].Logprob.Logprob)
			}
		}
	}
	if one.Response != wantText || text != wantText {
		t.Errorf("text %q / %q, want %q", one.Response, text, wantText)
	}
}

// The penalties reach the sampler from both APIs with the same meaning:
// /v1/completions and Ollama's raw /api/generate agree, and differ from
// unpenalized decoding.
func TestPenaltiesOnBothAPIs(t *testing.T) {
	ts := tinyServer(t)
	openAI := func(extra string) string {
		code, _, b := post(t, ts.URL+"/v1/completions", `{"model":"tinystories","prompt":"Once upon a time","max_tokens":30,"temperature":0`+extra+`}`)
		var r struct{ Choices []struct{ Text string } }
		if json.Unmarshal(b, &r); code != 200 || len(r.Choices) != 1 {
			t.Fatalf("%d %s", code, b)
		}
		return r.Choices[0].Text
	}
	ollama := func(opts string) string {
		code, _, b := post(t, ts.URL+"/api/generate", `{"model":"tinystories","prompt":"Once upon a time","raw":true,"stream":false,"options":{"temperature":0,"num_predict":30`+opts+`}}`)
		var r struct{ Response string }
		if json.Unmarshal(b, &r); code != 200 {
			t.Fatalf("%d %s", code, b)
		}
		return r.Response
	}
	plain := openAI("")
	pen := openAI(`,"frequency_penalty":2,"presence_penalty":1`)
	if pen == plain {
		t.Errorf("penalties changed nothing: %q", plain)
	}
	if o := ollama(`,"frequency_penalty":2,"presence_penalty":1`); o != pen {
		t.Errorf("Ollama options %q, OpenAI fields %q", o, pen)
	}
	// repeat_last_n 0 empties the window: no penalty at all.
	if o := ollama(`,"frequency_penalty":2,"presence_penalty":1,"repeat_last_n":0`); o != plain {
		t.Errorf("repeat_last_n 0: %q, want the unpenalized %q", o, plain)
	}
}

// options.num_ctx below the loaded context caps prompt and output.
func TestOllamaNumCtxCapsTheRequest(t *testing.T) {
	ts := tinyServer(t)
	gen := func(numCtx int) (int, map[string]any) {
		code, _, b := post(t, ts.URL+"/api/generate", `{"model":"tinystories","prompt":"Once upon a time","raw":true,"stream":false,"options":{"temperature":0,"num_predict":100,"num_ctx":`+itoa(numCtx)+`}}`)
		var r map[string]any
		json.Unmarshal(b, &r)
		return code, r
	}
	code, r := gen(50)
	prompt := int(r["prompt_eval_count"].(float64))
	if code != 200 || prompt+int(r["eval_count"].(float64)) != 50 || r["done_reason"] != "length" {
		t.Fatalf("num_ctx 50: %d %v", code, r)
	}
	code, r = gen(prompt)
	if code != 400 || !strings.Contains(r["error"].(string), "options.num_ctx = "+itoa(prompt)+": context window exceeded: the prompt is "+itoa(prompt)+" tokens") {
		t.Errorf("num_ctx = the prompt: %d %v", code, r)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// Logprobs and the penalties run on the cpu lane only; a model on another
// lane refuses them on the OpenAI routes too, naming the field.
func TestCPUOnlyFieldsRefusedOnOtherLanes(t *testing.T) {
	root := t.TempDir()
	axDir(t, root, "npu", `{}`, 1)
	ts := start(t, Options{ModelDirs: []string{root}, Lanes: map[string]LaneConfig{LaneAxcl: {}}})
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}
	for field, p := range map[string]openai.ChatCompletionNewParams{
		"logprobs":          {Model: "npu", Messages: msgs, Logprobs: openai.Bool(true)},
		"frequency_penalty": {Model: "npu", Messages: msgs, FrequencyPenalty: openai.Float(0.5)},
		"presence_penalty":  {Model: "npu", Messages: msgs, PresencePenalty: openai.Float(-0.5)},
	} {
		_, err := ts.chat().New(context.Background(), p)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != field ||
			!strings.Contains(apiErr.Message, field+" is not supported on the axcl lane") {
			t.Errorf("%s: %v", field, err)
		}
	}
	// Their neutral values pass.
	if _, err := ts.chat().New(context.Background(), openai.ChatCompletionNewParams{Model: "npu", Messages: msgs,
		Logprobs: openai.Bool(false), FrequencyPenalty: openai.Float(0), PresencePenalty: openai.Float(0)}); err != nil {
		t.Errorf("neutral values: %v", err)
	}
}
