// Package engine defines how edgectl runs a model, whatever runs it: the
// built-in pure-Go CPU engine (engine/cpu), the vendor NPU CLI driven through
// a PTY, or an HTTP upstream. `serve` schedules requests onto these
// interfaces only, so every backend gets the same API, queueing and
// telemetry.
//
// The shapes are: an Engine loads a Model from a path; a Model opens
// Sessions; a Session holds one conversation's state (KV cache, or the
// vendor process's context) and generates tokens for a Request, streaming
// them to a callback.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/edgectl/edgectl/format/chattemplate"
)

// Engine loads models of the formats it understands.
type Engine interface {
	// Name identifies the backend ("cpu", "axcl", "upstream").
	Name() string
	// Load opens the model at path (a checkpoint directory, .gguf, .h1b or
	// compiled model directory). It returns ErrUnsupported when this engine
	// cannot run that path.
	Load(ctx context.Context, path string, opts LoadOptions) (Model, error)
}

// Prober is implemented by engines that can tell, from a model's files and
// without loading it, whether they run it. serve's registry asks the
// engines it was given instead of knowing formats itself, so a new engine
// brings its models to /api/tags by implementing it.
type Prober interface {
	// Probe reports what the model at path (a file or directory) is, and
	// ok false when this engine does not run it. It reads names, sizes and
	// small config files, never weights: the registry probes every entry
	// of every models directory on each rescan.
	Probe(path string) (f Found, ok bool)
}

// Found is what an engine says about a model before loading it: what
// /api/tags lists until the model is loaded and reports ModelInfo.
type Found struct {
	Format        string // as ModelInfo.Format: safetensors, gguf, h1b, axmodel, …
	Size          int64  // bytes the model will hold while loaded (an estimate)
	Arch          string // as ModelInfo.Architecture; "" when the files were not read for it
	ContextLength int    // the model's own context limit; 0 when unknown
	Family        string // the model family (config.json's model_type); "" when unknown
	Quantization  string // as ModelInfo.Quantization (F32, BF16, …); "" when unknown
	// EmbedOnly: an encoder (BERT) that embeds and cannot generate;
	// Pooling its pooling rule when the files name one (engine/embed.go).
	EmbedOnly bool
	Pooling   string
}

// LoadOptions tune how a model is loaded.
type LoadOptions struct {
	// ContextLength is the context (KV cache positions) a model's sessions
	// reserve, at most the model's own limit. 0: the model's own limit,
	// which an engine bounds by what memory can hold (the CPU engine: a
	// full cache within half of the available memory, and 2^20 positions;
	// see docs/engine.md). ModelInfo.ContextLength reports the result.
	ContextLength int
	// Threads for CPU work (0: all cores).
	Threads int
	// Mmap serves CPU-engine weights straight from the file mapping instead
	// of copying them into anonymous memory (the default, because reads of
	// mapped file pages measured several times slower on the VMs edgectl is
	// benchmarked on; see docs/engine.md). EDGECTL_MMAP=1 also sets it.
	Mmap bool
	// Head is the CPU engine's in-memory LM head: "q4x" (Q4_K blocks, the
	// top 32 logits re-scored from the float rows: greedy picks the float
	// head's token), "q3x" and "q2x" (the same on Q3_K and Q2_K blocks,
	// the top 48 and 192 re-scored), "q4" (4-bit blocks, Q4_K), "q8" (int8
	// per row), "float" (as stored), or "" (q4x for ternary models, float
	// otherwise; EDGECTL_HEAD overrides the default).
	Head string
}

// Model is a loaded model.
type Model interface {
	Info() ModelInfo
	// NewSession starts an empty conversation.
	NewSession() (Session, error)
	// Close releases weights, mappings and processes.
	Close() error
}

// Pinger is implemented by models that live in another process or server
// (the vendor CLI, HTTP upstreams). Alive returns an error once the backend
// has died, so the scheduler drops it and loads it again on the next request.
type Pinger interface {
	Alive() error
}

// Session is one conversation. A Session is used by one goroutine at a time.
type Session interface {
	// Generate feeds the request's input and generates until a stop
	// condition, calling emit for each piece of text as it is produced.
	// An error from emit stops generation and is returned. Cancelling ctx
	// stops generation and returns ctx.Err().
	Generate(ctx context.Context, req Request, emit func(Token) error) (Result, error)
	// Reset forgets the conversation (the KV cache), keeping the weights.
	Reset() error
	Close() error
}

