package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
)

// POST /v1/responses: OpenAI's Responses API, stateless as Ollama serves
// it. The request becomes the same engine.Request a chat completion
// would (instructions the system turn, input items the turns, text.format
// the response_format, function tools the tools) and runs as one turn
// (serve/turn.go); responses_stream.go writes the answer.

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	var req api.ResponsesRequest
	if err := api.Decode(r.Body, &req); err != nil {
		s.openAIFail(w, r, "", http.StatusBadRequest, err)
		return
	}
	if req.Model == "" {
		s.openAIFail(w, r, "", http.StatusBadRequest, &api.FieldError{Field: "model", Msg: "model is required"})
		return
	}
	ereq, err := responsesRequest(&req)
	if err != nil {
		s.openAIFail(w, r, req.Model, http.StatusBadRequest, err)
		return
	}
	s.serveResponse(w, r, &req, ereq)
}

// responsesRequest checks req and turns it into the engine's request.
func responsesRequest(req *api.ResponsesRequest) (engine.Request, error) {
	var ereq engine.Request
	if err := checkResponsesFields(req); err != nil {
		return ereq, err
	}
	ereq = engine.Request{AddGenerationPrompt: true,
		Sampling: sampling(req.Temperature, req.TopP, nil, nil, nil, nil, req.TopK, nil, req.Seed)}
	if req.MaxOutputTokens != nil {
		ereq.MaxTokens = *req.MaxOutputTokens
	}
	var err error
	if req.Text != nil {
		if ereq.Format, err = responsesFormat(req.Text.Format); err != nil {
			return ereq, err
		}
	}
	if ereq.Tools, err = responsesTools(req.Tools, req.ToolChoice); err != nil {
		return ereq, err
	}
	if ereq.Tools != nil && req.ParallelToolCalls != nil {
		ereq.Tools.One = !*req.ParallelToolCalls
	}
	if req.Instructions != nil && *req.Instructions != "" {
		ereq.Messages = append(ereq.Messages, engine.Message{Role: "system", Content: *req.Instructions})
	}
	msgs, err := responsesInput(req.Input)
	if err != nil {
		return ereq, err
	}
	ereq.Messages = append(ereq.Messages, msgs...)
	return ereq, nil
}

// stateless is why the stateful fields are refused.
const stateless = "edgectl keeps no responses between requests (stateless, as Ollama serves this API)"

// checkResponsesFields refuses what this server does not do, naming the
// field; values that ask for nothing pass.
func checkResponsesFields(req *api.ResponsesRequest) error {
	if err := firstErr(
		api.CheckInt("max_output_tokens", req.MaxOutputTokens),
		api.CheckFloat("temperature", req.Temperature),
		api.CheckFloat("top_p", req.TopP),
		api.CheckInt("top_k", req.TopK),
		api.CheckInt("top_logprobs", req.TopLogprobs),
	); err != nil {
		return err
	}
	switch {
	case req.PreviousResponseID != nil && *req.PreviousResponseID != "":
		return notYet("previous_response_id", stateless, "send the whole conversation as input items")
	case req.Store != nil && *req.Store:
		return notYet("store", stateless, "send store: false or leave it out")
	case req.Background != nil && *req.Background:
		return notYet("background", stateless+" and answers while the request is open", "leave it out")
	case !absent(req.Conversation):
		return notYet("conversation", stateless, "send the whole conversation as input items")
	case !absent(req.Prompt):
		return notYet("prompt", "edgectl has no stored prompt templates", "send instructions and input")
	case responsesThinkErr(req.Reasoning) != nil: // serve/reasoning_responses.go
		return responsesThinkErr(req.Reasoning)
	case len(req.Include) > 0:
		return notYet("include", fmt.Sprintf("edgectl adds nothing to the output (asked for %s)", strings.Join(req.Include, ", ")), "leave it out")
	case req.Truncation != nil && *req.Truncation != "disabled":
		return notYet("truncation", "edgectl does not drop turns from a conversation over the context (a prompt too long is a 400)", `send "disabled" or leave it out`)
	case req.TopLogprobs != nil && *req.TopLogprobs > 0:
		return notYet("top_logprobs", "the Responses route returns no log-probabilities", "use /v1/chat/completions with logprobs")
	case req.MaxToolCalls != nil:
		return notYet("max_tool_calls", "edgectl does not count built-in tool calls", "leave it out (parallel_tool_calls: false allows one call)")
	case req.Input.Text == nil && len(req.Input.Items) == 0:
		return &api.FieldError{Field: "input", Msg: `input is required: a string, or an array of items like {"role":"user","content":"…"}`}
	}
	return nil
}

