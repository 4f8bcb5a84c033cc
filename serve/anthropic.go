package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
)

// POST /v1/messages: Anthropic's Messages API, for the tools that speak
// it (Claude Code, @anthropic-ai/sdk, anthropic-sdk-go). The request
// becomes the engine.Request a chat completion would (system the system
// turn, tool_use and tool_result blocks tool turns, tools the tools) and
// runs as one turn (serve/turn.go); anthropic_stream.go writes the
// answer. Errors are in Anthropic's shape.

// decodeMessages reads a Messages request that names its model, or
// answers the 400 and reports false.
func (s *Server) decodeMessages(w http.ResponseWriter, r *http.Request) (*api.MessagesRequest, bool) {
	var req api.MessagesRequest
	if err := api.Decode(r.Body, &req); err != nil {
		s.anthropicFail(w, r, "", http.StatusBadRequest, err)
		return nil, false
	}
	if req.Model == "" {
		s.anthropicFail(w, r, "", http.StatusBadRequest, errors.New("model: Field required"))
		return nil, false
	}
	return &req, true
}

func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	req, ok := s.decodeMessages(w, r)
	if !ok {
		return
	}
	ereq, err := messagesRequest(req)
	if err != nil {
		s.anthropicFail(w, r, req.Model, http.StatusBadRequest, err)
		return
	}
	s.serveMessage(w, r, req, ereq)
}

// anthropicErrorType is Anthropic's error type for an HTTP status.
func anthropicErrorType(code int) string {
	switch code {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	}
	if code < 500 {
		return "invalid_request_error"
	}
	return "api_error"
}

func anthropicError(code int, msg string) api.AnthropicError {
	return api.AnthropicError{Type: "error", Error: api.AnthropicErrorBody{Type: anthropicErrorType(code), Message: msg}}
}

func writeAnthropicError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, anthropicError(code, msg))
}

func (s *Server) anthropicFail(w http.ResponseWriter, r *http.Request, model string, code int, err error) {
	note(r, model, code)
	s.retryAfter(w, code)
	if code == 499 {
		return
	}
	writeAnthropicError(w, code, err.Error())
}

// messagesRequest checks req and turns it into the engine's request; the
// stop sequences are matched by the route (anthropicStops), which must
// say which one ended the answer.
func messagesRequest(req *api.MessagesRequest) (engine.Request, error) {
	var ereq engine.Request
	if err := checkMessagesFields(req); err != nil {
		return ereq, err
	}
	ereq = engine.Request{AddGenerationPrompt: true, MaxTokens: *req.MaxTokens,
		Sampling: sampling(req.Temperature, req.TopP, nil, nil, nil, nil, req.TopK, nil, nil)}
	var err error
	if oc := req.OutputConfig; oc != nil {
		if ereq.Format, err = anthropicFormat(oc.Format); err != nil {
			return ereq, err
		}
	}
	if ereq.Tools, err = anthropicTools(req.Tools, req.ToolChoice); err != nil {
		return ereq, err
	}
	sys, err := anthropicText("system", req.System)
	if err != nil {
		return ereq, err
	}
	if sys != "" {
		ereq.Messages = append(ereq.Messages, engine.Message{Role: "system", Content: sys})
	}
	msgs, err := anthropicMessages(req.Messages)
	ereq.Messages = append(ereq.Messages, msgs...)
	return ereq, err
}

