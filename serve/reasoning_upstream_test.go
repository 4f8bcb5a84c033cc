package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/engine/upstream"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// What the fake reasoning server thinks and answers.
const (
	upThought = "The user asks for the capital of France. That is Paris."
	upAnswer  = "Paris."
)

// reasoningUpstream is an HTTP upstream speaking llama-server's wire
// format for a reasoning model under --reasoning-format auto: streamed,
// the thinking comes in delta.reasoning_content pieces before the
// content pieces (a role chunk first, usage and timings on the finish
// chunk); upstream model "whole" answers one chat.completion object
// whose message carries the thinking as reasoning (vLLM's name since its
// rename, Ollama's /v1). As Qwen3 under llama-server,
// chat_template_kwargs.enable_thinking false makes it answer without
// thinking. It keeps the last request body.
func reasoningUpstream(t *testing.T) (*httptest.Server, func() map[string]json.RawMessage) {
	var mu sync.Mutex
	var last map[string]json.RawMessage
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		var b map[string]json.RawMessage
		json.NewDecoder(r.Body).Decode(&b)
		mu.Lock()
		last = b
		mu.Unlock()
		var kw struct {
			EnableThinking *bool `json:"enable_thinking"`
		}
		json.Unmarshal(b["chat_template_kwargs"], &kw)
		thinks := kw.EnableThinking == nil || *kw.EnableThinking
		const head = `"id":"chatcmpl-x","created":1764000000,"model":"qwen3","system_fingerprint":"b7000-deadbeef"`
		if string(b["model"]) == `"whole"` {
			msg := map[string]any{"role": "assistant", "content": upAnswer}
			if thinks {
				msg["reasoning"] = upThought
			}
			body, _ := json.Marshal(map[string]any{"object": "chat.completion", "choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": msg}},
				"usage": map[string]int{"prompt_tokens": 12, "completion_tokens": 20}})
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) {
			fmt.Fprintf(w, "data: {\"choices\":[{\"finish_reason\":%s,\"index\":0,\"delta\":%s}],%s,\"object\":\"chat.completion.chunk\"}\n\n", finish, delta, head)
		}
		chunk(`{"role":"assistant","content":null}`, "null")
		if thinks {
			for _, w := range strings.SplitAfter(upThought, " ") {
				d, _ := json.Marshal(map[string]string{"reasoning_content": w})
				chunk(string(d), "null")
			}
		}
		for _, w := range []string{"Par", "is."} {
			d, _ := json.Marshal(map[string]string{"content": w})
			chunk(string(d), "null")
		}
		fmt.Fprintf(w, "data: {\"choices\":[{\"finish_reason\":\"stop\",\"index\":0,\"delta\":{}}],%s,\"object\":\"chat.completion.chunk\","+
			"\"usage\":{\"completion_tokens\":20,\"prompt_tokens\":12,\"total_tokens\":32},"+
			"\"timings\":{\"prompt_n\":12,\"prompt_ms\":5.1,\"predicted_n\":20,\"predicted_ms\":40.2}}\n\ndata: [DONE]\n\n", head)
	}))
	t.Cleanup(up.Close)
	return up, func() map[string]json.RawMessage {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

// upstreamReasoningServer serves the fake reasoning server as "remote"
// (streamed) and "remote-whole" (one JSON object).
func upstreamReasoningServer(t *testing.T) (*testServer, func() map[string]json.RawMessage) {
	up, last := reasoningUpstream(t)
	ups := []upstream.Config{{Name: "remote", URL: up.URL}, {Name: "remote-whole", URL: up.URL, Model: "whole"}}
	ts := start(t, Options{Upstreams: ups, Engines: map[string]engine.Engine{
		LaneCPU: cpu.New(), "upstream": upstream.New(ups, upstream.Options{StartTimeout: 5 * time.Second})}})
	return ts, last
}

// Through openai-go: an upstream's reasoning_content (and reasoning)
// comes out as reasoning_content beside the content, streamed and not;
// the client's reasoning controls and the thinking it sends back in the
// history reach the upstream; reasoning_format none puts the thinking
// back in the content, as the model wrote it.
func TestUpstreamReasoningThroughOpenAIClient(t *testing.T) {
	ts, last := upstreamReasoningServer(t)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: "remote", Messages: []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage("Capital of Spain?"), openai.AssistantMessage("Madrid."), openai.UserMessage("Capital of France?")},
		ReasoningEffort: openai.ReasoningEffortHigh}
	withHistory := option.WithJSONSet("messages.1.reasoning_content", "Spain's capital is Madrid.")
	kwargs := option.WithJSONSet("chat_template_kwargs", map[string]any{"enable_thinking": true, "custom": 1})

	for _, model := range []string{"remote", "remote-whole"} {
		params.Model = model
		resp, err := ts.chat().New(ctx, params, withHistory, kwargs, option.WithJSONSet("reasoning_format", "deepseek"))
		if err != nil || len(resp.Choices) != 1 {
			t.Fatalf("%s: %v %+v", model, err, resp)
		}
		msg := resp.Choices[0].Message
		if got := extraString(t, extraFields(msg.JSON.ExtraFields), "reasoning_content"); got != upThought || msg.Content != upAnswer {
			t.Errorf("%s: content %q, reasoning_content %q; want %q and %q", model, msg.Content, got, upAnswer, upThought)
		}
	}
	sent := last()
	var msgs []map[string]any
	json.Unmarshal(sent["messages"], &msgs)
	if len(msgs) != 3 || msgs[1]["reasoning_content"] != "Spain's capital is Madrid." {
		t.Errorf("upstream got messages %s; want the assistant turn's reasoning_content", sent["messages"])
	}
	if string(sent["reasoning_format"]) != `"deepseek"` || string(sent["reasoning_effort"]) != `"high"` ||
		!jsonEqual(sent["chat_template_kwargs"], json.RawMessage(`{"enable_thinking":true,"reasoning_effort":"high","custom":1}`)) {
		t.Errorf("upstream got reasoning_format %s, reasoning_effort %s, chat_template_kwargs %s", sent["reasoning_format"], sent["reasoning_effort"], sent["chat_template_kwargs"])
	}

	params.Model = "remote"
	stream := ts.chat().NewStreaming(ctx, params)
	var thought, content strings.Builder
	pieces := 0
	for stream.Next() {
		c := stream.Current()
		if len(c.Choices) == 0 {
			continue
		}
		if r := extraString(t, extraFields(c.Choices[0].Delta.JSON.ExtraFields), "reasoning_content"); r != "" {
			if content.Len() > 0 {
				t.Errorf("reasoning_content %q after content %q", r, content.String())
			}
			thought.WriteString(r)
			pieces++
		}
		content.WriteString(c.Choices[0].Delta.Content)
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if thought.String() != upThought || content.String() != upAnswer || pieces < 2 {
		t.Errorf("streamed reasoning_content %q in %d pieces, content %q; want %q as it streamed and %q", thought.String(), pieces, content.String(), upThought, upAnswer)
	}

	// reasoning_format none: an upstream that splits anyway has its
	// thinking put back in the content, as the model wrote it.
	want := "<think>\n" + upThought + "\n</think>\n\n" + upAnswer
	none := option.WithJSONSet("reasoning_format", "none")
	raw, err := ts.chat().New(ctx, params, none)
	if err != nil {
		t.Fatal(err)
	}
	if got := raw.Choices[0].Message; got.Content != want || strings.Contains(got.RawJSON(), "reasoning_content") {
		t.Errorf("reasoning_format none: %s; want content %q", got.RawJSON(), want)
	}
	stream = ts.chat().NewStreaming(ctx, params, none)
	content.Reset()
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 {
			content.WriteString(c.Choices[0].Delta.Content)
		}
	}
	if stream.Err() != nil || content.String() != want {
		t.Errorf("reasoning_format none, streamed: content %q (%v); want %q", content.String(), stream.Err(), want)
	}
}

