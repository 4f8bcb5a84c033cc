package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/engine/upstream"
)

// On an HTTP upstream lane the Responses and Messages routes send the
// upstream the chat completion their request means (system turn, user
// turn, response_format, tools in OpenAI's shape) and answer what it
// streams back in their own shapes; stop_sequences are matched on the
// upstream's text.
func TestResponsesAndMessagesThroughUpstream(t *testing.T) {
	var mu sync.Mutex
	var last map[string]json.RawMessage
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		var b map[string]json.RawMessage
		json.NewDecoder(r.Body).Decode(&b)
		mu.Lock()
		last = b
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		for _, piece := range []string{`{\"a\":`, `1} STOP`, ` never seen`} {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s\"}}]}\n\n", piece)
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n")
	}))
	defer up.Close()
	ups := []upstream.Config{{Name: "remote", URL: up.URL}}
	ts := start(t, Options{Upstreams: ups, Engines: map[string]engine.Engine{
		LaneCPU: cpu.New(), "upstream": upstream.New(ups, upstream.Options{StartTimeout: 5 * time.Second})}})
	sent := func(key string) string {
		mu.Lock()
		defer mu.Unlock()
		return string(last[key])
	}

	code, _, b := post(t, ts.URL+"/v1/responses", `{"model":"remote","instructions":"Be brief.","input":"x","text":{"format":{"type":"json_schema","name":"a","schema":{"type":"object"}}}}`)
	var resp struct {
		Status string
		Output []struct{ Content []struct{ Text string } }
		Usage  struct{ InputTokens, OutputTokens int } `json:"usage"`
	}
	if code != 200 || json.Unmarshal(b, &resp) != nil || len(resp.Output) != 1 || resp.Output[0].Content[0].Text != `{"a":1} STOP never seen` {
		t.Fatalf("responses: %d %s", code, b)
	}
	if m := sent("messages"); !strings.Contains(m, `"role":"system","content":"Be brief."`) || !strings.Contains(m, `"role":"user","content":"x"`) ||
		!strings.Contains(sent("response_format"), `"json_schema"`) {
		t.Errorf("upstream got messages %s, response_format %s", m, sent("response_format"))
	}

	code, _, b = post(t, ts.URL+"/v1/messages", `{"model":"remote","max_tokens":20,"system":"Be brief.","stop_sequences":["STOP"],
		"messages":[{"role":"user","content":"x"}],"tools":[{"name":"f","description":"d","input_schema":{"type":"object"}}]}`)
	var msg struct {
		Content      []struct{ Type, Text string }
		StopReason   string `json:"stop_reason"`
		StopSequence string `json:"stop_sequence"`
	}
	if code != 200 || json.Unmarshal(b, &msg) != nil || len(msg.Content) != 1 || msg.Content[0].Text != `{"a":1} ` ||
		msg.StopReason != "stop_sequence" || msg.StopSequence != "STOP" {
		t.Fatalf("messages: %d %s", code, b)
	}
	if tools := sent("tools"); !strings.Contains(tools, `"type":"function"`) || !strings.Contains(tools, `"name":"f"`) || !strings.Contains(tools, `"parameters":{"type":"object"}`) {
		t.Errorf("upstream got tools %s", tools)
	}
}
