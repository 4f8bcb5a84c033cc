package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/engine/upstream"
)

// countParams is a Messages request with a system prompt and a tool, and
// the same request as count_tokens takes it.
func countParams(model, user string) (anthropic.MessageNewParams, anthropic.MessageCountTokensParams) {
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(user))}
	sys := []anthropic.TextBlockParam{{Text: "Answer briefly."}}
	tool := anthropic.ToolParam{Name: "get_weather", Description: anthropic.String("Current weather in a city"),
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"}}}
	return anthropic.MessageNewParams{Model: model, MaxTokens: 3, Temperature: anthropic.Float(0), Messages: msgs, System: sys,
			Tools: []anthropic.ToolUnionParam{{OfTool: &tool}}},
		anthropic.MessageCountTokensParams{Model: model, Messages: msgs, System: anthropic.MessageCountTokensParamsSystemUnion{OfTextBlockArray: sys},
			Tools: []anthropic.MessageCountTokensToolUnionParam{{OfTool: &tool}}}
}

// A Messages stream's message_start carries the prompt's input_tokens, as
// Anthropic's does (clients such as @ai-sdk/anthropic and LangChain read
// them there): the count_tokens answer, the unstreamed usage and
// message_delta's all agree, through anthropic-sdk-go; output_tokens is
// 0 there (nothing generated yet).
func TestMessagesStartCarriesInputTokens(t *testing.T) {
	ts := toolServer(t)
	c := ts.anthropic()
	ctx := context.Background()
	params, cparams := countParams("qwen", "Weather in Oslo?")
	counted, err := c.Messages.CountTokens(ctx, cparams)
	if err != nil || counted.InputTokens < 100 { // Qwen2.5's tool prompt, spelt a character at a time
		t.Fatalf("count_tokens: %v %+v", err, counted)
	}
	msg, err := c.Messages.New(ctx, params)
	if err != nil || msg.Usage.InputTokens != counted.InputTokens {
		t.Fatalf("unstreamed: %v, usage %s; count_tokens said %d", err, msg.Usage.RawJSON(), counted.InputTokens)
	}
	stream := c.Messages.NewStreaming(ctx, params)
	var acc anthropic.Message
	var start, delta int64 = -1, -1
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "message_start":
			u := ev.AsMessageStart().Message.Usage
			if u.OutputTokens != 0 {
				t.Errorf("message_start usage %s: want output_tokens 0", u.RawJSON())
			}
			start = u.InputTokens
		case "message_delta":
			delta = ev.AsMessageDelta().Usage.InputTokens
		case "content_block_delta":
			if start < 0 {
				t.Error("content before message_start")
			}
		}
		if err := acc.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if start != counted.InputTokens || delta != counted.InputTokens || acc.Usage.InputTokens != counted.InputTokens || acc.Usage.OutputTokens != msg.Usage.OutputTokens {
		t.Errorf("message_start input_tokens %d, message_delta %d, accumulated %s; count_tokens %d, unstreamed %s",
			start, delta, acc.Usage.RawJSON(), counted.InputTokens, msg.Usage.RawJSON())
	}
}

// On the cpu lane count_tokens renders and tokenizes the prompt and runs
// nothing: a prompt of thousands of tokens is counted with no prefill (the
// lane's prompt-token counter does not move; a message's does), and its
// count is the one the message's usage reports. A prompt that cannot fit
// the context is still refused as a generation refuses it.
func TestCountTokensRunsNoPrefill(t *testing.T) {
	ts := toolServer(t)
	c := ts.anthropic()
	ctx := context.Background()
	long := strings.Repeat("The little dog ran to the park and played with a red ball. ", 250)
	params, cparams := countParams("qwen", long)
	if _, err := c.Messages.New(ctx, anthropic.MessageNewParams{Model: "qwen", MaxTokens: 1, // loads the model, counts a prompt
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}); err != nil {
		t.Fatal(err)
	}
	series := `edgectl_prompt_tokens_total{model="qwen:latest"}`
	before := metric(t, ts, series)
	if strings.Contains(before, "missing") {
		t.Fatalf("%s after a message: %s", series, before)
	}
	t0 := time.Now()
	counted, err := c.Messages.CountTokens(ctx, cparams)
	took := time.Since(t0)
	if err != nil || counted.InputTokens < 2500 {
		t.Fatalf("count_tokens: %v %+v", err, counted)
	}
	if after := metric(t, ts, series); after != before {
		t.Errorf("count_tokens ran a prefill: %s went from %s to %s", series, before, after)
	}
	t.Logf("counted %d tokens in %v", counted.InputTokens, took)
	msg, err := c.Messages.New(ctx, params)
	if err != nil || msg.Usage.InputTokens != counted.InputTokens || metric(t, ts, series) == before {
		t.Errorf("message: %v, usage %s; count_tokens said %d; %s %s", err, msg.Usage.RawJSON(), counted.InputTokens, series, metric(t, ts, series))
	}

	_, huge := countParams("qwen", strings.Repeat("word ", 20000))
	_, err = c.Messages.CountTokens(ctx, huge)
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.RawJSON(), "context window exceeded") {
		t.Errorf("a prompt past the context: %v", err)
	}
}

// A lane that cannot count apart from generating (an HTTP upstream)
// answers count_tokens from a generation's prompt count, as before; its
// message_start says 0 and message_delta the count.
func TestCountTokensOnUpstream(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":17,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
	}))
	defer up.Close()
	ups := []upstream.Config{{Name: "remote", URL: up.URL}}
	ts := start(t, Options{Upstreams: ups, Engines: map[string]engine.Engine{
		LaneCPU: cpu.New(), "upstream": upstream.New(ups, upstream.Options{StartTimeout: 5 * time.Second})}})
	c := ts.anthropic()
	params, cparams := countParams("remote", "hi")
	counted, err := c.Messages.CountTokens(context.Background(), cparams)
	if err != nil || counted.InputTokens != 17 {
		t.Fatalf("count_tokens: %v %+v", err, counted)
	}
	stream := c.Messages.NewStreaming(context.Background(), params)
	var start, delta int64 = -1, -1
	for stream.Next() {
		switch ev := stream.Current(); ev.Type {
		case "message_start":
			start = ev.AsMessageStart().Message.Usage.InputTokens
		case "message_delta":
			delta = ev.AsMessageDelta().Usage.InputTokens
		}
	}
	if stream.Err() != nil || start != 0 || delta != 17 {
		t.Errorf("stream: %v, message_start input_tokens %d, message_delta %d", stream.Err(), start, delta)
	}
}
