package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/bench"
	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/internal/testmodel"
	"github.com/edgectl/edgectl/serve"
)

// benchJSON runs bench with --json and decodes its one object.
func benchJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"bench", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("bench %v: exit %d: %s", args, code, errOut)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("bench --json printed %q: %v", out, err)
	}
	return m
}

// checkRates checks the three timed figures: each {median,min,max},
// positive, min ≤ median ≤ max.
func checkRates(t *testing.T, m map[string]any) {
	t.Helper()
	for _, k := range []string{"decode_tok_s", "prefill_tok_s", "ttft_ms"} {
		s, ok := m[k].(map[string]any)
		if !ok {
			t.Errorf("%s: %v, want {median,min,max}", k, m[k])
			continue
		}
		lo, med, hi := s["min"].(float64), s["median"].(float64), s["max"].(float64)
		if !(lo > 0 && lo <= med && med <= hi) {
			t.Errorf("%s: min %v, median %v, max %v", k, lo, med, hi)
		}
	}
}

// tensorBytes sums the bytes of the tensors of a safetensors file whose
// names match keep, read from its header here rather than through
// format/safetensors.
func tensorBytes(t *testing.T, file string, keep func(string) bool) int64 {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(raw)
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(raw[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	var sum int64
	for name, v := range hdr {
		var ti struct {
			Offsets [2]int64 `json:"data_offsets"`
		}
		if name == "__metadata__" || !keep(name) {
			continue
		}
		if err := json.Unmarshal(v, &ti); err != nil {
			t.Fatal(err)
		}
		sum += ti.Offsets[1] - ti.Offsets[0]
	}
	return sum
}

// bench --json on the TinyStories fixture: every field there and sane,
// and the bytes per token are the layer matrices and the head as the file
// stores them (F32, held as is) plus the mean KV rows over the decode
// steps: 2 (K, V) × 4 bytes × layers × KV heads × head dim per position,
// at prompt + gen/2 positions on average (steps at prompt … prompt+gen−2
// cached positions, each reading one row more).
func TestBenchJSONOnTinyStories(t *testing.T) {
	const P, G = 16, 8
	m := benchJSON(t, runFixture, "--runs", "3", "--prompt-tokens", "16", "--gen-tokens", "8", "--threads", "2")
	checkRates(t, m)
	matrices := []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
	weights := tensorBytes(t, filepath.Join(runFixture, "model.safetensors"), func(n string) bool {
		for _, s := range matrices {
			if strings.HasSuffix(n, "."+s+".weight") {
				return true
			}
		}
		return n == "lm_head.weight"
	})
	var cfg struct {
		Layers int `json:"num_hidden_layers"`
		Heads  int `json:"num_attention_heads"`
		KV     int `json:"num_key_value_heads"`
		Hidden int `json:"hidden_size"`
	}
	raw, _ := os.ReadFile(filepath.Join(runFixture, "config.json"))
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	kv := int64(2*4*cfg.Layers*cfg.KV*cfg.Hidden/cfg.Heads) * (P + G/2)
	num := func(k string) float64 { v, _ := m[k].(float64); return v }
	if got := int64(num("weight_bytes_per_token")); got != weights {
		t.Errorf("weight_bytes_per_token %d, the file's matrices and head hold %d", got, weights)
	}
	if got := int64(num("kv_bytes_per_token")); got != kv {
		t.Errorf("kv_bytes_per_token %d, want %d", got, kv)
	}
	if got := int64(num("bytes_per_token")); got != weights+kv {
		t.Errorf("bytes_per_token %d, want %d + %d", got, weights, kv)
	}
	if m["engine"] != "cpu" || m["format"] != "safetensors" || m["quantization"] != "F32" || num("threads") != 2 || num("runs") != 3 ||
		num("prompt_tokens") != P || num("gen_tokens") != G {
		t.Errorf("report: %v", m)
	}
	bw, ratio := num("read_gb_s"), num("roofline_ratio")
	if !(bw > 0.1) || !(ratio > 0) {
		t.Errorf("read_gb_s %v, roofline_ratio %v", bw, ratio)
	}
	// The ratio is each run's decode × bytes ÷ probe, so with the medians
	// it is of the same order.
	if want := m["decode_tok_s"].(map[string]any)["median"].(float64) * num("bytes_per_token") / (bw * 1e9); ratio < want/3 || ratio > want*3 {
		t.Errorf("roofline_ratio %v, medians give %v", ratio, want)
	}

	// For people: a small table.
	code, out, errOut := runCLI(t, "bench", runFixture, "--runs", "1", "--prompt-tokens", "8", "--gen-tokens", "4")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range []string{"median", "prefill", "decode", "TTFT", "bytes/token", " MB (weights", "GB/s", "roofline"} {
		if !strings.Contains(out, w) {
			t.Errorf("table without %q:\n%s", w, out)
		}
	}
}

// startServe stands up edgectl serve's handler on httptest, serving the
// fixture as "tiny" on the CPU lane.
func startServe(t *testing.T) string {
	t.Helper()
	abs, _ := filepath.Abs(runFixture)
	return inProcessServe(t, serve.Options{ModelDirs: []string{"tiny=" + abs}, Logf: t.Logf})
}

// bench --url against edgectl serve in-process, through each protocol and
// detected (Ollama's, which edgectl serve also speaks): the rates come
// back sane, the prompt tokens are the server's count of the rule's
// prompts (sent raw, or as the one user message the CPU lane sends as
// is), and the memory figures are null.
func TestBenchURLAgainstServe(t *testing.T) {
	url := startServe(t)
	tm, err := cpu.New().Load(context.Background(), runFixture, engine.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	var counts []int // runs 1 and 2, as the fixture's tokenizer counts them
	for i := 1; i <= 2; i++ {
		ids, err := tm.(engine.Scorer).Tokenize(context.Background(), bench.PromptText(i, 16), true)
		if err != nil {
			t.Fatal(err)
		}
		counts = append(counts, len(ids))
	}
	prompt := float64((counts[0] + counts[1]) / 2) // the median of two runs, as an int
	for _, c := range []struct{ api, want string }{{"ollama", "ollama"}, {"openai", "openai"}, {"", "ollama"}} {
		args := []string{"--url", url, "--model", "tiny", "--runs", "2", "--prompt-tokens", "16", "--gen-tokens", "6"}
		if c.api != "" {
			args = append(args, "--api", c.api)
		}
		m := benchJSON(t, args...)
		checkRates(t, m)
		if m["engine"] != c.want || m["model"] != "tiny" || m["url"] != url || m["prompt_tokens"] != prompt || m["gen_tokens"] != 6.0 {
			t.Errorf("--api %q: %v", c.api, m)
		}
		for _, k := range []string{"bytes_per_token", "weight_bytes_per_token", "kv_bytes_per_token", "read_gb_s", "roofline_ratio"} {
			if v, ok := m[k]; !ok || v != nil {
				t.Errorf("--api %q: %s = %v, want null", c.api, k, v)
			}
		}
		if !strings.Contains(m["timing"].(string), map[string]string{"ollama": "eval_duration", "openai": "client-side"}[c.want]) {
			t.Errorf("--api %q: timing %q", c.api, m["timing"])
		}
	}
}

// Bad input: one line on stderr, nothing on stdout, the exit code of its
// kind.
func TestBenchBadInput(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close() // nothing listens there now: connection refused
	missing := filepath.Join(t.TempDir(), "nope.gguf")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{missing}, exitError, missing},
		{[]string{runFixture, "--runs", "0"}, exitUsage, "--runs"},
		{[]string{runFixture, "--gen-tokens", "1"}, exitUsage, "--gen-tokens"},
		{[]string{runFixture, "--prompt-tokens", "500", "--gen-tokens", "100"}, exitError, "exceed the context of 512"},
		{[]string{runFixture, "--perplexity", missing}, exitError, missing},
		{[]string{"--url", dead, "--model", "tiny"}, exitNetwork, dead},
		{[]string{"--url", dead}, exitUsage, "--model"},
		{[]string{"--url", dead, "--model", "tiny", "--threads", "2"}, exitUsage, "--threads"},
		{[]string{"--url", dead, "--model", "tiny", "--api", "grpc"}, exitUsage, "--api"},
		{[]string{runFixture, "--model", "tiny"}, exitUsage, "--model goes with --url"},
		{[]string{runFixture, runFixture, "--url", dead}, exitUsage, "--url takes one model"},
		{[]string{runFixture, runFixture, "--perplexity", missing}, exitUsage, "--perplexity takes one model"},
		{[]string{runFixture, missing}, exitError, missing},
		{nil, exitUsage, "MODEL"},
	} {
		code, out, errOut := runCLI(t, append([]string{"bench"}, c.args...)...)
		msg := strings.TrimSpace(errOut)
		if i := strings.LastIndex(msg, "\n"); i >= 0 && strings.HasPrefix(msg, "•") {
			msg = msg[i+1:] // the load step's log lines come first
		}
		if code != c.code || out != "" || strings.Count(msg, "\n") != 0 || !strings.Contains(msg, c.want) {
			t.Errorf("bench %v: exit %d (want %d), stdout %q, stderr %q (want one line with %q)", c.args, code, c.code, out, errOut, c.want)
		}
	}
}

// A model without a tokenizer (as the generated benchmark models are) is
// benchmarked on token ids; its perplexity cannot be measured, in one line.
func TestBenchWithoutTokenizer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	if err := testmodel.Write(dir, testmodel.Spec{ModelType: "bitnet"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err == nil {
		t.Fatal("the test model has a tokenizer")
	}
	m := benchJSON(t, dir, "--runs", "1", "--prompt-tokens", "8", "--gen-tokens", "4")
	checkRates(t, m)
	if m["prompt_tokens"] != 8.0 || m["gen_tokens"] != 4.0 || !(m["bytes_per_token"].(float64) > 0) {
		t.Errorf("report: %v", m)
	}
	text := filepath.Join(t.TempDir(), "t.txt")
	os.WriteFile(text, []byte("some text"), 0o644)
	code, out, errOut := runCLI(t, "bench", dir, "--perplexity", text)
	if msg := errOut[strings.LastIndex(strings.TrimSpace(errOut), "\n")+1:]; code != exitError || out != "" || !strings.Contains(msg, "no tokenizer") {
		t.Errorf("perplexity without a tokenizer: exit %d, stderr %q", code, errOut)
	}
}

// bench with two models measures them in turns: a report for each (the
// same fields as one model's), and ratios to the first taken within
// rounds: the first's are exactly 1, the other's within what its runs and
// the first's allow.
func TestBenchCompare(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bitnet")
	if err := testmodel.Write(dir, testmodel.Spec{ModelType: "bitnet"}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "bench", runFixture, dir, "--runs", "3", "--prompt-tokens", "8", "--gen-tokens", "6", "--threads", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var c struct {
		Reports []map[string]any `json:"reports"`
		Decode  []bench.Stat     `json:"decode_ratio"`
		Prefill []bench.Stat     `json:"prefill_ratio"`
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(c.Reports) != 2 || len(c.Decode) != 2 || len(c.Prefill) != 2 {
		t.Fatalf("comparison of two models: %s", out)
	}
	for _, r := range c.Reports {
		checkRates(t, r)
		if r["runs"] != 3.0 || r["prompt_tokens"] != 8.0 || r["gen_tokens"] != 6.0 || !(r["read_gb_s"].(float64) > 0) {
			t.Errorf("report: %v", r)
		}
	}
	if one := (bench.Stat{Median: 1, Min: 1, Max: 1}); c.Decode[0] != one || c.Prefill[0] != one {
		t.Errorf("the first model's ratios %+v, %+v, want 1", c.Decode[0], c.Prefill[0])
	}
	// Each round's ratio is one of the second model's runs over one of
	// the first's, so the ratios lie within the reports' extremes.
	st := func(r map[string]any, k string) bench.Stat {
		m := r[k].(map[string]any)
		return bench.Stat{Median: m["median"].(float64), Min: m["min"].(float64), Max: m["max"].(float64)}
	}
	for _, x := range []struct {
		s      bench.Stat
		r0, r1 bench.Stat
	}{
		{c.Decode[1], st(c.Reports[0], "decode_tok_s"), st(c.Reports[1], "decode_tok_s")},
		{c.Prefill[1], st(c.Reports[0], "prefill_tok_s"), st(c.Reports[1], "prefill_tok_s")},
	} {
		lo, hi := x.r1.Min/x.r0.Max, x.r1.Max/x.r0.Min
		if !(x.s.Min <= x.s.Median && x.s.Median <= x.s.Max) || x.s.Min < lo*(1-1e-9) || x.s.Max > hi*(1+1e-9) {
			t.Errorf("ratio %+v outside the runs' %v…%v", x.s, lo, hi)
		}
	}

	code, out, errOut = runCLI(t, "bench", runFixture, dir, "--runs", "1", "--prompt-tokens", "8", "--gen-tokens", "4")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range []string{"2 models in turns", "× first", "roofline", runFixture, dir} {
		if !strings.Contains(out, w) {
			t.Errorf("table without %q:\n%s", w, out)
		}
	}
}
