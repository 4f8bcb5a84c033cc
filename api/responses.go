package api

import (
	"bytes"
	"encoding/json"
	"errors"
)

// OpenAI's Responses API (POST /v1/responses), served statelessly: the
// request, the response object and the stream's events, in the shapes of
// openai-go's responses package and platform.openai.com/docs/api-reference/responses.

// ResponsesRequest is POST /v1/responses.
type ResponsesRequest struct {
	Model string `json:"model"`
	// Input is a string (one user turn) or an array of items: messages
	// ({role, content}), function_call and function_call_output items.
	Input           ResponsesInput  `json:"input"`
	Instructions    *string         `json:"instructions,omitempty"` // the system turn
	MaxOutputTokens *int            `json:"max_output_tokens,omitempty"`
	Temperature     *float64        `json:"temperature,omitempty"`
	TopP            *float64        `json:"top_p,omitempty"`
	Stream          bool            `json:"stream,omitempty"`
	Text            *ResponsesText  `json:"text,omitempty"`
	Tools           json.RawMessage `json:"tools,omitempty"`       // [{"type":"function","name","description","parameters","strict"}]
	ToolChoice      json.RawMessage `json:"tool_choice,omitempty"` // "none"|"auto"|"required"|{"type":"function","name":…}
	// ParallelToolCalls false: at most one function call per answer.
	ParallelToolCalls *bool             `json:"parallel_tool_calls,omitempty"`
	Metadata          map[string]string `json:"metadata,omitempty"` // echoed
	// Refused: edgectl keeps no state between requests (as Ollama).
	PreviousResponseID *string         `json:"previous_response_id,omitempty"`
	Store              *bool           `json:"store,omitempty"`
	Background         *bool           `json:"background,omitempty"`
	Conversation       json.RawMessage `json:"conversation,omitempty"`
	Prompt             json.RawMessage `json:"prompt,omitempty"`
	// Refused unless they ask for nothing.
	Reasoning    json.RawMessage `json:"reasoning,omitempty"`
	Include      []string        `json:"include,omitempty"`
	Truncation   *string         `json:"truncation,omitempty"` // "disabled" passes
	TopLogprobs  *int            `json:"top_logprobs,omitempty"`
	MaxToolCalls *int            `json:"max_tool_calls,omitempty"`
	// Extensions, as on chat completions.
	TopK      *int      `json:"top_k,omitempty"`
	Seed      *int64    `json:"seed,omitempty"`
	KeepAlive *Duration `json:"keep_alive,omitempty"`
}

// ResponsesText is the request's text options: format is
// {"type":"text"}, {"type":"json_object"} or
// {"type":"json_schema","name","schema","strict"}.
type ResponsesText struct {
	Format json.RawMessage `json:"format,omitempty"`
}

// ResponsesInput is the request's input: a string is one user message.
type ResponsesInput struct {
	Text  *string
	Items []ResponsesInputItem
}

// UnmarshalJSON accepts a string or an array of items.
func (in *ResponsesInput) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		in.Text = &s
		return nil
	case len(b) > 0 && b[0] == '[':
		if err := json.Unmarshal(b, &in.Items); err != nil {
			var fe *FieldError
			if errors.As(err, &fe) {
				return fe
			}
			return &FieldError{Field: "input", Msg: "input: want a string or an array of items like {\"role\":\"user\",\"content\":\"…\"}: " + err.Error()}
		}
		return nil
	case bytes.Equal(b, []byte("null")):
		return nil
	}
	return &FieldError{Field: "input", Msg: "input: want a string or an array of items like {\"role\":\"user\",\"content\":\"…\"}"}
}

