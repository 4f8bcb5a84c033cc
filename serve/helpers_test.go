package serve

import (
	"github.com/edgectl/edgectl/internal/testbin"

	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/axcl"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/engine/upstream"
)

// TestMain removes the fake programs built for the package's tests.
func TestMain(m *testing.M) { testbin.Main(m) }

// tinyStories is the trained 656k-parameter Llama fixture (no chat template).
const tinyStories = "../testdata/models/tinystories-656k"

// fakeRuntime builds the fake vendor CLI from engine/axcl/testdata.
func fakeRuntime(t testing.TB) string {
	return testbin.Build(t, testbin.FakeAxllm, "axllm")
}

// axDir writes a compiled-model directory under root/name for the fake
// runtime; its .axmodel files total sizeMiB.
func axDir(t testing.TB, root, name, fake string, sizeMiB int) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(n string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("config.json", []byte(`{"model_name":"AXERA-TECH/`+name+`","tokenizer_type":"Qwen3","url_tokenizer_model":"t.txt","template_filename_axmodel":"m_p128_l%d_together.axmodel","axmodel_num":1,"filename_post_axmodel":"m_post.axmodel","filename_tokens_embed":"e.bin","tokens_embed_num":151936,"tokens_embed_size":1024}`))
	write("m_post.axmodel", make([]byte, 1<<10))
	write("m_p128_l0_together.axmodel", make([]byte, sizeMiB<<20-1<<10))
	write("fake.json", []byte(fake))
	write("t.txt", []byte(byteTokenizerTxt())) // the runtime fails without its tokenizer file
	return dir
}

// tinyDir links the tinystories fixture under root/name.
func tinyDir(t testing.TB, root, name string) string {
	t.Helper()
	src, _ := filepath.Abs(tinyStories)
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type testServer struct {
	*Server
	URL  string
	http *httptest.Server
}

// start serves opts over a real HTTP listener; engines default to the real
// cpu, axcl (fake runtime) and upstream lanes.
func start(t testing.TB, opts Options) *testServer {
	t.Helper()
	if opts.Engines == nil {
		opts.Engines = map[string]engine.Engine{
			LaneCPU:    cpu.New(),
			LaneAxcl:   axcl.New(axcl.Options{Command: []string{fakeRuntime(t), "run", "{dir}"}, StopTimeout: time.Second, SMI: []string{}}),
			"upstream": upstream.New(opts.Upstreams, upstream.Options{StartTimeout: 5 * time.Second}),
		}
	}
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	ts := &testServer{Server: s, URL: hs.URL, http: hs}
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		s.Close()
	})
	return ts
}

func (ts *testServer) client(extra ...option.RequestOption) openai.Client {
	opts := append([]option.RequestOption{option.WithBaseURL(ts.URL + "/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0)}, extra...)
	return openai.NewClient(opts...)
}

// post sends body (a string or a value to marshal) and returns status,
// headers and body.
func post(t testing.TB, url string, body any, header ...string) (int, http.Header, []byte) {
	t.Helper()
	var b []byte
	switch v := body.(type) {
	case string:
		b = []byte(v)
	default:
		b, _ = json.Marshal(v)
	}
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, out
}

func get(t testing.TB, url string, header ...string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// ndjson splits an NDJSON body into objects, failing on a line that is not
// one JSON object.
func ndjson(t testing.TB, body []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("NDJSON line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// psNames lists /api/ps model names.
func psNames(t testing.TB, ts *testServer) []string {
	t.Helper()
	_, b := get(t, ts.URL+"/api/ps")
	var ps struct {
		Models []struct{ Name string } `json:"models"`
	}
	if err := json.Unmarshal(b, &ps); err != nil {
		t.Fatalf("/api/ps %s: %v", b, err)
	}
	var names []string
	for _, m := range ps.Models {
		names = append(names, m.Name)
	}
	return names
}

// eventually polls cond for up to 5 s: unloads finish in the background.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// metric reads one series value from /metrics, parsed by Prometheus' own
// text parser: series is NAME or NAME{label="value",…} (labels in any order).
func metric(t testing.TB, ts *testServer, series string) string {
	t.Helper()
	name, labels := series, map[string]string{}
	if i := strings.IndexByte(series, '{'); i >= 0 {
		name = series[:i]
		for _, kv := range strings.Split(strings.TrimSuffix(series[i+1:], "}"), ",") {
			k, v, _ := strings.Cut(kv, "=")
			labels[k] = strings.Trim(v, `"`)
		}
	}
	for _, m := range scrape(t, ts)[name].GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		match := true
		for _, lp := range m.GetLabel() {
			if v, ok := labels[lp.GetName()]; !ok || v != lp.GetValue() {
				match = false
			}
		}
		if !match {
			continue
		}
		var v float64
		switch {
		case m.Counter != nil:
			v = m.Counter.GetValue()
		case m.Gauge != nil:
			v = m.Gauge.GetValue()
		case m.Histogram != nil:
			v = float64(m.Histogram.GetSampleCount())
		default:
			v = m.Untyped.GetValue()
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprintf("<%s missing>", series)
}

// scrape fetches /metrics and parses it strictly.
func scrape(t testing.TB, ts *testServer) map[string]*dto.MetricFamily {
	t.Helper()
	code, b := get(t, ts.URL+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d %s", code, b)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

func (ts *testServer) chat() *openai.ChatCompletionService {
	c := ts.client()
	return &c.Chat.Completions
}
