package serve

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/internal/version"
)

// api.Client against the real server on the tinystories fixture (the
// client lives in api, which cannot import serve, so its end-to-end tests
// live here).

func newClient(t *testing.T, ts *testServer, key string) *api.Client {
	t.Helper()
	c, err := api.NewClient(ts.URL, key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func greedy(n int) *api.Options {
	temp := 0.0
	return &api.Options{Temperature: &temp, NumPredict: &n}
}

func TestClientChatStreamsAndEndsWithMetrics(t *testing.T) {
	ts := tinyServer(t)
	c := newClient(t, ts, "")
	ctx := context.Background()
	req := &api.ChatRequest{Model: "tinystories", Messages: []api.Message{{Role: "user", Content: "Once upon a time"}}, Options: greedy(8)}
	var text strings.Builder
	var chunks int
	var last api.ChatResponse
	err := c.Chat(ctx, req, func(r api.ChatResponse) error {
		if last.Done {
			t.Errorf("a line after done: %+v", r)
		}
		text.WriteString(r.Message.Content)
		chunks++
		last = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if chunks < 3 || !last.Done || last.DoneReason != "length" || last.EvalCount != 8 || last.PromptEvalCount == 0 ||
		last.Metrics == nil || last.Metrics.Lane != LaneCPU || last.Metrics.TTFTMS <= 0 || last.Metrics.TPS <= 0 {
		t.Errorf("%d lines, last %+v metrics %+v", chunks, last, last.Metrics)
	}
	// stream:false: one call with the same (greedy) text.
	off := false
	req.Stream = &off
	var whole []api.ChatResponse
	if err := c.Chat(ctx, req, func(r api.ChatResponse) error { whole = append(whole, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(whole) != 1 || whole[0].Message.Content != text.String() || !whole[0].Done {
		t.Errorf("stream:false %+v, streamed %q", whole, text.String())
	}

	var gen strings.Builder
	err = c.Generate(ctx, &api.GenerateRequest{Model: "tinystories", Prompt: "Once upon a time", Raw: true, Options: greedy(8)},
		func(r api.GenerateResponse) error { gen.WriteString(r.Response); return nil })
	if err != nil || gen.String() != text.String() { // one user message on a template-less model is the raw prompt
		t.Errorf("generate %q, %v; chat %q", gen.String(), err, text.String())
	}
}

func TestClientReadsModelsAndServer(t *testing.T) {
	ts := tinyServer(t)
	c := newClient(t, ts, "")
	ctx := context.Background()
	list, err := c.List(ctx)
	if err != nil || len(list.Models) != 1 || list.Models[0].Name != "tinystories:latest" {
		t.Fatalf("list %+v, %v", list, err)
	}
	if v, err := c.Version(ctx); err != nil || v != version.String() {
		t.Errorf("version %q, %v", v, err)
	}
	ps, err := c.PS(ctx)
	if err != nil || len(ps.Models) != 0 {
		t.Errorf("ps before a load: %+v, %v", ps, err)
	}
	// An empty chat loads the model (Ollama's preload).
	var load api.ChatResponse
	if err := c.Chat(ctx, &api.ChatRequest{Model: "tinystories"}, func(r api.ChatResponse) error { load = r; return nil }); err != nil || load.DoneReason != api.DoneLoad {
		t.Fatalf("preload %+v, %v", load, err)
	}
	ps, err = c.PS(ctx)
	if err != nil || len(ps.Models) != 1 || ps.Models[0].Lane != LaneCPU || ps.Models[0].ContextLength == 0 {
		t.Errorf("ps after a load: %+v, %v", ps, err)
	}
	show, err := c.Show(ctx, &api.ShowRequest{Model: "tinystories"})
	if err != nil || show.ModelInfo["edgectl.loaded"] != true || show.ModelInfo["general.architecture"] == "" {
		t.Errorf("show %+v, %v", show, err)
	}
	h, err := c.Health(ctx)
	if err != nil || h.Status != "ok" || h.ModelsLoaded != 1 || !slices.ContainsFunc(h.Lanes, func(l api.HealthLane) bool { return l.Name == LaneCPU }) {
		t.Errorf("health %+v, %v", h, err)
	}
}

func TestClientErrorsAreStatusErrors(t *testing.T) {
	root := t.TempDir()
	tinyDir(t, root, "tinystories")
	ts := start(t, Options{ModelDirs: []string{root}, APIKey: "k"})
	ctx := context.Background()
	var se *api.StatusError

	_, err := newClient(t, ts, "").List(ctx)
	if !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized || !strings.Contains(se.Message, "API key") {
		t.Errorf("no key: %v", err)
	}
	if _, err := newClient(t, ts, "").Health(ctx); err != nil {
		t.Errorf("health needs no key: %v", err)
	}
	c := newClient(t, ts, "k")
	err = c.Chat(ctx, &api.ChatRequest{Model: "nope", Messages: []api.Message{{Role: "user", Content: "hi"}}}, func(api.ChatResponse) error { return nil })
	if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound || !strings.Contains(se.Message, `model "nope" not found`) {
		t.Errorf("unknown model: %v", err)
	}
	bad := 9.0
	err = c.Chat(ctx, &api.ChatRequest{Model: "tinystories", Messages: []api.Message{{Role: "user", Content: "hi"}}, Options: &api.Options{TopP: &bad}},
		func(api.ChatResponse) error { return nil })
	if !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest || !strings.Contains(se.Message, "options.top_p") {
		t.Errorf("bad option: %v", err)
	}
}

// Cancelling the context closes the stream: the call returns at once, no
// more lines arrive, and the server records a client that left (499).
func TestClientCancelClosesStream(t *testing.T) {
	ts := tinyServer(t)
	c := newClient(t, ts, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lines := 0
	err := c.Chat(ctx, &api.ChatRequest{Model: "tinystories", Messages: []api.Message{{Role: "user", Content: "Once upon a time"}}},
		func(api.ChatResponse) error {
			lines++
			if lines == 2 {
				cancel()
			}
			return nil
		})
	if !errors.Is(err, context.Canceled) || lines != 2 {
		t.Errorf("%v after %d lines", err, lines)
	}
	eventually(t, "499 recorded", func() bool {
		return metric(t, ts, `edgectl_requests_total{route="/api/chat",model="tinystories:latest",code="499"}`) == "1"
	})
}
