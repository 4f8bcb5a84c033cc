package serve

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// /v1/completions takes response_format as chat does (an extension OpenAI's
// legacy route lacks and llama.cpp's server has): through the official
// client's extra fields, the TinyStories model, which never writes JSON by
// itself, completes a prompt with a document that validates; json_object
// gives an object; a schema the grammar refuses is a 400 on response_format.
func TestCompletionsResponseFormat(t *testing.T) {
	ts := jsonServer(t)
	var schema map[string]any
	if err := json.Unmarshal([]byte(personSchema), &schema); err != nil {
		t.Fatal(err)
	}
	c := ts.client()
	params := openai.CompletionNewParams{Model: "tinystories", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
		MaxTokens: openai.Int(400), Temperature: openai.Float(0)}
	resp, err := c.Completions.New(context.Background(), params,
		option.WithJSONSet("response_format", map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "person", "schema": schema, "strict": true}}))
	if err != nil || len(resp.Choices) != 1 {
		t.Fatalf("json_schema: %v %+v", err, resp)
	}
	if resp.Choices[0].FinishReason != "stop" {
		t.Errorf("finish_reason %q", resp.Choices[0].FinishReason)
	}
	checkPerson(t, "completions json_schema", resp.Choices[0].Text)

	stream := c.Completions.NewStreaming(context.Background(), params, option.WithJSONSet("response_format", map[string]any{"type": "json_object"}))
	var text strings.Builder
	for stream.Next() {
		for _, ch := range stream.Current().Choices {
			text.WriteString(ch.Text)
		}
	}
	var m map[string]any
	if err := stream.Err(); err != nil || json.Unmarshal([]byte(text.String()), &m) != nil {
		t.Errorf("json_object streamed: %v %q", err, text.String())
	}

	_, err = c.Completions.New(context.Background(), params, option.WithJSONSet("response_format",
		map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "z", "schema": map[string]any{"type": "string", "pattern": "^[0-9]+$"}}}))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "response_format" || !strings.Contains(apiErr.Message, `"pattern"`) {
		t.Errorf("pattern: %v", err)
	}
	_, err = c.Completions.New(context.Background(), params, option.WithJSONSet("response_format", map[string]any{"type": "yaml"}))
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "response_format" {
		t.Errorf("type yaml: %v", err)
	}
}
