package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

func countSeries(fams map[string]*dto.MetricFamily) int {
	n := 0
	for _, f := range fams {
		n += len(f.GetMetric())
	}
	return n
}

// Model names and paths are the client's: none may reach a label (a
// "\t" once broke every later scrape; 3000 invented names grew /metrics
// from 27 KB to 6.3 MB), and the exposition must stay parseable by
// Prometheus' strict text parser.
func TestMetricsSurviveHostileNames(t *testing.T) {
	root := t.TempDir()
	axDir(t, root, "m", `{}`, 1)
	ts := start(t, Options{ModelDirs: []string{root}})
	if code, _ := chat(t, ts, "m", "hi"); code != 200 {
		t.Fatalf("chat: %d", code)
	}
	hostile := []string{"a\tb", `a"b`, `a\b`, "line\nbreak", "\xff\xfe", "}{", "m:latest\"} 1\nfake_series 2", strings.Repeat("x", 5000), "M", "m\x00"}
	for _, name := range hostile {
		b, _ := json.Marshal(map[string]any{"model": name, "prompt": "x"})
		post(t, ts.URL+"/api/generate", string(b))
		b, _ = json.Marshal(map[string]any{"model": name, "messages": []any{map[string]string{"role": "user", "content": "x"}}})
		post(t, ts.URL+"/v1/chat/completions", string(b))
		post(t, ts.URL+"/api/chat", string(b))
		get(t, ts.URL+"/v1/models/"+strings.NewReplacer("\t", "%09", "\n", "%0A", `"`, "%22", "\\", "%5C", "\x00", "%00", "\xff", "%FF", "\xfe", "%FE").Replace(name))
	}
	for _, p := range []string{"/api/x%22y%0Az", "/v1/%7D%7B", "/%22%20%7D", "/metrics%0Afake%201"} {
		get(t, ts.URL+p)
	}
	// A literal quote and braces in the request line itself.
	if status, _, _ := rawRequest(t, strings.TrimPrefix(ts.URL, "http://"), "GET /a\"b{c}\\ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n", ""); status == "" {
		t.Error("no answer to a quoted path")
	}
	scrape(t, ts) // counts the scrape route itself
	chat404 := `edgectl_requests_total{route="/api/chat",model="unknown",code="404"}`
	if got := metric(t, ts, chat404); got != fmt.Sprint(len(hostile)-1) { // all but "M", which is m:latest
		t.Errorf("hostile names on /api/chat: %s", got)
	}
	before := scrape(t, ts)

	// 3000 invented names on two routes.
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < 3000; i += 4 {
				route := "/api/chat"
				if i%2 == 1 {
					route = "/v1/chat/completions"
				}
				req, _ := http.NewRequest(http.MethodPost, ts.URL+route, strings.NewReader(fmt.Sprintf(`{"model":"invented-%d","messages":[{"role":"user","content":"x"}]}`, i)))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != 404 {
					t.Errorf("invented-%d: %d", i, resp.StatusCode)
				}
			}
		}(w)
	}
	wg.Wait()
	after := scrape(t, ts)
	if b, a := countSeries(before), countSeries(after); a != b {
		t.Errorf("3000 invented names changed the series count: %d → %d", b, a)
		for name, f := range after {
			if len(f.GetMetric()) != len(before[name].GetMetric()) {
				t.Errorf("%s: %d → %d series", name, len(before[name].GetMetric()), len(f.GetMetric()))
			}
		}
	}
	routes := map[string]bool{"other": true, "/": true}
	for _, p := range []string{"/v1/chat/completions", "/v1/completions", "/v1/models", "/v1/models/{id...}", "/api/generate", "/api/chat",
		"/api/tags", "/api/ps", "/api/show", "/api/version", "/health", "/metrics"} {
		routes[p] = true
	}
	for name, f := range after {
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				v := lp.GetValue()
				switch lp.GetName() {
				case "model":
					if v != "m:latest" && v != unknownModel {
						t.Errorf("%s: model label %q", name, v)
					}
				case "route":
					if !routes[v] {
						t.Errorf("%s: route label %q", name, v)
					}
				}
			}
		}
	}
	if got := metric(t, ts, chat404); got != fmt.Sprint(len(hostile)-1+1500) {
		t.Errorf("invented names on /api/chat: %s", got)
	}
	if got := metric(t, ts, `edgectl_requests_total{route="/v1/models/{id...}",model="unknown",code="404"}`); got == "<edgectl_requests_total{route=\"/v1/models/{id...}\",model=\"unknown\",code=\"404\"} missing>" {
		t.Error("model lookups by path not counted under their route")
	}
}
