// Package api holds every wire type edgectl speaks or reads over HTTP: the
// OpenAI chat/completions surface, Ollama's native API, the telemetry block
// and health answer, and the vendor extensions the upstream lane
// normalizes; serve answers with them, engine/upstream reads them, and
// Client (client.go) talks to a running server with them. Request types are
// lenient the way official servers are (unknown keys ignored, null where a
// field is optional) but strict about types: a string where a number
// belongs is a 400, never a silent default.
package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ChatCompletionRequest is POST /v1/chat/completions.
type ChatCompletionRequest struct {
	Model               string        `json:"model"`
	Messages            []ChatMessage `json:"messages"`
	MaxCompletionTokens *int          `json:"max_completion_tokens,omitempty"`
	// TopLogprobs (0–20) goes with logprobs: true.
	TopLogprobs *int `json:"top_logprobs,omitempty"`
	// ResponseFormat is {"type":"text"}, {"type":"json_object"} or
	// {"type":"json_schema","json_schema":{"name","schema","strict"}}
	// (serve/format.go reads it).
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	// Tools are [{"type":"function","function":{"name","description",
	// "parameters"}}]; ToolChoice is "none", "auto", "required" or
	// {"type":"function","function":{"name":…}} (serve/tools.go reads
	// them).
	Tools      json.RawMessage `json:"tools,omitempty"`
	ToolChoice json.RawMessage `json:"tool_choice,omitempty"`
	// ParallelToolCalls false: at most one tool call per answer.
	ParallelToolCalls *bool `json:"parallel_tool_calls,omitempty"`
	// Refused (the deprecated spelling of tools): serve/fields.go.
	Functions    json.RawMessage `json:"functions,omitempty"`
	FunctionCall json.RawMessage `json:"function_call,omitempty"`
	// Reasoning models (serve/reasoning.go): ReasoningEffort is the chat
	// template's reasoning_effort (gpt-oss); ReasoningFormat is
	// llama.cpp's per-request reasoning_format ("auto" or "deepseek":
	// thinking in reasoning_content, the default; "none": left in
	// content); ChatTemplateKwargs are more template variables
	// ({"enable_thinking": false}), as llama.cpp and vLLM take them.
	ReasoningEffort    string          `json:"reasoning_effort,omitempty"`
	ReasoningFormat    string          `json:"reasoning_format,omitempty"`
	ChatTemplateKwargs json.RawMessage `json:"chat_template_kwargs,omitempty"`
	GenerationParams
}

// CompletionRequest is POST /v1/completions.
type CompletionRequest struct {
	Model  string     `json:"model"`
	Prompt StringList `json:"prompt"`
	// Refused until implemented.
	Echo   *bool   `json:"echo,omitempty"`
	BestOf *int    `json:"best_of,omitempty"`
	Suffix *string `json:"suffix,omitempty"`
	// ResponseFormat is chat's response_format, an extension here (OpenAI's
	// legacy completions have none; llama.cpp's server takes it).
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	GenerationParams
}

// GenerationParams are the fields both OpenAI generation routes take.
type GenerationParams struct {
	Stream        bool           `json:"stream,omitempty"`
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`
	MaxTokens     *int           `json:"max_tokens,omitempty"`
	Temperature   *float64       `json:"temperature,omitempty"`
	TopP          *float64       `json:"top_p,omitempty"`
	Seed          *int64         `json:"seed,omitempty"`
	Stop          StringList     `json:"stop,omitempty"`
	N             *int           `json:"n,omitempty"`
	// Logprobs is a boolean on chat and a count (0–20) on completions;
	// serve/fields.go reads it for its route.
	Logprobs         json.RawMessage `json:"logprobs,omitempty"`
	FrequencyPenalty *float64        `json:"frequency_penalty,omitempty"`
	PresencePenalty  *float64        `json:"presence_penalty,omitempty"`
	// Refused until implemented.
	LogitBias json.RawMessage `json:"logit_bias,omitempty"`
	// llama.cpp-style extensions many clients send.
	TopK          *int     `json:"top_k,omitempty"`
	MinP          *float64 `json:"min_p,omitempty"`
	RepeatPenalty *float64 `json:"repeat_penalty,omitempty"`
	// KeepAlive is an extension: Ollama's /v1 lacks it (ollama#9355).
	KeepAlive *Duration `json:"keep_alive,omitempty"`
}

// StreamOptions asks for the final usage chunk.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage,omitempty"`
}

