package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/axcl"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/engine/upstream"
)

// laneFieldValues is a value for each row of laneFields that asks for
// something (Ollama's names: every row exists there).
var laneFieldValues = map[string]string{
	"temperature": `0.5`, "top_p": `0.9`, "top_k": `5`, "repeat_penalty": `1.3`, "repeat_last_n": `32`,
	"min_p": `0.1`, "seed": `7`, "logprobs": `true`, "frequency_penalty": `0.5`, "presence_penalty": `0.5`,
	"response_format":  `{"type":"string","maxLength":3}`, // Ollama's format: a schema tinystories can spell
	"tools":            `[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`,
	"reasoning_effort": `"high"`, // Ollama's think: a level
}

// What GET /v1/models says of each field is what a request sending it
// gets: "refused" is a 400 naming the field, "applied" and "forwarded"
// succeed, and "forwarded" reaches the upstream's request body.
func TestModelsFieldsMatchWhatRequestsGet(t *testing.T) {
	var mu sync.Mutex
	var lastBody map[string]any
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		var b map[string]any
		json.NewDecoder(r.Body).Decode(&b)
		mu.Lock()
		lastBody = b
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", `{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}`)
	}))
	defer up.Close()
	root := t.TempDir()
	templatedTinyDir(t, root, "tiny", "Qwen-Qwen3-0.6B.jinja") // a template that shows tools and thinking (tools_test.go)
	axDir(t, root, "npu", `{}`, 1)
	ups := []upstream.Config{{Name: "remote", URL: up.URL}}
	ts := start(t, Options{ModelDirs: []string{root}, Upstreams: ups, Engines: map[string]engine.Engine{
		LaneCPU:    cpu.New(),
		LaneAxcl:   axcl.New(axcl.Options{Command: []string{fakeRuntime(t), "run", "{dir}"}, StopTimeout: time.Second, SMI: []string{}, Logf: func(string, ...any) {}}),
		"upstream": upstream.New(ups, upstream.Options{StartTimeout: 5 * time.Second}),
	}})

	_, b := get(t, ts.URL+"/v1/models")
	var list struct {
		Data []struct {
			ID     string            `json:"id"`
			Fields map[string]string `json:"fields"`
		}
	}
	if err := json.Unmarshal(b, &list); err != nil || len(list.Data) != 3 {
		t.Fatalf("/v1/models: %v %s", err, b)
	}
	seen := map[string]bool{}
	for _, m := range list.Data {
		if len(m.Fields) != len(laneFields) {
			t.Errorf("%s: fields %v, want one per row of laneFields", m.ID, m.Fields)
		}
		for field, support := range m.Fields {
			val, ok := laneFieldValues[field]
			if !ok {
				t.Fatalf("no test value for field %q", field)
			}
			seen[m.ID+" "+support] = true
			body := fmt.Sprintf(`{"model":%q,"stream":false,"messages":[{"role":"user","content":"hi"}],"options":{"num_predict":2,%q:%s}}`, m.ID, field, val)
			name := field // as Ollama spells it
			if f := laneFieldNamed(field); f.toplevel {
				name = f.field("options.")
				body = fmt.Sprintf(`{"model":%q,"stream":false,"messages":[{"role":"user","content":"hi"}],"options":{"num_predict":2},%q:%s}`, m.ID, name, val)
			}
			mu.Lock()
			lastBody = nil
			mu.Unlock()
			code, _, resp := post(t, ts.URL+"/api/chat", body)
			switch support {
			case Refused:
				if code != http.StatusBadRequest || !strings.Contains(string(resp), name+" is not supported") {
					t.Errorf("%s %s: /v1/models says refused, the request got %d %s", m.ID, field, code, resp)
				}
			case Applied, Forwarded:
				if code != http.StatusOK {
					t.Errorf("%s %s: /v1/models says %s, the request got %d %s", m.ID, field, support, code, resp)
				}
			default:
				t.Errorf("%s %s: unknown support %q", m.ID, field, support)
			}
			if support == Forwarded {
				mu.Lock()
				_, sent := lastBody[field]
				mu.Unlock()
				if !sent {
					t.Errorf("%s %s: forwarded, but the upstream's request body lacks it: %v", m.ID, field, lastBody)
				}
			}
		}
	}
	for _, want := range []string{"tiny:latest applied", "npu:latest refused", "npu:latest applied", "remote:latest forwarded", "remote:latest refused"} {
		if !seen[want] {
			t.Errorf("no field seen as %q; models: %s", want, b)
		}
	}
}

// laneFieldNamed is the row of laneFields named name.
func laneFieldNamed(name string) laneField {
	for _, f := range laneFields {
		if f.name == name {
			return f
		}
	}
	return laneField{}
}

// docs/serve.md's table of fields per lane is laneFields, rendered.
func TestLaneFieldsDocTable(t *testing.T) {
	doc, err := os.ReadFile("../docs/serve.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- lane-fields: generated from serve/lanefields.go -->\n", "<!-- /lane-fields -->"
	s := string(doc)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("docs/serve.md lacks the %q … %q block", begin, end)
	}
	var want strings.Builder
	want.WriteString("| field | cpu | axcl (NPU) | upstream |\n|---|---|---|---|\n")
	for _, f := range laneFields {
		name := "`" + f.name + "`"
		if f.ollama != "" {
			name += " (Ollama `" + f.ollama + "`)"
		}
		fmt.Fprintf(&want, "| %s | %s | %s | %s |\n", name, f.cpu, f.axcl, f.upstream)
	}
	if got := s[i+len(begin) : j]; got != want.String() {
		t.Errorf("docs/serve.md lane-fields table is out of date; replace it with:\n%s", want.String())
	}
}