// Through Ollama's HTTP API: think true, a level, or absent shows the
// upstream's thinking in thinking (streamed: the lines' thinking, then
// their content), and reaches the upstream as enable_thinking /
// reasoning_effort; think false turns it off there; an assistant turn's
// thinking is sent back as reasoning_content.
func TestUpstreamThinkThroughOllamaHTTP(t *testing.T) {
	ts, last := upstreamReasoningServer(t)
	history := `[{"role":"user","content":"Capital of Spain?"},{"role":"assistant","content":"Madrid.","thinking":"Spain's capital is Madrid."},{"role":"user","content":"Capital of France?"}]`
	for _, tc := range []struct {
		model, think string
		stream       bool
		kwargs       string // what the upstream is sent
		effort       string
	}{
		{"remote", `true`, true, `{"enable_thinking":true}`, ``},
		{"remote", `"high"`, false, `{"enable_thinking":true,"reasoning_effort":"high"}`, `"high"`},
		{"remote-whole", `true`, false, `{"enable_thinking":true}`, ``},
		{"remote", ``, true, ``, ``},
	} {
		body := fmt.Sprintf(`{"model":%q,"messages":%s,"stream":%v`, tc.model, history, tc.stream)
		if tc.think != "" {
			body += `,"think":` + tc.think
		}
		code, _, b := post(t, ts.URL+"/api/chat", body+"}")
		if code != http.StatusOK {
			t.Fatalf("%s think %s: %d %s", tc.model, tc.think, code, b)
		}
		var thinking, content strings.Builder
		for _, line := range ndjson(t, b) {
			m, _ := line["message"].(map[string]any)
			th, _ := m["thinking"].(string)
			c, _ := m["content"].(string)
			if th != "" && content.Len() > 0 {
				t.Errorf("%s think %s: thinking %q after content %q", tc.model, tc.think, th, content.String())
			}
			thinking.WriteString(th)
			content.WriteString(c)
		}
		if thinking.String() != upThought || content.String() != upAnswer {
			t.Errorf("%s think %s: thinking %q, content %q; want %q, %q (%s)", tc.model, tc.think, thinking.String(), content.String(), upThought, upAnswer, b)
		}
		sent := last()
		if string(sent["chat_template_kwargs"]) != tc.kwargs || string(sent["reasoning_effort"]) != tc.effort {
			t.Errorf("%s think %s: upstream got chat_template_kwargs %s, reasoning_effort %s; want %s, %s", tc.model, tc.think, sent["chat_template_kwargs"], sent["reasoning_effort"], tc.kwargs, tc.effort)
		}
		if !strings.Contains(string(sent["messages"]), `"reasoning_content":"Spain's capital is Madrid."`) {
			t.Errorf("upstream got messages %s; want the assistant turn's thinking as reasoning_content", sent["messages"])
		}
	}

	code, _, b := post(t, ts.URL+"/api/chat", `{"model":"remote","stream":false,"think":false,"messages":[{"role":"user","content":"Capital of France?"}]}`)
	var off struct {
		Message struct{ Content, Thinking string }
	}
	if code != http.StatusOK || json.Unmarshal(b, &off) != nil || off.Message.Content != upAnswer || off.Message.Thinking != "" {
		t.Errorf("think false: %d %s; want the answer alone", code, b)
	}
	if kw := string(last()["chat_template_kwargs"]); kw != `{"enable_thinking":false}` {
		t.Errorf("think false: upstream got chat_template_kwargs %s", kw)
	}

	code, _, b = post(t, ts.URL+"/api/generate", `{"model":"remote","stream":false,"think":true,"prompt":"Capital of France?"}`)
	var gen struct{ Response, Thinking string }
	if code != http.StatusOK || json.Unmarshal(b, &gen) != nil || gen.Response != upAnswer || gen.Thinking != upThought {
		t.Errorf("/api/generate think true: %d %s", code, b)
	}
}