// ChatMessage is one OpenAI chat message: an assistant turn may carry the
// tool calls it made, a tool turn the id of the call it answers.
type ChatMessage struct {
	Role       string     `json:"role"`
	Content    Content    `json:"content"`
	Name       string     `json:"name,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// ReasoningContent is an assistant turn's thinking sent back in the
	// history (llama.cpp's server and vLLM take it; Qwen3's and
	// DeepSeek's templates read message.reasoning_content).
	ReasoningContent string `json:"reasoning_content,omitempty"`
}

// ToolCall is one function call of an assistant message.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // function
	Function FunctionCall `json:"function"`
}

// FunctionCall is a call's function; Arguments is JSON text (as the
// model wrote it: clients parse it, and should expect it may not parse).
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolCallDelta is a streamed piece of a tool call: a call's first piece
// has its index, id, type and name (arguments ""), the next ones the same
// index and the next text of its arguments, which clients concatenate.
type ToolCallDelta struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function FunctionDelta `json:"function"`
}

// FunctionDelta is a ToolCallDelta's function part.
type FunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// Content is a message's content: a string, an array of text parts, or
// null (an assistant turn that only called tools). It is sent as a string.
type Content string

// UnmarshalJSON accepts a string, [{"type":"text","text":…}] or null.
func (c *Content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*c = ""
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Content(s)
		return nil
	case len(b) > 0 && b[0] == '[':
		var parts []struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return errors.New("content parts must be objects like {\"type\":\"text\",\"text\":\"…\"}")
		}
		var sb strings.Builder
		for i, p := range parts {
			if p.Type != "text" || p.Text == nil {
				return fmt.Errorf("content part %d has type %q: only text parts are supported", i, p.Type)
			}
			sb.WriteString(*p.Text)
		}
		*c = Content(sb.String())
		return nil
	}
	return errors.New("content must be a string, an array of text parts, or null")
}

// StringList is a string or an array of strings (stop, prompt).
type StringList []string

// UnmarshalJSON accepts a string, an array of strings, or null.
func (l *StringList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*l = nil
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*l = StringList{s}
		return nil
	case len(b) > 0 && b[0] == '[':
		var a []string
		if err := json.Unmarshal(b, &a); err != nil {
			return errors.New("want a string or an array of strings")
		}
		*l = a
		return nil
	}
	return errors.New("want a string or an array of strings")
}

// ChatCompletion is a non-streamed chat answer.
type ChatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"` // chat.completion
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []ChatChoice `json:"choices"`
	Usage             *Usage       `json:"usage,omitempty"`
}

// ChatChoice is one answer of a ChatCompletion.
type ChatChoice struct {
	Index        int             `json:"index"`
	Message      ResponseMessage `json:"message"`
	FinishReason string          `json:"finish_reason"`
	Logprobs     *ChatLogprobs   `json:"logprobs"` // null unless asked for
}

// ChatLogprobs are a chat choice's (or chunk's) token log-probabilities.
type ChatLogprobs struct {
	Content []TokenLogprob `json:"content"`
}

// TokenLogprob is one generated token: its text, log-probability, UTF-8
// bytes (a token may hold part of a character) and the most likely tokens
// at its position.
type TokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []TopLogprob `json:"top_logprobs"` // always an array
}

// TopLogprob is one of the most likely tokens at a position.
type TopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// ResponseMessage is the assistant's message. Content is null when the
// answer is only tool calls, as OpenAI sends it.
type ResponseMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ReasoningContent is the model's thinking, split off its answer (the
	// field llama.cpp's server and DeepSeek's API send).
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
}

// MarshalJSON writes content null for an answer of tool calls only.
func (m ResponseMessage) MarshalJSON() ([]byte, error) {
	type plain ResponseMessage
	if m.Content != "" || len(m.ToolCalls) == 0 {
		return json.Marshal(plain(m))
	}
	return json.Marshal(struct {
		Role             string     `json:"role"`
		Content          *string    `json:"content"`
		ReasoningContent string     `json:"reasoning_content,omitempty"`
		ToolCalls        []ToolCall `json:"tool_calls"`
	}{m.Role, nil, m.ReasoningContent, m.ToolCalls})
}

// ChatCompletionChunk is one SSE event of a streamed chat answer. No field
// is named "error": openai-go ends a stream on any chunk with that key.
type ChatCompletionChunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"` // chat.completion.chunk
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint string        `json:"system_fingerprint"`
	Choices           []ChunkChoice `json:"choices"` // always an array; empty only in the usage chunk
	Usage             *Usage        `json:"usage,omitempty"`
}

// ChunkChoice is a streamed delta.
type ChunkChoice struct {
	Index        int           `json:"index"`
	Delta        Delta         `json:"delta"`
	FinishReason *string       `json:"finish_reason"`
	Logprobs     *ChatLogprobs `json:"logprobs"`
}

// Delta is the new part of the message.
type Delta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"` // the next piece of the thinking
	ToolCalls        []ToolCallDelta `json:"tool_calls,omitempty"`
}

// Completion is a /v1/completions answer (object text_completion); its
// stream chunks have the same shape.
type Completion struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	SystemFingerprint string             `json:"system_fingerprint"`
	Choices           []CompletionChoice `json:"choices"`
	Usage             *Usage             `json:"usage,omitempty"`
}

// CompletionChoice is one completion.
type CompletionChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	FinishReason *string             `json:"finish_reason"`
	Logprobs     *CompletionLogprobs `json:"logprobs"`
}

// CompletionLogprobs is the legacy completions shape: parallel arrays, one
// entry per generated token; TopLogprobs maps token text to log-probability
// and TextOffset is each token's character offset in the text.
type CompletionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// Usage counts tokens; Metrics is edgectl's telemetry block.
type Usage struct {
	PromptTokens     int      `json:"prompt_tokens"`
	CompletionTokens int      `json:"completion_tokens"`
	TotalTokens      int      `json:"total_tokens"`
	Metrics          *Metrics `json:"metrics,omitempty"`
}

// ModelList is GET /v1/models.
type ModelList struct {
	Object string        `json:"object"` // list
	Data   []ModelObject `json:"data"`
}

// ModelObject is one entry of /v1/models.
type ModelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // model
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	// Fields says what the model's backend does with each sampling and
	// scoring field: "applied", "forwarded" (to an upstream server) or
	// "refused" (a 400 naming it). An edgectl extension.
	Fields map[string]string `json:"fields,omitempty"`
}

// ErrorEnvelope is OpenAI's error body.
type ErrorEnvelope struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody always carries all four keys; param and code may be null.
type ErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// OpenAI error types by status.
const (
	ErrTypeInvalidRequest = "invalid_request_error"
	ErrTypeAuthentication = "authentication_error"
	ErrTypeNotFound       = "not_found_error"
	ErrTypeServer         = "api_error"
	ErrTypeOverloaded     = "server_overloaded"
)
