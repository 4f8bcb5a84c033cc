package axcl

import (
	"github.com/edgectl/edgectl/internal/testbin"

	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgectl/edgectl/engine"
)

// TestMain removes the fake programs built for the package's tests.
func TestMain(m *testing.M) { testbin.Main(m) }

// fakeRuntime builds testdata/fakeaxllm once per test binary.
func fakeRuntime(t testing.TB) string {
	return testbin.Build(t, testbin.FakeAxllm, "axllm")
}

// modelDir writes a compiled-model directory the fake runtime accepts.
func modelDir(t testing.TB, fake string) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("config.json", `{"model_name":"AXERA-TECH/Fake-0.5B","tokenizer_type":"Qwen3","url_tokenizer_model":"qwen3_tokenizer.txt","template_filename_axmodel":"fake_p128_l%d_together.axmodel","axmodel_num":1,"filename_post_axmodel":"fake_post.axmodel","filename_tokens_embed":"model.embed_tokens.weight.bfloat16.bin","tokens_embed_num":151936,"tokens_embed_size":1024}`)
	write("fake_post.axmodel", strings.Repeat("p", 1000))
	write("fake_p128_l0_together.axmodel", strings.Repeat("l", 3000))
	write("fake.json", fake)
	write("qwen3_tokenizer.txt", ByteTokenizerTxt())
	return dir
}

func newTestEngine(t testing.TB, state string) *Engine {
	bin := fakeRuntime(t)
	return New(Options{
		Command:     []string{bin, "run", "{dir}"},
		StopTimeout: 10 * time.Second, // room for a loaded CI machine (load 6 a core measured) to deliver ^C and the prompt; healthy stops take milliseconds
		SMI:         []string{bin, "--state", state},
	})
}

func generate(t *testing.T, ctx context.Context, m engine.Model, req engine.Request) (string, engine.Result, error) {
	t.Helper()
	s, err := m.NewSession()
	if err != nil {
		return "", engine.Result{}, err
	}
	defer s.Close()
	var b strings.Builder
	res, err := s.Generate(ctx, req, func(tok engine.Token) error {
		if tok.ID != -1 {
			t.Errorf("token id %d, want -1 (text-only backend)", tok.ID)
		}
		b.WriteString(tok.Text)
		return nil
	})
	return b.String(), res, err
}

func TestParserSplitsAtEveryByte(t *testing.T) {
	for _, tc := range []struct{ name, out string }{
		{"bracket", "[I][ Run][ 829]: ttft: 135.66 ms\nOnce upon a time, 12 [cats] sat.\n[N][ Run][ 943]: hit eos,avg 34.04 token/s\n[I][ GetKVCache][ 512]: precompute_len:113, remaining:399\nprompt >> "},
		{"time", "09:45:45.569 \x1b[32mINF\x1b[0m Run:1023 | ttft: 860.29 ms\r\nOnce upon a time, 12 [cats] sat.\r\n09:45:46.001 NTC Run:1145 | hit eos,avg 5.76 token/s\r\nprompt >> "},
		{"glued", "[I][ Run][ 829]: ttft: 1.00 ms\nOnce upon a time, 12 [cats] sat.[N][ Run][ 943]: hit eos,avg 3.00 token/s\n>> "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p parser
			var text strings.Builder
			var logs []string
			ready := 0
			for i := 0; i < len(tc.out); i++ {
				for _, ev := range p.feed([]byte{tc.out[i]}) {
					switch ev.kind {
					case evText:
						text.WriteString(ev.text)
					case evLog:
						logs = append(logs, ev.text)
					case evReady:
						ready++
					}
				}
			}
			if got := strings.TrimSuffix(text.String(), "\n"); got != "Once upon a time, 12 [cats] sat." {
				t.Errorf("text %q", got)
			}
			if ready != 1 {
				t.Errorf("ready %d times, want 1", ready)
			}
			var ttft, eos bool
			for _, l := range logs {
				f, _ := parseLog(l)
				ttft = ttft || f.ttftMS > 0
				eos = eos || f.eos
			}
			if !ttft || !eos {
				t.Errorf("logs %q: ttft %v eos %v", logs, ttft, eos)
			}
		})
	}
}

