package api

import "encoding/json"

// UpstreamChunk is what the upstream lane reads from an OpenAI-compatible
// server, streamed or not: the standard fields plus the vendor extensions
// it normalizes (serving.md §8, §10).
type UpstreamChunk struct {
	Choices []struct {
		Delta        *UpstreamMessage `json:"delta"`
		Message      *UpstreamMessage `json:"message"`
		Text         *string          `json:"text"`
		FinishReason *string          `json:"finish_reason"`
	} `json:"choices"`
	Usage   *UpstreamUsage  `json:"usage"`
	Timings *LlamaTimings   `json:"timings"`
	Error   json.RawMessage `json:"error"` // an object, a string, or absent
}

// UpstreamMessage is an upstream's message or stream delta.
type UpstreamMessage struct {
	Content   *string            `json:"content"`
	ToolCalls []UpstreamToolCall `json:"tool_calls"`
	// The thinking a reasoning model's server split off the answer:
	// reasoning_content (llama.cpp's server, DeepSeek's API, vLLM before
	// it renamed it) or reasoning (vLLM since, Ollama's /v1); a string,
	// though some gateways send an object there (engine/upstream reads it).
	ReasoningContent *string         `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
}

// UpstreamToolCall is a tool call in an upstream's answer: a streamed
// piece (index, and the first piece's id and name; arguments text to
// concatenate) or, in a whole message, the call.
type UpstreamToolCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"` // text; an object from Ollama-like servers
	} `json:"function"`
}

// UpstreamUsage is usage with FastFlowLM's extra fields (seconds and tok/s).
type UpstreamUsage struct {
	PromptTokens        int     `json:"prompt_tokens"`
	CompletionTokens    int     `json:"completion_tokens"`
	LoadDuration        float64 `json:"load_duration"`
	PrefillDurationTTFT float64 `json:"prefill_duration_ttft"`
	DecodingDuration    float64 `json:"decoding_duration"`
	PrefillSpeedTPS     float64 `json:"prefill_speed_tps"`
	DecodingSpeedTPS    float64 `json:"decoding_speed_tps"`
}

// LlamaTimings is llama-server's `timings` block (milliseconds).
type LlamaTimings struct {
	CacheN             int     `json:"cache_n"`
	PromptN            int     `json:"prompt_n"`
	PromptMS           float64 `json:"prompt_ms"`
	PromptPerSecond    float64 `json:"prompt_per_second"`
	PredictedN         int     `json:"predicted_n"`
	PredictedMS        float64 `json:"predicted_ms"`
	PredictedPerSecond float64 `json:"predicted_per_second"`
}

// UpstreamChatRequest is what the upstream lane sends. Messages is []ChatMessage,
// or a single ChatMessage for main_api_* servers.
type UpstreamChatRequest struct {
	Model         string         `json:"model"`
	Messages      any            `json:"messages"`
	Stream        bool           `json:"stream"`
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`
	MaxTokens     *int           `json:"max_tokens,omitempty"`
	Temperature   *float64       `json:"temperature,omitempty"`
	TopP          *float64       `json:"top_p,omitempty"`
	TopK          *int           `json:"top_k,omitempty"`
	MinP          *float64       `json:"min_p,omitempty"`
	Seed          *int64         `json:"seed,omitempty"`
	RepeatPenalty *float64       `json:"repeat_penalty,omitempty"`
	RepeatLastN   *int           `json:"repeat_last_n,omitempty"` // llama.cpp's server; -1: the whole context
	Stop          []string       `json:"stop,omitempty"`
	// ResponseFormat is OpenAI's response_format, forwarded as the client
	// sent it (llama.cpp's server and Ollama's /v1 constrain output by it).
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	// Tools and ToolChoice are forwarded as the client sent them: the
	// upstream server does tool calling.
	Tools             json.RawMessage `json:"tools,omitempty"`
	ToolChoice        json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	// A reasoning model's controls (engine/upstream/reasoning.go):
	// llama.cpp's reasoning_format, OpenAI's reasoning_effort, and the
	// chat template's variables (enable_thinking) as llama.cpp's server
	// and vLLM take them.
	ReasoningFormat    string         `json:"reasoning_format,omitempty"`
	ReasoningEffort    string         `json:"reasoning_effort,omitempty"`
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs,omitempty"`
}