func checkMessagesFields(req *api.MessagesRequest) error {
	if err := firstErr(
		api.CheckFloat("temperature", req.Temperature),
		api.CheckFloat("top_p", req.TopP),
		api.CheckInt("top_k", req.TopK),
	); err != nil {
		return err
	}
	switch {
	case req.MaxTokens == nil:
		return &api.FieldError{Field: "max_tokens", Msg: "max_tokens: Field required (the most tokens to generate, as Anthropic's API requires it)"}
	case *req.MaxTokens < 1:
		return &api.FieldError{Field: "max_tokens", Msg: fmt.Sprintf("max_tokens: %d is out of range: want an integer ≥ 1", *req.MaxTokens)}
	case len(req.Messages) == 0:
		return &api.FieldError{Field: "messages", Msg: `messages: at least one message is required, like {"role":"user","content":"…"}`}
	case anthropicThinkErr(req.Thinking) != nil: // serve/reasoning_anthropic.go
		return anthropicThinkErr(req.Thinking)
	case !rawIs(req.MCPServers, "[]"):
		return notYet("mcp_servers", "edgectl connects to no MCP servers", "offer the tools yourself")
	case req.OutputConfig != nil && req.OutputConfig.Effort != "":
		return notYet("output_config.effort", "edgectl does not separate a model's thinking from its answer", "leave it out")
	case !absent(req.Container):
		return notYet("container", "edgectl runs no code containers", "leave it out")
	}
	for i, s := range req.StopSequences {
		if s == "" {
			return &api.FieldError{Field: "stop_sequences", Msg: fmt.Sprintf("stop_sequences[%d] is empty: each stop sequence needs at least one character", i)}
		}
	}
	return nil
}

// anthropicFormat reads output_config.format, {"type":"json_schema",
// "schema":{…}}, as chat completions read response_format.
func anthropicFormat(raw json.RawMessage) (*engine.Format, error) {
	if absent(raw) {
		return nil, nil
	}
	var f struct {
		Type   string          `json:"type"`
		Schema json.RawMessage `json:"schema"`
	}
	if json.Unmarshal(raw, &f) != nil || f.Type != "json_schema" || absent(f.Schema) {
		return nil, &api.FieldError{Field: "output_config.format", Msg: fmt.Sprintf(`output_config.format: want {"type":"json_schema","schema":{…}}, not %s`, short(raw))}
	}
	rf, _ := json.Marshal(map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "output", "schema": f.Schema}})
	return chatFormat(rf)
}

// anthropicText is the text of text blocks (system, a tool_result's
// content); other blocks are refused naming field.
func anthropicText(field string, blocks api.AnthropicBlocks) (string, error) {
	var b strings.Builder
	for j, bl := range blocks {
		if bl.Type != "text" {
			return "", &api.FieldError{Field: fmt.Sprintf("%s[%d].type", field, j), Msg: fmt.Sprintf("%s[%d].type %q is not supported here: send text blocks", field, j, bl.Type)}
		}
		b.WriteString(bl.Text)
	}
	return b.String(), nil
}

// anthropicMessages are the turns of messages: an assistant's tool_use
// blocks become its tool calls, a user's tool_result blocks tool turns
// (before the user's own text, which follows the results).
func anthropicMessages(msgs []api.AnthropicMessage) ([]engine.Message, error) {
	var out []engine.Message
	names := map[string]string{} // tool_use id → name, for tool turns
	for i, m := range msgs {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, &api.FieldError{Field: fmt.Sprintf("messages[%d].role", i), Msg: fmt.Sprintf("messages[%d].role %q: want user or assistant (system goes in the top-level system field)", i, m.Role)}
		}
		em := engine.Message{Role: m.Role}
		var text strings.Builder
		for j, b := range m.Content {
			field := fmt.Sprintf("messages[%d].content[%d]", i, j)
			switch {
			case b.Type == "text":
				text.WriteString(b.Text)
			case (b.Type == "thinking" || b.Type == "redacted_thinking") && m.Role == "assistant":
				// past thinking, which clients send back: templates drop it too
			case b.Type == "tool_use" && m.Role == "assistant":
				input := []byte(strings.TrimSpace(string(b.Input)))
				if absent(input) {
					input = []byte("{}")
				}
				if b.ID == "" || b.Name == "" || input[0] != '{' {
					return nil, &api.FieldError{Field: field, Msg: field + `: a tool_use block needs id, name and an object input`}
				}
				names[b.ID] = b.Name
				em.ToolCalls = append(em.ToolCalls, engine.ToolCall{ID: b.ID, Type: "function",
					Function: engine.FunctionCall{Name: b.Name, Arguments: json.RawMessage(input)}})
			case b.Type == "tool_result" && m.Role == "user":
				if b.ToolUseID == "" {
					return nil, &api.FieldError{Field: field + ".tool_use_id", Msg: field + ": a tool_result block needs tool_use_id"}
				}
				var content api.AnthropicBlocks
				if !absent(b.Content) {
					if err := json.Unmarshal(b.Content, &content); err != nil {
						return nil, &api.FieldError{Field: field + ".content", Msg: field + ".content: " + err.Error()}
					}
				}
				result, err := anthropicText(field+".content", content)
				if err != nil {
					return nil, err
				}
				if b.IsError {
					result = "Error: " + result
				}
				out = append(out, engine.Message{Role: "tool", Content: result, ToolCallID: b.ToolUseID, Name: names[b.ToolUseID]})
			default:
				why := "edgectl serves text models"
				if b.Type == "tool_use" || b.Type == "tool_result" {
					why = "tool_use blocks belong in assistant turns, tool_result blocks in user turns"
				}
				return nil, &api.FieldError{Field: field + ".type", Msg: fmt.Sprintf("%s.type %q is not supported: %s; send text blocks", field, b.Type, why)}
			}
		}
		em.Content = text.String()
		if m.Role == "user" && em.Content == "" && len(out) > 0 && out[len(out)-1].Role == "tool" {
			continue // only tool results
		}
		out = append(out, em)
	}
	return out, nil
}