// ModelInfo describes a loaded model for /api/show, /api/tags and logs.
type ModelInfo struct {
	Name          string `json:"name"`
	Architecture  string `json:"architecture"`   // llama, qwen2, qwen3, bitnet, …
	Format        string `json:"format"`         // safetensors, gguf, h1b, axmodel
	Quantization  string `json:"quantization"`   // F32, F16, BF16, TQ2_0, TQ1_0, sherry, halo2, tq1h, w8a16, …
	Parameters    int64  `json:"parameters"`     // parameter count, 0 if unknown
	ContextLength int    `json:"context_length"` // the context in use (see LoadOptions.ContextLength)
	VocabSize     int    `json:"vocab_size"`
	SizeBytes     int64  `json:"size_bytes"` // memory the model holds while loaded
	ChatTemplate  string `json:"chat_template,omitempty"`
	EOSTokenIDs   []int  `json:"eos_token_ids,omitempty"`
	// Embeds: the model implements Embedder; EmbedOnly: it cannot
	// generate (an encoder); Pooling: PoolMean, PoolCLS or PoolLast;
	// EmbedNormalized: its own files L2-normalise the pooled vector;
	// EmbedLength: the vector's length.
	Embeds          bool   `json:"embeds,omitempty"`
	EmbedOnly       bool   `json:"embed_only,omitempty"`
	Pooling         string `json:"pooling,omitempty"`
	EmbedNormalized bool   `json:"embed_normalized,omitempty"`
	EmbedLength     int    `json:"embedding_length,omitempty"`
}

// Message is one chat turn. It is the chat template's own message type,
// so a conversation goes to the template as is.
type Message = chattemplate.Message

// Request is what to generate. Exactly one of Messages or Prompt is used:
// Messages go through the model's chat template; Prompt is tokenized as is
// (with BOS when the tokenizer wants one).
type Request struct {
	Messages []Message
	Prompt   string
	// AddGenerationPrompt ends the templated conversation with the
	// assistant's header (true for chat completions).
	AddGenerationPrompt bool
	// TemplateVars are more variables for the chat template (nil: none):
	// enable_thinking and the like, from a request's think controls and
	// chat_template_kwargs (serve/reasoning.go). The CPU engine renders
	// them; other lanes render their own prompt and ignore them.
	TemplateVars map[string]any
	// Think is what the request asks of a reasoning model's thinking (nil:
	// nothing), as an HTTP upstream is forwarded it (engine/upstream/
	// reasoning.go); the CPU engine gets it as TemplateVars instead.
	Think *Think

	MaxTokens int      // 0: until a stop condition or the context is full
	Stop      []string // stop strings; the stop string itself is not emitted
	Sampling  Sampling
	// ContextLimit caps this request's context below the session's: the
	// prompt and the generated tokens together stay within it, and a
	// prompt that leaves no room is ErrContextFull (0: the session's own
	// context; Ollama's options.num_ctx).
	ContextLimit int
	// Logprobs asks for each generated token's log-probability (Token.
	// Logprobs) and, with TopLogprobs > 0, the TopLogprobs (at most
	// MaxTopLogprobs) most likely tokens at its position. They come from
	// the log-softmax of the model's raw logits, before penalties,
	// temperature and truncation. Only the CPU engine reports them (and
	// honours ContextLimit and the frequency/presence penalties): serve
	// refuses these fields for other lanes with a 400 naming them.
	Logprobs    bool
	TopLogprobs int
	// Format asks for structured output (nil: free text). The CPU engine
	// applies it with a grammar mask (engine/grammar); an HTTP upstream is
	// sent Format.ResponseFormat; serve refuses it for other lanes.
	Format *Format
	// Tools offers functions the model may call (nil: none). The CPU
	// engine renders them through the chat template and, when a call is
	// required, constrains the answer to one (engine/toolcall); an HTTP
	// upstream is sent them; serve refuses them for other lanes.
	Tools *Tools
}

// Tools are the functions a request offers and how the model may use them.
type Tools struct {
	// Defs is the tools array as the client sent it, OpenAI's shape
	// (Ollama's is the same): [{"type":"function","function":{"name",
	// "description","parameters"}}]. It is the chat template's `tools`.
	Defs json.RawMessage
	// Choice is ToolAuto, ToolNone, ToolRequired or ToolFunction (Name).
	Choice string
	Name   string
	// RawChoice is tool_choice as the client sent it (nil: absent), what
	// an HTTP upstream is forwarded.
	RawChoice json.RawMessage
	// One: at most one call per answer (OpenAI's parallel_tool_calls
	// false); later calls are dropped, an upstream is sent the field.
	One bool
}

// Tool choices (OpenAI's tool_choice).
const (
	ToolAuto     = "auto"     // the model decides (the default)
	ToolNone     = "none"     // no tools offered, no calls parsed
	ToolRequired = "required" // the answer is a call to one of the tools
	ToolFunction = "function" // the answer is a call to Tools.Name
)

// Offered reports whether the model is shown tools (nil-safe).
func (t *Tools) Offered() bool { return t != nil && t.Choice != ToolNone }

// Forced reports whether the answer must be a tool call (nil-safe).
func (t *Tools) Forced() bool {
	return t != nil && (t.Choice == ToolRequired || t.Choice == ToolFunction)
}

// ToolCall is one function call: chat history's, or one a backend parsed
// itself (Token.ToolCalls).
type ToolCall = chattemplate.ToolCall

// FunctionCall is a ToolCall's function and arguments.
type FunctionCall = chattemplate.FunctionCall

// Think is a request's reasoning controls as OpenAI-compatible servers
// take them (llama.cpp's server, vLLM, Ollama's /v1).
type Think struct {
	On     *bool          // thinking on or off (Ollama's think, enable_thinking); nil: the model's default
	Effort string         // reasoning_effort ("": not asked)
	Format string         // reasoning_format as the client sent it ("": absent)
	Vars   map[string]any // the client's own chat_template_kwargs
}

