package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

func tinyServer(t *testing.T) *testServer {
	root := t.TempDir()
	tinyDir(t, root, "tinystories")
	return start(t, Options{ModelDirs: []string{root}})
}

func TestOpenAIChatOnCPULane(t *testing.T) {
	ts := tinyServer(t)
	c := ts.client()
	resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:       "tinystories",
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")},
		MaxTokens:   openai.Int(12),
		Temperature: openai.Float(0),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 1 || resp.Choices[0].Message.Content == "" || resp.Choices[0].Message.Role != "assistant" {
		t.Fatalf("choices %+v", resp.Choices)
	}
	fr := resp.Choices[0].FinishReason
	if fr != "length" && fr != "stop" {
		t.Errorf("finish_reason %q", fr)
	}
	u := resp.Usage
	if u.PromptTokens < 4 || u.CompletionTokens < 1 || u.CompletionTokens > 12 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("usage %+v", u)
	}
	if fr == "length" && u.CompletionTokens != 12 {
		t.Errorf("finish length with %d tokens, max 12", u.CompletionTokens)
	}
	var m struct {
		TTFTMS   float64        `json:"ttft_ms"`
		TPS      float64        `json:"tps"`
		Lane     string         `json:"lane"`
		Hardware map[string]any `json:"hardware"`
	}
	if err := json.Unmarshal([]byte(u.JSON.ExtraFields["metrics"].Raw()), &m); err != nil {
		t.Fatalf("usage.metrics: %v in %s", err, u.RawJSON())
	}
	if m.TTFTMS <= 0 || m.Lane != "cpu" {
		t.Errorf("metrics %+v", m)
	}
	for _, k := range []string{"temp_c", "ram_used_mb", "cpu_load_pct"} {
		if _, ok := m.Hardware[k]; !ok {
			t.Errorf("hardware lacks %s: %v", k, m.Hardware)
		}
	}
	if v, ok := m.Hardware["ram_used_mb"].(float64); !ok || v <= 0 {
		t.Errorf("ram_used_mb %v", m.Hardware["ram_used_mb"])
	}

	// Greedy decoding is deterministic: the same request through the raw
	// completions route gives the same text (single user message → raw prompt).
	code, _, b := post(t, ts.URL+"/v1/completions", `{"model":"tinystories:latest","prompt":"Once upon a time","max_tokens":12,"temperature":0}`)
	var comp struct {
		Object  string `json:"object"`
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	json.Unmarshal(b, &comp)
	if code != 200 || comp.Object != "text_completion" || len(comp.Choices) != 1 || comp.Choices[0].Text != resp.Choices[0].Message.Content {
		t.Errorf("completions %d %s, chat said %q", code, b, resp.Choices[0].Message.Content)
	}
}

