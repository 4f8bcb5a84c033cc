package api

import (
	"encoding/json"
	"time"
)

// GenerateRequest is POST /api/generate.
type GenerateRequest struct {
	Model     string          `json:"model"`
	Prompt    string          `json:"prompt"`
	Suffix    string          `json:"suffix,omitempty"`
	System    string          `json:"system,omitempty"`
	Template  string          `json:"template,omitempty"`
	Raw       bool            `json:"raw,omitempty"`
	Stream    *bool           `json:"stream,omitempty"`
	KeepAlive *Duration       `json:"keep_alive,omitempty"`
	Options   *Options        `json:"options,omitempty"`
	Format    json.RawMessage `json:"format,omitempty"` // "json" or a JSON schema (serve/format.go)
	Images    []string        `json:"images,omitempty"`
	Context   []int           `json:"context,omitempty"`
	Think     json.RawMessage `json:"think,omitempty"`
	OllamaLogprobsRequest
}

// ChatRequest is POST /api/chat.
type ChatRequest struct {
	Model     string          `json:"model"`
	Messages  []Message       `json:"messages"`
	Stream    *bool           `json:"stream,omitempty"`
	KeepAlive *Duration       `json:"keep_alive,omitempty"`
	Options   *Options        `json:"options,omitempty"`
	Format    json.RawMessage `json:"format,omitempty"` // "json" or a JSON schema (serve/format.go)
	Tools     json.RawMessage `json:"tools,omitempty"`
	// ToolChoice is OpenAI's tool_choice, an edgectl extension (Ollama
	// has none: its models decide).
	ToolChoice json.RawMessage `json:"tool_choice,omitempty"`
	Think      json.RawMessage `json:"think,omitempty"`
	OllamaLogprobsRequest
}

// OllamaLogprobsRequest asks for token log-probabilities (Ollama 0.12.11+).
type OllamaLogprobsRequest struct {
	Logprobs    bool `json:"logprobs,omitempty"`
	TopLogprobs *int `json:"top_logprobs,omitempty"` // 0–20, with logprobs
}

// OllamaTopLogprob is one token and its log-probability.
type OllamaTopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes,omitempty"`
}

// OllamaLogprob is a generated token with the most likely tokens at its
// position.
type OllamaLogprob struct {
	OllamaTopLogprob
	TopLogprobs []OllamaTopLogprob `json:"top_logprobs,omitempty"`
}

// Message is one Ollama chat turn. Content null is read as "". A tool
// turn names the function it answers in ToolName.
type Message struct {
	Role      string           `json:"role"`
	Content   string           `json:"content"`
	Thinking  string           `json:"thinking,omitempty"`
	Images    []string         `json:"images,omitempty"`
	ToolCalls []OllamaToolCall `json:"tool_calls,omitempty"`
	ToolName  string           `json:"tool_name,omitempty"`
}

// OllamaToolCall is one function call of an assistant turn; unlike
// OpenAI's, its arguments are a JSON object, not text.
type OllamaToolCall struct {
	ID       string             `json:"id,omitempty"`
	Function OllamaFunctionCall `json:"function"`
}

