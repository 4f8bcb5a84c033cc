package serve

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
)

// Unknown routes are 404s and wrong methods 405s (with Allow), in the
// shape of the API the path belongs to: OpenAI's under /v1, Anthropic's
// under /v1/messages, Ollama's {"error": …} under /api and elsewhere.
func TestRouteErrorEnvelopes(t *testing.T) {
	ts := tinyResponses(t)
	for _, tc := range []struct {
		method, path string
		code         int
		allow        string
		shape        string // openai, anthropic, ollama
	}{
		{"POST", "/v1/nope", 404, "", "openai"},
		{"GET", "/v1", 404, "", "openai"},
		{"GET", "/v1/chat/completions", 405, "POST", "openai"},
		{"GET", "/v1/responses", 405, "POST", "openai"},
		{"DELETE", "/v1/models", 405, "GET, HEAD", "openai"},
		{"GET", "/v1/messages", 405, "POST", "anthropic"},
		{"POST", "/v1/messages/batches", 404, "", "anthropic"},
		{"POST", "/api/nope", 404, "", "ollama"},
		{"GET", "/api/chat", 405, "POST", "ollama"},
		{"POST", "/api/tags", 405, "GET, HEAD", "ollama"},
		{"GET", "/nope", 404, "", "ollama"},
		{"POST", "/health", 405, "GET, HEAD", "ollama"},
	} {
		what := tc.method + " " + tc.path
		req, _ := http.NewRequest(tc.method, ts.URL+tc.path, strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || resp.Header.Get("Allow") != tc.allow || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s: %d Allow %q %s", what, resp.StatusCode, resp.Header.Get("Allow"), b)
			continue
		}
		var ok bool
		switch tc.shape {
		case "openai":
			var e struct {
				Error *struct {
					Message, Type string
					Param, Code   *string
				}
			}
			ok = json.Unmarshal(b, &e) == nil && e.Error != nil && strings.Contains(e.Error.Message, tc.path) && e.Error.Type == "invalid_request_error" &&
				e.Error.Code != nil && strings.Contains(string(b), `"param":null`)
		case "anthropic":
			var e struct {
				Type  string
				Error struct{ Type, Message string }
			}
			want := map[int]string{404: "not_found_error", 405: "invalid_request_error"}[tc.code]
			ok = json.Unmarshal(b, &e) == nil && e.Type == "error" && e.Error.Type == want && strings.Contains(e.Error.Message, tc.path)
		case "ollama":
			var e struct{ Error string }
			ok = json.Unmarshal(b, &e) == nil && strings.Contains(e.Error, tc.path)
		}
		if !ok {
			t.Errorf("%s: not in %s's shape: %s", what, tc.shape, b)
		}
	}
	// The routes that exist still answer.
	for _, p := range []string{"/", "/health", "/metrics", "/v1/models", "/api/tags"} {
		if code, b := get(t, ts.URL+p); code != 200 {
			t.Errorf("GET %s: %d %s", p, code, b)
		}
	}
}

// The official clients read those answers as their typed errors.
func TestRouteErrorsThroughClients(t *testing.T) {
	ts := tinyResponses(t)
	oc := ts.client()
	err := oc.Post(context.Background(), "nope", map[string]any{}, nil)
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 404 || oe.Type != "invalid_request_error" || !strings.Contains(oe.Message, "/v1/nope") {
		t.Errorf("openai: %v", err)
	}
	ac := ts.anthropic()
	err = ac.Post(context.Background(), "v1/messages/nope", map[string]any{}, nil)
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 404 || ae.Type() != "not_found_error" {
		t.Errorf("anthropic: %v", err)
	}
}