// Format is a request for structured output: the generated text is one
// JSON document that validates against Schema (OpenAI's response_format
// json_schema, Ollama's format with a schema), or any JSON object when
// Schema is empty (json_object, Ollama's format "json").
type Format struct {
	Schema json.RawMessage
	// ResponseFormat is the request as OpenAI's response_format spells it
	// (an Ollama format translated), what an HTTP upstream is forwarded.
	ResponseFormat json.RawMessage
}

// MaxTopLogprobs bounds Request.TopLogprobs (OpenAI's limit).
const MaxTopLogprobs = 20

// Sampling parameters. Zero values mean "the backend's default" except
// Temperature, where a nil pointer means default and 0 means greedy.
type Sampling struct {
	Temperature   *float64
	TopK          int     // 0: off
	TopP          float64 // 0 or 1: off
	MinP          float64 // 0: off
	RepeatPenalty float64 // 0 or 1: off
	RepeatLastN   int     // window for the penalties (0: 64, negative: the whole history)
	// FrequencyPenalty and PresencePenalty subtract count×frequency +
	// (count > 0)×presence from the logit of each token seen count times
	// in the penalty window (OpenAI's formula over llama.cpp's window).
	FrequencyPenalty float64
	PresencePenalty  float64
	// PenaltiesOff turns the repetition, frequency and presence penalties
	// off, the backend's own defaults included (a vendor runtime's
	// post_config, an upstream's settings): Ollama's repeat_last_n 0,
	// llama.cpp's penalty_last_n 0. A zero penalty field only means "the
	// backend's default", which may be on. It overrides the penalty fields.
	PenaltiesOff bool
	Seed         *int64 // nil: random
}

// Token is one emitted piece of output.
type Token struct {
	ID   int    // token id, -1 when the backend only reports text
	Text string // decoded text (may be empty while a UTF-8 sequence is incomplete)
	// Logprobs, with Request.Logprobs, are the generated tokens this
	// Token's text completes, in order: text held back (a possible stop
	// string, an unfinished UTF-8 sequence) arrives with a later Token, so
	// one Token may carry several entries, or entries and no text. Tokens
	// cut by a stop string are left out.
	Logprobs []TokenLogprob
	// ToolCalls are calls the backend parsed itself (an HTTP upstream's
	// tool_calls), whole. The CPU engine writes calls as text, which serve
	// parses (engine/toolcall).
	ToolCalls []ToolCall
	// Reasoning is thinking the backend split off the answer itself (an
	// HTTP upstream's reasoning_content), before Text. The CPU engine
	// writes thinking as text, which serve splits (serve/reasoning.go).
	Reasoning string
}

// Logprob is one token's log-probability. Bytes are the token's own bytes,
// which need not be valid UTF-8 on their own.
type Logprob struct {
	ID      int
	Bytes   []byte
	Logprob float64
}

// TokenLogprob is a generated token's log-probability and the most likely
// tokens at its position, most likely first.
type TokenLogprob struct {
	Logprob
	Top []Logprob
}

// Finish reasons, as OpenAI spells them.
const (
	FinishStop   = "stop"   // eos token or stop string
	FinishLength = "length" // MaxTokens or the context limit
	// FinishToolCalls: the answer ends with tool calls (serve sets it).
	FinishToolCalls = "tool_calls"
)

// Result reports how a generation went: what serve turns into usage,
// Ollama's duration fields and the telemetry block.
type Result struct {
	FinishReason     string
	PromptTokens     int
	CompletionTokens int
	// TTFT is the time from the start of Generate to the first emitted token.
	TTFT time.Duration
	// PrefillDuration covers prompt processing; DecodeDuration the rest.
	PrefillDuration time.Duration
	DecodeDuration  time.Duration
	// Extra holds backend-specific telemetry (e.g. "npu_cmm_remain_mb").
	Extra map[string]any
}

// DecodeTPS is completion tokens per second of decode time.
func (r Result) DecodeTPS() float64 {
	if r.DecodeDuration <= 0 || r.CompletionTokens == 0 {
		return 0
	}
	n := r.CompletionTokens
	if n > 1 { // the first token comes out of prefill
		n--
	}
	return float64(n) / r.DecodeDuration.Seconds()
}

// PrefillTPS is prompt tokens per second of prefill time.
func (r Result) PrefillTPS() float64 {
	if r.PrefillDuration <= 0 {
		return 0
	}
	return float64(r.PromptTokens) / r.PrefillDuration.Seconds()
}

// Errors backends return so callers can map them to API errors.
var (
	// ErrUnsupported: this engine cannot load that path (try another lane).
	ErrUnsupported = errors.New("unsupported model format")
	// ErrContextFull: the prompt does not fit the context window.
	ErrContextFull = errors.New("context window exceeded")
	// ErrInvalidRequest: the request cannot be run on this backend as
	// given (a client mistake: serve answers 400). Wrap it with details.
	ErrInvalidRequest = errors.New("invalid request")
)
