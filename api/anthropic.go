package api

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Anthropic's Messages API (POST /v1/messages), in the shapes of
// docs.anthropic.com/en/api/messages and github.com/anthropics/anthropic-sdk-go.

// MessagesRequest is POST /v1/messages.
type MessagesRequest struct {
	Model         string             `json:"model"`
	MaxTokens     *int               `json:"max_tokens"` // required, as Anthropic requires it
	Messages      []AnthropicMessage `json:"messages"`
	System        AnthropicBlocks    `json:"system,omitempty"` // a string or text blocks
	StopSequences []string           `json:"stop_sequences,omitempty"`
	Temperature   *float64           `json:"temperature,omitempty"`
	TopP          *float64           `json:"top_p,omitempty"`
	TopK          *int               `json:"top_k,omitempty"`
	Stream        bool               `json:"stream,omitempty"`
	// Tools are [{"name","description","input_schema"}]; ToolChoice is
	// {"type":"auto"|"any"|"tool"|"none","name","disable_parallel_tool_use"}.
	Tools      json.RawMessage `json:"tools,omitempty"`
	ToolChoice json.RawMessage `json:"tool_choice,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"` // {"user_id"}: accepted, not used
	// OutputConfig's format {"type":"json_schema","schema":{…}} asks for
	// structured output (serve/format.go); effort is refused.
	OutputConfig *AnthropicOutputConfig `json:"output_config,omitempty"`
	// Thinking is {"type":"enabled","budget_tokens":N} (thinking blocks
	// in the answer), {"type":"disabled"} or {"type":"adaptive"}
	// (serve/reasoning_anthropic.go); the others are refused unless they
	// ask for nothing.
	Thinking   json.RawMessage `json:"thinking,omitempty"`
	MCPServers json.RawMessage `json:"mcp_servers,omitempty"`
	Container  json.RawMessage `json:"container,omitempty"`
	// KeepAlive is an edgectl extension, as on the OpenAI routes.
	KeepAlive *Duration `json:"keep_alive,omitempty"`
}

// AnthropicOutputConfig is the request's output_config.
type AnthropicOutputConfig struct {
	Effort string          `json:"effort,omitempty"`
	Format json.RawMessage `json:"format,omitempty"`
}

// AnthropicMessage is one turn: role user or assistant.
type AnthropicMessage struct {
	Role    string          `json:"role"`
	Content AnthropicBlocks `json:"content"`
}

// AnthropicBlocks are content blocks; a string is one text block.
type AnthropicBlocks []AnthropicBlock

// UnmarshalJSON accepts a string, an array of blocks, or null.
func (b *AnthropicBlocks) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case bytes.Equal(data, []byte("null")):
		*b = nil
		return nil
	case len(data) > 0 && data[0] == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*b = AnthropicBlocks{{Type: "text", Text: s}}
		return nil
	case len(data) > 0 && data[0] == '[':
		var blocks []AnthropicBlock
		if err := json.Unmarshal(data, &blocks); err != nil {
			return errors.New(`content blocks must be objects like {"type":"text","text":"…"}`)
		}
		*b = blocks
		return nil
	}
	return errors.New(`content must be a string or an array of blocks like {"type":"text","text":"…"}`)
}

// AnthropicBlock is a content block: text; tool_use (id, name, input) in
// an assistant turn; tool_result (tool_use_id, content, is_error) in a
// user turn; thinking (thinking, signature) in an assistant turn, which
// the answer has and clients send back. Other types (image, document) are
// read so that they can be refused by name.
type AnthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // tool_result: a string or text blocks
	IsError   bool            `json:"is_error,omitempty"`
	// Thinking and Signature are a thinking block's (the model's
	// reasoning; edgectl signs nothing: its signature is "edgectl").
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
}

// MarshalJSON writes the fields of the block's type: text always has
// "text" (a stream's first text block is ""), tool_use always "input".
func (b AnthropicBlock) MarshalJSON() ([]byte, error) {
	switch b.Type {
	case "text":
		return json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{b.Type, b.Text})
	case "thinking":
		return json.Marshal(struct {
			Type      string `json:"type"`
			Thinking  string `json:"thinking"`
			Signature string `json:"signature"`
		}{b.Type, b.Thinking, b.Signature})
	case "tool_use":
		input := b.Input
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		return json.Marshal(struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}{b.Type, b.ID, b.Name, input})
	}
	type plain AnthropicBlock
	return json.Marshal(plain(b))
}

// AnthropicResponse is a message the server answers (type "message").
type AnthropicResponse struct {
	ID           string           `json:"id"`   // msg_…
	Type         string           `json:"type"` // message
	Role         string           `json:"role"` // assistant
	Model        string           `json:"model"`
	Content      []AnthropicBlock `json:"content"`
	StopReason   *string          `json:"stop_reason"` // end_turn, max_tokens, stop_sequence, tool_use; null in message_start
	StopSequence *string          `json:"stop_sequence"`
	Usage        AnthropicUsage   `json:"usage"`
}

// AnthropicUsage counts tokens; Metrics is edgectl's telemetry block.
type AnthropicUsage struct {
	InputTokens              int      `json:"input_tokens"`
	OutputTokens             int      `json:"output_tokens"`
	CacheCreationInputTokens int      `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int      `json:"cache_read_input_tokens"`
	Metrics                  *Metrics `json:"metrics,omitempty"`
}

// AnthropicCountTokens is POST /v1/messages/count_tokens' answer.
type AnthropicCountTokens struct {
	InputTokens int `json:"input_tokens"`
}

// Stream events: each is sent as `event: TYPE` and `data: {json}`.

// AnthropicMessageStart is message_start: the message with no content.
type AnthropicMessageStart struct {
	Type    string             `json:"type"`
	Message *AnthropicResponse `json:"message"`
}

// AnthropicBlockStart is content_block_start.
type AnthropicBlockStart struct {
	Type         string         `json:"type"`
	Index        int            `json:"index"`
	ContentBlock AnthropicBlock `json:"content_block"`
}

// AnthropicBlockDelta is content_block_delta: a text_delta (text) or an
// input_json_delta (partial_json, pieces of a tool_use's input).
type AnthropicBlockDelta struct {
	Type  string         `json:"type"`
	Index int            `json:"index"`
	Delta AnthropicDelta `json:"delta"`
}

// AnthropicDelta is a content_block_delta's delta.
type AnthropicDelta struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
	Thinking    *string `json:"thinking,omitempty"`  // thinking_delta
	Signature   *string `json:"signature,omitempty"` // signature_delta
}

// AnthropicBlockStop is content_block_stop.
type AnthropicBlockStop struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

// AnthropicMessageDelta is message_delta: how the message ended, and the
// usage (input_tokens too: the prompt is counted as it is processed).
type AnthropicMessageDelta struct {
	Type  string                    `json:"type"`
	Delta AnthropicMessageDeltaBody `json:"delta"`
	Usage AnthropicUsage            `json:"usage"`
}

// AnthropicMessageDeltaBody is message_delta's delta.
type AnthropicMessageDeltaBody struct {
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// AnthropicEvent is an event with no fields but its type: ping,
// message_stop.
type AnthropicEvent struct {
	Type string `json:"type"`
}

// AnthropicError is Anthropic's error body, also a stream's error event.
type AnthropicError struct {
	Type  string             `json:"type"` // error
	Error AnthropicErrorBody `json:"error"`
}

// AnthropicErrorBody: type is invalid_request_error, authentication_error,
// permission_error, not_found_error, request_too_large, rate_limit_error,
// api_error or overloaded_error.
type AnthropicErrorBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}
