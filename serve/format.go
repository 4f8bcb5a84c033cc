package serve

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/grammar"
)

// Structured output: OpenAI's response_format and Ollama's format become
// an engine.Format; lanefields.go says which lane applies, forwards or
// refuses it, and checkFormat compiles the schema where it is applied.

// chatFormat reads OpenAI's response_format: absent or {"type":"text"}
// asks for nothing, {"type":"json_object"} for any JSON object (with
// llama.cpp's "schema" beside it, a document of that schema), and
// {"type":"json_schema","json_schema":{"name","schema","strict"}} for a
// document of the schema.
func chatFormat(raw json.RawMessage) (*engine.Format, error) {
	if absent(raw) {
		return nil, nil
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
		Schema json.RawMessage `json:"schema"`
	}
	bad := func(msg string) error {
		return &api.FieldError{Field: "response_format", Msg: "response_format: " + msg}
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		return nil, bad(fmt.Sprintf(`want {"type":"text"}, {"type":"json_object"} or {"type":"json_schema","json_schema":{"name":…,"schema":{…}}}, not %s`, short(raw)))
	}
	switch rf.Type {
	case "text":
		return nil, nil
	case "json_object":
		return &engine.Format{Schema: schemaOrNil(rf.Schema), ResponseFormat: raw}, nil
	case "json_schema":
		if rf.JSONSchema == nil {
			return nil, bad(`type json_schema needs "json_schema": {"name": …, "schema": {…}}`)
		}
		return &engine.Format{Schema: schemaOrNil(rf.JSONSchema.Schema), ResponseFormat: raw}, nil
	}
	return nil, bad(fmt.Sprintf(`type %q is not one of text, json_object, json_schema`, rf.Type))
}

// ollamaFormat reads Ollama's format: "" or null asks for nothing, "json"
// for any JSON object, an object is a JSON schema. Upstreams are sent it
// as the response_format that means the same.
func ollamaFormat(raw json.RawMessage) (*engine.Format, error) {
	if rawIs(raw, `""`) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s != "json" {
			return nil, &api.FieldError{Field: "format", Msg: fmt.Sprintf(`format %q: want "json" or a JSON schema object`, s)}
		}
		return &engine.Format{ResponseFormat: json.RawMessage(`{"type":"json_object"}`)}, nil
	}
	var schema map[string]json.RawMessage
	if json.Unmarshal(raw, &schema) != nil {
		return nil, &api.FieldError{Field: "format", Msg: fmt.Sprintf(`format: want "json" or a JSON schema object, not %s`, short(raw))}
	}
	rf, _ := json.Marshal(map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "format", "schema": raw}})
	return &engine.Format{Schema: raw, ResponseFormat: rf}, nil
}

func schemaOrNil(raw json.RawMessage) json.RawMessage {
	if absent(raw) {
		return nil
	}
	return raw
}

// checkFormat compiles the request's schema as the cpu lane will: a
// schema it cannot run is the client's to fix (the error names the
// keyword and where it is).
func checkFormat(req engine.Request) error {
	if req.Format == nil {
		return nil
	}
	_, err := grammar.ForFormat(req.Format)
	var se *grammar.SchemaError
	if errors.As(err, &se) {
		return se
	}
	return err
}