// OllamaFunctionCall is a call's function. Arguments is a JSON object.
type OllamaFunctionCall struct {
	Index     int             `json:"index"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Options are the model options Ollama requests carry: the ones edgectl
// honours, and the ones that would change the output and it refuses until
// they are implemented (serve/fields.go). num_ctx, num_thread and the
// frequency/presence penalties are honoured on the cpu lane only. Others (num_batch, num_gpu, …)
// only tune speed and are ignored like any unknown key.
type Options struct {
	Temperature      *float64   `json:"temperature,omitempty"`
	TopK             *int       `json:"top_k,omitempty"`
	TopP             *float64   `json:"top_p,omitempty"`
	MinP             *float64   `json:"min_p,omitempty"`
	RepeatPenalty    *float64   `json:"repeat_penalty,omitempty"`
	RepeatLastN      *int       `json:"repeat_last_n,omitempty"`
	Seed             *int64     `json:"seed,omitempty"`
	NumPredict       *int       `json:"num_predict,omitempty"`
	NumCtx           *int       `json:"num_ctx,omitempty"`
	NumThread        *int       `json:"num_thread,omitempty"`
	Stop             StringList `json:"stop,omitempty"`
	FrequencyPenalty *float64   `json:"frequency_penalty,omitempty"`
	PresencePenalty  *float64   `json:"presence_penalty,omitempty"`

	TypicalP *float64 `json:"typical_p,omitempty"`
	Mirostat *int     `json:"mirostat,omitempty"`
}

// GenerateResponse is one NDJSON line of /api/generate (or the whole
// answer with stream:false). Durations are nanoseconds.
type GenerateResponse struct {
	Model      string          `json:"model"`
	CreatedAt  time.Time       `json:"created_at"`
	Response   string          `json:"response"`
	Thinking   string          `json:"thinking,omitempty"` // the model's thinking, split off the response
	Done       bool            `json:"done"`
	DoneReason string          `json:"done_reason,omitempty"`
	Context    []int           `json:"context,omitempty"`
	Logprobs   []OllamaLogprob `json:"logprobs,omitempty"`
	Timings
}

// ChatResponse is one NDJSON line of /api/chat.
type ChatResponse struct {
	Model      string          `json:"model"`
	CreatedAt  time.Time       `json:"created_at"`
	Message    Message         `json:"message"`
	Done       bool            `json:"done"`
	DoneReason string          `json:"done_reason,omitempty"`
	Logprobs   []OllamaLogprob `json:"logprobs,omitempty"`
	Timings
}

// Timings are Ollama's final-chunk counters (nanoseconds), plus edgectl's
// telemetry block.
type Timings struct {
	TotalDuration      int64    `json:"total_duration,omitempty"`
	LoadDuration       int64    `json:"load_duration,omitempty"`
	PromptEvalCount    int      `json:"prompt_eval_count,omitempty"`
	PromptEvalDuration int64    `json:"prompt_eval_duration,omitempty"`
	EvalCount          int      `json:"eval_count,omitempty"`
	EvalDuration       int64    `json:"eval_duration,omitempty"`
	Metrics            *Metrics `json:"metrics,omitempty"`
}

// ListResponse is GET /api/tags.
type ListResponse struct {
	Models []ListModel `json:"models"`
}

// ListModel is one local model.
type ListModel struct {
	Name       string       `json:"name"`
	Model      string       `json:"model"`
	ModifiedAt time.Time    `json:"modified_at"`
	Size       int64        `json:"size"`
	Digest     string       `json:"digest"`
	Details    ModelDetails `json:"details"`
}

// ModelDetails describe a model's format.
type ModelDetails struct {
	ParentModel       string   `json:"parent_model"`
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"`
	QuantizationLevel string   `json:"quantization_level"`
}

// ProcessResponse is GET /api/ps.
type ProcessResponse struct {
	Models []ProcessModel `json:"models"`
}

// ProcessModel is one loaded model. Lane is an edgectl extension.
type ProcessModel struct {
	Name          string       `json:"name"`
	Model         string       `json:"model"`
	Size          int64        `json:"size"`
	Digest        string       `json:"digest"`
	Details       ModelDetails `json:"details"`
	ExpiresAt     time.Time    `json:"expires_at"`
	SizeVRAM      int64        `json:"size_vram"`
	ContextLength int          `json:"context_length"`
	Lane          string       `json:"lane"`
}

// ShowRequest is POST /api/show (`name` is the legacy spelling).
type ShowRequest struct {
	Model   string `json:"model"`
	Name    string `json:"name"`
	Verbose bool   `json:"verbose,omitempty"`
}

// ShowResponse is /api/show's answer.
type ShowResponse struct {
	Modelfile    string         `json:"modelfile"`
	Parameters   string         `json:"parameters"`
	Template     string         `json:"template"`
	Details      ModelDetails   `json:"details"`
	ModelInfo    map[string]any `json:"model_info"`
	Capabilities []string       `json:"capabilities"`
	ModifiedAt   time.Time      `json:"modified_at"`
}

// VersionResponse is GET /api/version.
type VersionResponse struct {
	Version string `json:"version"`
}

// OllamaError is Ollama's error body, also sent as one NDJSON line when a
// stream fails midway.
type OllamaError struct {
	Error string `json:"error"`
}

// Ollama done reasons.
const (
	DoneLoad   = "load"
	DoneUnload = "unload"
)