func TestGenerateBothLogFormats(t *testing.T) {
	for _, tc := range []struct{ name, fake string }{
		{"bracket", `{"start_delay_ms": 300, "token_delay_ms": 2}`},
		{"time", `{"start_delay_ms": 300, "token_delay_ms": 2, "format": "time"}`},
		{"legacy-prompt", `{"token_delay_ms": 2, "legacy_prompt": true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEngine(t, t.TempDir())
			ctx := context.Background()
			start := time.Now()
			m, err := e.Load(ctx, modelDir(t, tc.fake), engine.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if strings.Contains(tc.fake, "start_delay") && time.Since(start) < 300*time.Millisecond {
				t.Errorf("Load returned before the runtime prompted")
			}
			info := m.Info()
			if info.Name != "AXERA-TECH/Fake-0.5B" || info.ContextLength != 2559 || info.Format != "axmodel" || info.SizeBytes != 4000 {
				t.Errorf("info %+v", info)
			}
			for i := 0; i < 2; i++ { // the second session must start from a reset conversation
				text, res, err := generate(t, ctx, m, engine.Request{Messages: []engine.Message{
					{Role: "system", Content: "be brief"}, {Role: "user", Content: "hello\nthere"}}})
				if err != nil {
					t.Fatal(err)
				}
				if text != "You said: hello there (turn 1). ☕" {
					t.Errorf("text %q", text)
				}
				if res.FinishReason != engine.FinishStop || res.TTFT != 12340*time.Microsecond ||
					res.Extra["npu_reported_tps"] != 34.04 || res.CompletionTokens < 1 || res.PromptTokens < 2 {
					// Without a tokenizer the count is of the pieces read
					// from the PTY (token_count: approximate), and a loaded
					// machine coalesces the fake's 2 ms-apart pieces.
					t.Errorf("result %+v", res)
				}
			}
		})
	}
}

func TestStopStringAndMaxTokens(t *testing.T) {
	e := newTestEngine(t, t.TempDir())
	ctx := context.Background()
	m, err := e.Load(ctx, modelDir(t, `{"token_delay_ms": 1}`), engine.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pid := m.(*Model).PID()

	text, res, err := generate(t, ctx, m, engine.Request{Prompt: "abc def", Stop: []string{"def (tu"}})
	if err != nil || text != "You said: abc " || res.FinishReason != engine.FinishStop {
		t.Errorf("stop: %q %+v %v", text, res, err)
	}
	text, res, err = generate(t, ctx, m, engine.Request{Prompt: "LONG", MaxTokens: 5})
	// The vendor CLI prints text, not token ids: pieces are counted per PTY
	// read, and a loaded machine can deliver two words in one read. So the
	// cut is approximate: at least the 5 pieces asked for, far fewer than
	// the 100 the runtime would print, and reported as a length stop.
	if err != nil || !strings.HasPrefix(text, "w0 w1 w2 w3 w4 ") || len(strings.Fields(text)) > 20 ||
		res.FinishReason != engine.FinishLength || res.CompletionTokens != 5 {
		t.Errorf("max tokens: %q %+v %v", text, res, err)
	}
	text, _, err = generate(t, ctx, m, engine.Request{Prompt: "again"})
	if err != nil || text != "You said: again (turn 1). ☕" {
		t.Errorf("after interrupt: %q %v", text, err)
	}
	if m.(*Model).PID() != pid || m.(*Model).Alive() != nil {
		t.Errorf("runtime restarted or dead after ^C")
	}
}

func TestCancelStopsTheRunAndKeepsTheRuntime(t *testing.T) {
	e := newTestEngine(t, t.TempDir())
	m, err := e.Load(context.Background(), modelDir(t, `{"token_delay_ms": 20}`), engine.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, _ := m.NewSession()
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err = s.Generate(ctx, engine.Request{Prompt: "LONG"}, func(engine.Token) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if n > 10 {
		t.Errorf("%d tokens emitted after cancel", n)
	}
	if err := m.(*Model).Alive(); err != nil {
		t.Fatalf("runtime dead after cancel: %v", err)
	}
	text, _, err := generate(t, context.Background(), m, engine.Request{Prompt: "next"})
	if err != nil || text != "You said: next (turn 1). ☕" {
		t.Errorf("next request: %q %v", text, err)
	}
}

func TestHangIsKilledAndMemoryChecked(t *testing.T) {
	state := t.TempDir()
	e := newTestEngine(t, state)
	m, err := e.Load(context.Background(), modelDir(t, `{"state_dir": "`+state+`", "cmm_mb": 1500}`), engine.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Info().SizeBytes; got != 1500<<20 {
		t.Errorf("size %d, want the CMM axcl-smi saw the runtime take (%d)", got, 1500<<20)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	text, _, err := generate(t, ctx, m, engine.Request{Prompt: "HANG now"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	if text != "You said: " {
		t.Errorf("text before the hang %q", text)
	}
	if m.(*Model).Alive() == nil {
		t.Fatal("a runtime that ignored ^C is still considered alive")
	}
	if err := m.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if _, err := m.NewSession(); err == nil {
		t.Error("NewSession on a killed runtime succeeded")
	}
}

func TestCrashReportsExitAndLeak(t *testing.T) {
	state := t.TempDir()
	e := newTestEngine(t, state)
	m, err := e.Load(context.Background(), modelDir(t, `{"state_dir": "`+state+`", "cmm_mb": 900}`), engine.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = generate(t, context.Background(), m, engine.Request{Prompt: "CRASH LEAK"})
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "Segmentation fault") {
		t.Fatalf("err %v", err)
	}
	if m.(*Model).Alive() == nil {
		t.Error("crashed runtime considered alive")
	}
	err = m.Close()
	if err == nil || !strings.Contains(err.Error(), "not released") || !strings.Contains(err.Error(), "900 MiB") {
		t.Errorf("close after a leaking crash: %v", err)
	}
}

func TestLoadFailures(t *testing.T) {
	e := newTestEngine(t, t.TempDir())
	if _, err := e.Load(context.Background(), t.TempDir(), engine.LoadOptions{}); !errors.Is(err, engine.ErrUnsupported) {
		t.Errorf("empty dir: %v", err)
	}
	slow := New(Options{Command: []string{fakeRuntime(t), "run", "{dir}"}, StartTimeout: 300 * time.Millisecond, StopTimeout: 300 * time.Millisecond, SMI: []string{}})
	_, err := slow.Load(context.Background(), modelDir(t, `{"start_delay_ms": 5000}`), engine.LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), `no "prompt >> " after 300ms`) || !strings.Contains(err.Error(), "LLM init start") {
		t.Errorf("slow start: %v", err)
	}
	missing := New(Options{Command: []string{filepath.Join(t.TempDir(), "axllm"), "run", "{dir}"}})
	if _, err := missing.Load(context.Background(), modelDir(t, `{}`), engine.LoadOptions{}); err == nil || !strings.Contains(err.Error(), "install the ax-llm runtime") {
		t.Errorf("missing binary: %v", err)
	}
}

func TestParseSMI(t *testing.T) {
	out := "CMM Total : 7208960 KiB\nCMM Used : 18432 KiB\nCMM Remain : 7190528 kiB\n"
	if mib, ok := parseSMIUsed(out); !ok || mib != 18 {
		t.Errorf("got %d %v", mib, ok)
	}
}

// A legacy main_axcl_* binary: ">> " prompt, bracket logs, "q" to quit and
// no reset command: a conversation continues turn by turn, and a new one
// restarts the process (the only way such a build forgets).
func TestLegacyBinary(t *testing.T) {
	legacy := filepath.Join(t.TempDir(), "main_axcl_x86")
	b, err := os.ReadFile(fakeRuntime(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(legacy, b, 0o755); err != nil {
		t.Fatal(err)
	}
	e := New(Options{Command: []string{legacy, "--system_prompt", "x", "{dir}"}, StopTimeout: 6 * time.Second, SMI: []string{}})
	if e.opts.QuitCommand != "q" || e.opts.ResetCommand != "" {
		t.Fatalf("legacy defaults %+v", e.opts)
	}
	m, err := e.Load(context.Background(), modelDir(t, `{"legacy_prompt": true}`), engine.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pid := m.(*Model).PID()
	var msgs []engine.Message
	for i, want := range []string{"You said: a (turn 1). ☕", "You said: b (turn 2). ☕"} {
		msgs = append(msgs, engine.Message{Role: "user", Content: string(rune('a' + i))})
		text, _, err := generate(t, context.Background(), m, engine.Request{Messages: msgs})
		if err != nil || text != want {
			t.Errorf("turn %d: %q %v", i, text, err)
		}
		msgs = append(msgs, engine.Message{Role: "assistant", Content: text})
	}
	text, _, err := generate(t, context.Background(), m, engine.Request{Prompt: "c"})
	if err != nil || text != "You said: c (turn 1). ☕" || m.(*Model).PID() == pid {
		t.Errorf("new conversation: %q %v (pid %d → %d)", text, err, pid, m.(*Model).PID())
	}
	done := make(chan error, 1)
	go func() { done <- m.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(2 * time.Second): // "q" ends it well before SIGTERM (StopTimeout/2 = 3 s)
		t.Error("legacy binary did not quit on q")
	}
	if m.(*Model).Alive() == nil {
		t.Error("closed model alive")
	}
}

// The runtime loads the tokenizer file config.json names; without it, it
// fails at init with the vendor loader's message, which Load reports.
func TestLoadFailsWithoutTokenizerFile(t *testing.T) {
	e := newTestEngine(t, t.TempDir())
	dir := modelDir(t, `{}`)
	if err := os.Remove(filepath.Join(dir, "qwen3_tokenizer.txt")); err != nil {
		t.Fatal(err)
	}
	_, err := e.Load(context.Background(), dir, engine.LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "Failed: can't load tokenzier from:") {
		t.Fatalf("load without tokenizer: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "qwen3_tokenizer.txt"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = e.Load(context.Background(), dir, engine.LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "Failed: magic number is wrong from:") {
		t.Fatalf("load with a JSON tokenizer: %v", err)
	}
}