// ResponsesInputItem is one input item: a message (type "message" or
// absent, with role and content), a function_call the model made earlier
// (call_id, name, arguments) or a function_call_output (call_id, output).
type ResponsesInputItem struct {
	Type      string          `json:"type,omitempty"`
	Role      string          `json:"role,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // a string or [{"type":"input_text"|"output_text","text"}]
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments string          `json:"arguments,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"` // a string or [{"type":"input_text","text"}]
	ID        string          `json:"id,omitempty"`
}

// Response is the response object: the answer of a non-streamed request,
// and the "response" of the stream's lifecycle events.
type Response struct {
	ID                 string               `json:"id"`     // resp_…
	Object             string               `json:"object"` // response
	CreatedAt          int64                `json:"created_at"`
	CompletedAt        *int64               `json:"completed_at"`
	Status             string               `json:"status"` // in_progress, completed, incomplete, failed
	Error              *ResponseError       `json:"error"`
	IncompleteDetails  *IncompleteDetails   `json:"incomplete_details"`
	Instructions       *string              `json:"instructions"`
	MaxOutputTokens    *int                 `json:"max_output_tokens"`
	Model              string               `json:"model"`
	Output             []ResponseOutputItem `json:"output"`
	ParallelToolCalls  bool                 `json:"parallel_tool_calls"`
	PreviousResponseID *string              `json:"previous_response_id"`
	Temperature        *float64             `json:"temperature"`
	TopP               *float64             `json:"top_p"`
	ToolChoice         json.RawMessage      `json:"tool_choice"`
	Tools              json.RawMessage      `json:"tools"`
	Text               ResponsesText        `json:"text"`
	Truncation         string               `json:"truncation"`
	Store              bool                 `json:"store"`
	Background         bool                 `json:"background"`
	Metadata           map[string]string    `json:"metadata"`
	Usage              *ResponseUsage       `json:"usage"`
}

// ResponseError is a failed response's error.
type ResponseError struct {
	Code    string `json:"code"` // server_error, invalid_prompt, …
	Message string `json:"message"`
}

// IncompleteDetails says why a response is incomplete: max_output_tokens.
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// ResponseOutputItem is an output item: a message (role, content of
// output_text parts) or a function_call (call_id, name, arguments).
type ResponseOutputItem struct {
	Type   string `json:"type"` // message, function_call, reasoning
	ID     string `json:"id"`   // msg_…, fc_…, rs_…
	Status string `json:"status"`
	Role   string `json:"role,omitempty"`
	// Content is [] on a message (even empty) and absent on a call.
	Content   []OutputText `json:"content,omitzero"`
	CallID    string       `json:"call_id,omitempty"`
	Name      string       `json:"name,omitempty"`
	Arguments *string      `json:"arguments,omitempty"`
	// Summary is a reasoning item's: the model's thinking, whole, as one
	// summary_text part ([] on a reasoning item, absent on others).
	Summary []ReasoningSummary `json:"summary,omitzero"`
}

// ReasoningSummary is a reasoning item's summary part.
type ReasoningSummary struct {
	Type string `json:"type"` // summary_text
	Text string `json:"text"`
}

// ReasoningSummaryEvent is response.reasoning_summary_part.added and
// .done (Part), response.reasoning_summary_text.delta (Delta) and .done
// (Text).
type ReasoningSummaryEvent struct {
	Type           string            `json:"type"`
	SequenceNumber int               `json:"sequence_number"`
	ItemID         string            `json:"item_id"`
	OutputIndex    int               `json:"output_index"`
	SummaryIndex   int               `json:"summary_index"`
	Part           *ReasoningSummary `json:"part,omitempty"`
	Delta          *string           `json:"delta,omitempty"`
	Text           *string           `json:"text,omitempty"`
}

// OutputText is a message's text part.
type OutputText struct {
	Type        string            `json:"type"` // output_text
	Text        string            `json:"text"`
	Annotations []json.RawMessage `json:"annotations"` // always []
	Logprobs    []json.RawMessage `json:"logprobs"`    // always []
}

// ResponseUsage counts tokens; Metrics is edgectl's telemetry block.
type ResponseUsage struct {
	InputTokens         int                `json:"input_tokens"`
	InputTokensDetails  InputTokensDetails `json:"input_tokens_details"`
	OutputTokens        int                `json:"output_tokens"`
	OutputTokensDetails OutputTokenDetails `json:"output_tokens_details"`
	TotalTokens         int                `json:"total_tokens"`
	Metrics             *Metrics           `json:"metrics,omitempty"`
}

// InputTokensDetails: edgectl caches no prompts across requests.
type InputTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// OutputTokenDetails: edgectl separates no reasoning tokens.
type OutputTokenDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// Stream events. Each is sent as `event: TYPE` and `data: {json}`, and
// every one carries the stream's next sequence_number.

// ResponseLifecycleEvent is response.created, response.in_progress,
// response.completed, response.incomplete and response.failed.
type ResponseLifecycleEvent struct {
	Type           string    `json:"type"`
	SequenceNumber int       `json:"sequence_number"`
	Response       *Response `json:"response"`
}

// ResponseItemEvent is response.output_item.added and .done.
type ResponseItemEvent struct {
	Type           string              `json:"type"`
	SequenceNumber int                 `json:"sequence_number"`
	OutputIndex    int                 `json:"output_index"`
	Item           *ResponseOutputItem `json:"item"`
}

// ResponsePartEvent is response.content_part.added and .done.
type ResponsePartEvent struct {
	Type           string     `json:"type"`
	SequenceNumber int        `json:"sequence_number"`
	ItemID         string     `json:"item_id"`
	OutputIndex    int        `json:"output_index"`
	ContentIndex   int        `json:"content_index"`
	Part           OutputText `json:"part"`
}

// ResponseTextDeltaEvent is response.output_text.delta.
type ResponseTextDeltaEvent struct {
	Type           string            `json:"type"`
	SequenceNumber int               `json:"sequence_number"`
	ItemID         string            `json:"item_id"`
	OutputIndex    int               `json:"output_index"`
	ContentIndex   int               `json:"content_index"`
	Delta          string            `json:"delta"`
	Logprobs       []json.RawMessage `json:"logprobs"`
}

// ResponseTextDoneEvent is response.output_text.done.
type ResponseTextDoneEvent struct {
	Type           string            `json:"type"`
	SequenceNumber int               `json:"sequence_number"`
	ItemID         string            `json:"item_id"`
	OutputIndex    int               `json:"output_index"`
	ContentIndex   int               `json:"content_index"`
	Text           string            `json:"text"`
	Logprobs       []json.RawMessage `json:"logprobs"`
}

// ResponseArgumentsDeltaEvent is response.function_call_arguments.delta.
type ResponseArgumentsDeltaEvent struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	Delta          string `json:"delta"`
}

// ResponseArgumentsDoneEvent is response.function_call_arguments.done.
type ResponseArgumentsDoneEvent struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	Name           string `json:"name"`
	Arguments      string `json:"arguments"`
}

// ResponseErrorEvent is the stream's error event (followed by
// response.failed).
type ResponseErrorEvent struct {
	Type           string  `json:"type"` // error
	SequenceNumber int     `json:"sequence_number"`
	Code           string  `json:"code"`
	Message        string  `json:"message"`
	Param          *string `json:"param"`
}