// responsesFormat reads text.format as chat completions read
// response_format (serve/format.go): json_schema's name and schema sit
// beside its type here, under json_schema there.
func responsesFormat(raw json.RawMessage) (*engine.Format, error) {
	if absent(raw) {
		return nil, nil
	}
	var f struct {
		Type   string          `json:"type"`
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict *bool           `json:"strict"`
	}
	if json.Unmarshal(raw, &f) != nil {
		return nil, &api.FieldError{Field: "text.format", Msg: fmt.Sprintf(`text.format: want {"type":"text"}, {"type":"json_object"} or {"type":"json_schema","name":…,"schema":{…}}, not %s`, short(raw))}
	}
	rf := raw
	if f.Type == "json_schema" {
		if absent(f.Schema) {
			return nil, &api.FieldError{Field: "text.format.schema", Msg: `text.format: type json_schema needs "schema": {…}`}
		}
		rf, _ = json.Marshal(map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": f.Name, "schema": f.Schema, "strict": f.Strict}})
	}
	format, err := chatFormat(rf)
	return format, renameField(err, "response_format", "text.format")
}

// responsesTools reads the Responses API's function tools (name,
// description and parameters beside "type":"function") and tool_choice
// ({"type":"function","name":…} names one), as chat completions'
// tools (serve/tools.go). Built-in tools are refused: edgectl runs none.
func responsesTools(tools, choice json.RawMessage) (*engine.Tools, error) {
	var defs []map[string]json.RawMessage
	if !absent(tools) {
		if err := json.Unmarshal(tools, &defs); err != nil {
			return nil, &api.FieldError{Field: "tools", Msg: `tools: want an array of {"type":"function","name":…,"parameters":{…}}`}
		}
	}
	chat := make([]map[string]any, 0, len(defs))
	for i, d := range defs {
		var typ string
		json.Unmarshal(d["type"], &typ)
		if typ != "function" {
			return nil, &api.FieldError{Field: fmt.Sprintf("tools[%d].type", i), Msg: fmt.Sprintf(
				"tools[%d].type %q is not supported: edgectl runs no built-in tools (web search, file search, code interpreter, computer use, MCP); offer function tools and run them yourself", i, typ)}
		}
		fn := map[string]json.RawMessage{}
		for _, k := range []string{"name", "description", "parameters", "strict"} {
			if v, ok := d[k]; ok {
				fn[k] = v
			}
		}
		chat = append(chat, map[string]any{"type": "function", "function": fn})
	}
	ctools, _ := json.Marshal(chat)
	if !absent(choice) {
		var c struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		if json.Unmarshal(choice, &c) == nil {
			switch c.Type {
			case "function":
				choice, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": c.Name}})
			default:
				return nil, &api.FieldError{Field: "tool_choice", Msg: fmt.Sprintf(`tool_choice %s is not supported: want "none", "auto", "required" or {"type":"function","name":…}`, short(choice))}
			}
		}
	}
	return chatTools(ctools, choice) // its errors name tools or tool_choice
}

// responsesInput is the conversation of input: a string is one user
// turn; items are messages, the function calls a model made (an
// assistant turn with tool calls) and their outputs (tool turns).
func responsesInput(in api.ResponsesInput) ([]engine.Message, error) {
	if in.Text != nil {
		return []engine.Message{{Role: "user", Content: *in.Text}}, nil
	}
	var out []engine.Message
	names := map[string]string{} // call_id → function name, for tool turns
	for i, it := range in.Items {
		field := fmt.Sprintf("input[%d]", i)
		switch it.Type {
		case "", "message":
			role := it.Role
			switch role {
			case "developer":
				role = "system"
			case "system", "user", "assistant":
			default:
				return nil, &api.FieldError{Field: field + ".role", Msg: fmt.Sprintf("%s.role %q: want user, assistant, system or developer", field, it.Role)}
			}
			text, err := responsesText(field+".content", it.Content)
			if err != nil {
				return nil, err
			}
			out = append(out, engine.Message{Role: role, Content: text})
		case "function_call":
			if it.Name == "" || it.CallID == "" {
				return nil, &api.FieldError{Field: field, Msg: field + ": a function_call item needs call_id and name"}
			}
			names[it.CallID] = it.Name
			m := api.ChatMessage{Role: "assistant", ToolCalls: []api.ToolCall{{ID: it.CallID, Type: "function",
				Function: api.FunctionCall{Name: it.Name, Arguments: it.Arguments}}}}
			em, err := chatMessage(i, "assistant", m) // serve/tools.go
			if err != nil {
				return nil, err
			}
			if n := len(out); n > 0 && out[n-1].Role == "assistant" { // calls of one turn, or text then calls
				out[n-1].ToolCalls = append(out[n-1].ToolCalls, em.ToolCalls...)
				continue
			}
			out = append(out, em)
		case "function_call_output":
			if it.CallID == "" {
				return nil, &api.FieldError{Field: field + ".call_id", Msg: field + ": a function_call_output item needs call_id"}
			}
			text, err := responsesText(field+".output", it.Output)
			if err != nil {
				return nil, err
			}
			out = append(out, engine.Message{Role: "tool", Content: text, ToolCallID: it.CallID, Name: names[it.CallID]})
		case "item_reference":
			return nil, notYet(field+".type", "item_reference "+stateless, "send the item itself")
		default:
			return nil, &api.FieldError{Field: field + ".type", Msg: fmt.Sprintf("%s.type %q is not supported: want message, function_call or function_call_output", field, it.Type)}
		}
	}
	return out, nil
}

// responsesText is a message's content or a call's output: a string, or
// text parts (input_text, output_text); images and files are refused.
func responsesText(field string, raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if absent(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", &api.FieldError{Field: field, Msg: fmt.Sprintf(`%s: want a string or an array of {"type":"input_text","text":…}`, field)}
	}
	var b strings.Builder
	for j, p := range parts {
		switch {
		case (p.Type == "input_text" || p.Type == "output_text" || p.Type == "text") && p.Text != nil:
			b.WriteString(*p.Text)
		case p.Type == "refusal":
		default:
			return "", &api.FieldError{Field: fmt.Sprintf("%s[%d].type", field, j), Msg: fmt.Sprintf("%s[%d].type %q is not supported: edgectl serves text models; send input_text parts", field, j, p.Type)}
		}
	}
	return b.String(), nil
}