func TestOpenAIStreamWithUsage(t *testing.T) {
	ts := tinyServer(t)
	c := ts.client()
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "tinystories",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Tell a story."), openai.UserMessage("Tom had a dog.")},
		MaxTokens:     openai.Int(10),
		Temperature:   openai.Float(0),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var chunks []openai.ChatCompletionChunk
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		ch := stream.Current()
		chunks = append(chunks, ch)
		if !acc.AddChunk(ch) {
			t.Fatalf("accumulator rejected chunk %s", ch.RawJSON())
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 4 {
		t.Fatalf("%d chunks", len(chunks))
	}
	id := chunks[0].ID
	var text strings.Builder
	for i, ch := range chunks {
		if ch.ID != id || ch.Object != "chat.completion.chunk" || ch.Created != chunks[0].Created {
			t.Errorf("chunk %d: id %q object %q created %d", i, ch.ID, ch.Object, ch.Created)
		}
		switch {
		case i == 0:
			if len(ch.Choices) != 1 || ch.Choices[0].Delta.Role != "assistant" || ch.Choices[0].FinishReason != "" {
				t.Errorf("first chunk %s", ch.RawJSON())
			}
		case i == len(chunks)-1:
			if len(ch.Choices) != 0 || ch.Usage.CompletionTokens < 1 || ch.Usage.PromptTokens < 4 {
				t.Errorf("usage chunk %s", ch.RawJSON())
			}
			if _, ok := ch.Usage.JSON.ExtraFields["metrics"]; !ok {
				t.Errorf("usage chunk lacks metrics: %s", ch.RawJSON())
			}
		case i == len(chunks)-2:
			if len(ch.Choices) != 1 || ch.Choices[0].FinishReason == "" || ch.Choices[0].Delta.Content != "" {
				t.Errorf("finish chunk %s", ch.RawJSON())
			}
		default:
			if len(ch.Choices) != 1 || ch.Choices[0].Delta.Role != "" || ch.Choices[0].FinishReason != "" {
				t.Errorf("content chunk %d %s", i, ch.RawJSON())
			}
			if ch.JSON.Usage.Valid() && ch.Usage.TotalTokens != 0 {
				t.Errorf("usage on a content chunk: %s", ch.RawJSON())
			}
			text.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if text.Len() == 0 || acc.Choices[0].Message.Content != text.String() {
		t.Errorf("streamed %q, accumulated %q", text.String(), acc.Choices[0].Message.Content)
	}
	if last := chunks[len(chunks)-1]; int(last.Usage.CompletionTokens) > 10 {
		t.Errorf("completion tokens %d > max_tokens", last.Usage.CompletionTokens)
	}
}

func TestOpenAIErrors(t *testing.T) {
	ts := tinyServer(t)
	c := ts.client()
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "no-such-model", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Type != "not_found_error" || apiErr.Code != "model_not_found" ||
		!strings.Contains(apiErr.Message, "no-such-model") {
		t.Fatalf("unknown model: %v", err)
	}
	_, err = c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "tinystories", Messages: nil})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Type != "invalid_request_error" {
		t.Fatalf("empty messages: %v", err)
	}

	for name, tc := range map[string]struct {
		body string
		want string
	}{
		"wrong type":      {`{"model":"tinystories","messages":"hi"}`, `"messages" must be an array`},
		"wrong nested":    {`{"model":"tinystories","messages":[{"role":"user","content":5}]}`, "content must be a string"},
		"wrong number":    {`{"model":"tinystories","messages":[{"role":"user","content":"a"}],"max_tokens":"ten"}`, `"max_tokens" must be a number`},
		"negative":        {`{"model":"tinystories","messages":[{"role":"user","content":"a"}],"max_tokens":-1}`, `"max_tokens" = -1 is out of range: want an integer from 0`},
		"bad json":        {`{"model":"tinystories",`, "ends in the middle"},
		"syntax":          {`{"model" "x"}`, "invalid JSON at byte"},
		"empty body":      {``, "empty request body"},
		"not object":      {`[1,2]`, "must be a JSON object"},
		"bad role":        {`{"model":"tinystories","messages":[{"role":"wizard","content":"a"}]}`, `role "wizard"`},
		"image part":      {`{"model":"tinystories","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, "only text parts"},
		"missing model":   {`{"messages":[{"role":"user","content":"a"}]}`, "model is required"},
		"n=2":             {`{"model":"tinystories","messages":[{"role":"user","content":"a"}],"n":2}`, "n = 2 is not supported"},
		"temperature str": {`{"model":"tinystories","messages":[{"role":"user","content":"a"}],"temperature":"hot"}`, `"temperature" must be a number`},
	} {
		code, hdr, b := post(t, ts.URL+"/v1/chat/completions", tc.body)
		var env struct {
			Error *struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
				Code    *string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(b, &env); err != nil || env.Error == nil {
			t.Errorf("%s: body %s", name, b)
			continue
		}
		if code != 400 || env.Error.Type != "invalid_request_error" || !strings.Contains(env.Error.Message, tc.want) ||
			!strings.Contains(hdr.Get("Content-Type"), "application/json") {
			t.Errorf("%s: %d %s, want 400 mentioning %q", name, code, b, tc.want)
		}
		// param names the field a field error is about, else null.
		param := map[string]string{"wrong type": `"messages"`, "wrong number": `"max_tokens"`, "negative": `"max_tokens"`,
			"n=2": `"n"`, "temperature str": `"temperature"`}[name]
		if param == "" {
			param = "null"
		}
		if !strings.Contains(string(b), `"param":`+param) || !strings.Contains(string(b), `"code":null`) {
			t.Errorf("%s: envelope must carry param %s and code: %s", name, param, b)
		}
	}

	// Nulls where fields are optional, unknown keys, content as text parts.
	code, _, b := post(t, ts.URL+"/v1/chat/completions", `{"model":"tinystories","messages":[
		{"role":"system","content":null},{"role":"user","content":[{"type":"text","text":"Once upon"},{"type":"text","text":" a time"}]}],
		"temperature":null,"max_tokens":3,"stop":null,"stream":null,"stream_options":null,"seed":null,"tools":null,"user":"x","frobnicate":{"a":1}}`)
	if code != 200 {
		t.Errorf("nulls and unknown keys: %d %s", code, b)
	}
	// Method and route errors are not 500s.
	if code, _ := get(t, ts.URL+"/v1/chat/completions"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET chat: %d", code)
	}
}

// A client leaving mid-stream cancels the CPU engine's generation (recorded
// as 499) and the lane serves the next request.
func TestClientGoneOnCPULane(t *testing.T) {
	ts := tinyServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := ts.chat().NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: "tinystories", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")}})
	for n := 0; stream.Next(); n++ {
		if n == 2 {
			cancel()
			break
		}
	}
	stream.Close()
	eventually(t, "499 recorded", func() bool {
		return metric(t, ts, `edgectl_requests_total{route="/v1/chat/completions",model="tinystories:latest",code="499"}`) == "1"
	})
	resp, err := ts.chat().New(context.Background(), openai.ChatCompletionNewParams{Model: "tinystories",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")}, MaxTokens: openai.Int(4)})
	if err != nil || resp.Choices[0].Message.Content == "" {
		t.Fatalf("next request: %v", err)
	}
}