// anthropicTools reads Anthropic's tools ({name, description,
// input_schema}) and tool_choice (auto, any, tool with name, none;
// disable_parallel_tool_use) as chat completions' tools (serve/tools.go).
// Anthropic's server tools (web search, code execution, …) are refused.
func anthropicTools(tools, choice json.RawMessage) (*engine.Tools, error) {
	var defs []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	if !absent(tools) && json.Unmarshal(tools, &defs) != nil {
		return nil, &api.FieldError{Field: "tools", Msg: `tools: want an array of {"name":…,"description":…,"input_schema":{…}}`}
	}
	chat := make([]map[string]any, 0, len(defs))
	for i, d := range defs {
		if d.Type != "" && d.Type != "custom" {
			return nil, &api.FieldError{Field: fmt.Sprintf("tools[%d].type", i), Msg: fmt.Sprintf(
				"tools[%d].type %q is not supported: edgectl runs no server tools; offer client tools ({name, description, input_schema}) and run them yourself", i, d.Type)}
		}
		fn := map[string]any{"name": d.Name, "parameters": d.InputSchema}
		if d.Description != "" {
			fn["description"] = d.Description
		}
		chat = append(chat, map[string]any{"type": "function", "function": fn})
	}
	ctools, _ := json.Marshal(chat)
	var c struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	}
	var cchoice json.RawMessage
	if !absent(choice) {
		if json.Unmarshal(choice, &c) != nil {
			return nil, &api.FieldError{Field: "tool_choice", Msg: fmt.Sprintf(`tool_choice: want {"type":"auto"|"any"|"tool"|"none"}, not %s`, short(choice))}
		}
		switch c.Type {
		case "auto", "none":
			cchoice, _ = json.Marshal(c.Type)
		case "any":
			cchoice = json.RawMessage(`"required"`)
		case "tool":
			cchoice, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": c.Name}})
		default:
			return nil, &api.FieldError{Field: "tool_choice.type", Msg: fmt.Sprintf(`tool_choice.type %q: want auto, any, tool or none`, c.Type)}
		}
	}
	t, err := chatTools(ctools, cchoice)
	if t != nil {
		t.One = c.DisableParallelToolUse
	}
	return t, err
}

// isAnthropicPath reports whether path belongs to Anthropic's API, whose
// errors are in its own shape.
func isAnthropicPath(path string) bool {
	return path == "/v1/messages" || strings.HasPrefix(path, "/v1/messages/")
}