// The Responses and Messages routes show an upstream's thinking as they
// show the cpu lane's: a reasoning item; a thinking block when asked for,
// nothing otherwise (as Anthropic).
func TestUpstreamReasoningThroughResponsesAndMessages(t *testing.T) {
	ts, _ := upstreamReasoningServer(t)
	code, _, b := post(t, ts.URL+"/v1/responses", `{"model":"remote","input":"Capital of France?"}`)
	var resp struct {
		Output []struct {
			Type    string
			Summary []struct{ Text string }
			Content []struct{ Text string }
		}
	}
	if code != http.StatusOK || json.Unmarshal(b, &resp) != nil || len(resp.Output) != 2 || resp.Output[0].Type != "reasoning" ||
		len(resp.Output[0].Summary) != 1 || resp.Output[0].Summary[0].Text != upThought || resp.Output[1].Content[0].Text != upAnswer {
		t.Errorf("responses: %d %s; want a reasoning item holding the thinking, then the answer", code, b)
	}

	for thinking, want := range map[string]string{
		`,"thinking":{"type":"enabled","budget_tokens":1024}`: "thinking:" + upThought + " text:" + upAnswer,
		``: "text:" + upAnswer,
	} {
		code, _, b := post(t, ts.URL+"/v1/messages", `{"model":"remote","max_tokens":100,"messages":[{"role":"user","content":"Capital of France?"}]`+thinking+`}`)
		var msg struct {
			Content []struct{ Type, Text, Thinking string }
		}
		if code != http.StatusOK || json.Unmarshal(b, &msg) != nil {
			t.Fatalf("messages %s: %d %s", thinking, code, b)
		}
		var got []string
		for _, c := range msg.Content {
			got = append(got, c.Type+":"+c.Text+c.Thinking)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("messages%s: %s; want %s", thinking, b, want)
		}
	}
}

// On the cpu lane the thinking of an assistant turn sent back reaches
// the chat template, which decides what to keep: Qwen3's writes it for
// the turns after the last user message (a tool-call chain) and drops it
// for earlier ones, so only the first adds to the prompt.
func TestReasoningContentHistoryOnCPULane(t *testing.T) {
	ts, _ := reasoningServer(t)
	promptTokens := func(messages string) int {
		t.Helper()
		code, _, b := post(t, ts.URL+"/v1/chat/completions", `{"model":"qwen3","max_tokens":1,"messages":`+messages+`}`)
		var r struct {
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			} `json:"usage"`
		}
		if code != http.StatusOK || json.Unmarshal(b, &r) != nil {
			t.Fatalf("%d %s", code, b)
		}
		return r.Usage.PromptTokens
	}
	const thought = `,"reasoning_content":"I should look up the weather in Paris first."`
	chain := func(r string) string {
		return `[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":""` + r +
			`,"tool_calls":[{"id":"c1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
			`{"role":"tool","tool_call_id":"c1","content":"sunny"}]`
	}
	if with, without := promptTokens(chain(thought)), promptTokens(chain("")); with <= without {
		t.Errorf("tool-call chain: %d prompt tokens with the turn's reasoning_content, %d without; want more with", with, without)
	}
	earlier := func(r string) string {
		return `[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello!"` + r + `},{"role":"user","content":"Weather in Paris?"}]`
	}
	if with, without := promptTokens(earlier(thought)), promptTokens(earlier("")); with != without {
		t.Errorf("an earlier turn: %d prompt tokens with its reasoning_content, %d without; Qwen3's template drops it", with, without)
	}
}
