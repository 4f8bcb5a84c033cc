package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// StatusError is an error answer from a server, whichever envelope carried
// it: Ollama's {"error":"…"} or OpenAI's {"error":{"message":…}}.
type StatusError struct {
	// StatusCode is the HTTP status; 0 when the error arrived as a line of
	// a stream whose 200 had already been sent.
	StatusCode int
	Message    string
}

func (e *StatusError) Error() string {
	if e.StatusCode == 0 {
		return "server error mid-stream: " + e.Message
	}
	return fmt.Sprintf("server answered %d %s: %s", e.StatusCode, http.StatusText(e.StatusCode), e.Message)
}

// ErrorMessage reads an error value in any of the shapes servers send:
// {"message","type","code"} (OpenAI), a bare string (Ollama), or an
// object without a message (written out as it is). ok is false when raw
// holds no error (absent or null).
func ErrorMessage(raw json.RawMessage) (msg string, ok bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var o struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &o) == nil && o.Message != "" {
		return o.Message, true
	}
	return string(raw), true
}

// ErrorText is the message of an error answer's body: either envelope's,
// else the body's own text (a proxy's page, cut at 300 bytes), else "".
func ErrorText(body []byte) string {
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil {
		if msg, ok := ErrorMessage(env.Error); ok {
			return msg
		}
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// statusError is the *StatusError of an answer with status code.
func statusError(code int, body []byte) *StatusError {
	msg := ErrorText(body)
	if msg == "" {
		msg = http.StatusText(code)
	}
	return &StatusError{StatusCode: code, Message: msg}
}
