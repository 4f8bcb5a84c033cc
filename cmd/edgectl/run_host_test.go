package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/serve"
)

// hostModels writes a model root for serve and local runs alike: the
// tinystories fixture, and "tinychat", the same weights with a chat
// template, so both of run's paths (plain prompt, chat) are compared.
func hostModels(t *testing.T) (root string) {
	t.Helper()
	root = t.TempDir()
	src, _ := filepath.Abs(runFixture)
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tinystories-656k", "tinychat"} {
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if name == "tinychat" && e.Name() == "tokenizer_config.json" {
				continue
			}
			if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(src, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tc map[string]any
	if err := json.Unmarshal(b, &tc); err != nil {
		t.Fatal(err)
	}
	tc["chat_template"] = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}"
	b, _ = json.Marshal(tc)
	if err := os.WriteFile(filepath.Join(root, "tinychat", "tokenizer_config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// hostServer runs serve in-process over root on the CPU lane.
func hostServer(t *testing.T, root, key string) string {
	t.Helper()
	return inProcessServe(t, serve.Options{ModelDirs: []string{root}, APIKey: key})
}

// inProcessServe runs serve in-process with opts, on the real CPU lane
// unless opts names engines, as edgectl serve does, and returns its URL;
// the server closes when the test ends.
func inProcessServe(t *testing.T, opts serve.Options) string {
	t.Helper()
	if opts.Engines == nil {
		opts.Engines = map[string]engine.Engine{serve.LaneCPU: cpu.New()}
	}
	s, err := serve.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		s.Close()
	})
	return hs.URL
}

func TestRunHostPrintsWhatLocalRunPrints(t *testing.T) {
	root := hostModels(t)
	url := hostServer(t, root, "")
	for _, c := range []struct {
		name, model, stdin string
		args               []string
	}{
		{"one prompt", "tinystories-656k", "", []string{"Once upon a time", "-n", "30", "--temperature", "0"}},
		{"stop and ctx", "tinystories-656k", "", []string{"Once upon a time", "-n", "40", "--temperature", "0", "--stop", ".", "--ctx", "128"}},
		{"sampled with a seed", "tinystories-656k", "", []string{"The dog", "-n", "20", "--seed", "7", "--temperature", "0.9", "--top-k", "20", "--top-p", "0.9", "--min-p", "0.1", "--repeat-penalty", "1.1"}},
		{"chat", "tinychat", "", []string{"Once upon a time", "-n", "20", "--temperature", "0", "--system", "Tell a story."}},
		{"chat turns", "tinychat", "Once upon a time\nThe dog\n/bye\n", []string{"-n", "12", "--temperature", "0", "--system", "Be brief."}},
		{"raw on a chat model", "tinychat", "", []string{"Once upon a time", "-n", "20", "--temperature", "0", "--raw"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, want, errOut := runCmd(t, c.stdin, append([]string{"run", filepath.Join(root, c.model)}, c.args...)...)
			if code != 0 || want == "" {
				t.Fatalf("local run: exit %d, %q, %s", code, want, errOut)
			}
			code, got, errOut := runCmd(t, c.stdin, append([]string{"run", "--host", url, c.model}, c.args...)...)
			if code != 0 || got != want {
				t.Fatalf("run --host: exit %d\n got %q\nwant %q\n%s", code, got, want, errOut)
			}
			turns := max(strings.Count(c.stdin, "\n")-1, 1)
			if n := strings.Count(errOut, "time to first token"); n != turns || !strings.Contains(errOut, "loaded "+c.model+" (") ||
				!strings.Contains(errOut, " on "+url) {
				t.Errorf("stderr (%d stats lines, want %d): %s", n, turns, errOut)
			}
		})
	}
}

// EDGECTL_HOST alone sends run to the server, and --json prints the same
// document with the server's counts and timings.
func TestRunHostJSONFromEnv(t *testing.T) {
	root := hostModels(t)
	url := hostServer(t, root, "")
	args := []string{"Once upon a time", "-n", "8", "--temperature", "0"}
	code, localOut, errOut := runCmd(t, "", append([]string{"--json", "run", filepath.Join(root, "tinystories-656k")}, args...)...)
	if code != 0 {
		t.Fatalf("local: exit %d %s", code, errOut)
	}
	t.Setenv("EDGECTL_HOST", url)
	code, hostOut, errOut := runCmd(t, "", append([]string{"--json", "run", "tinystories-656k"}, args...)...)
	if code != 0 {
		t.Fatalf("host: exit %d %s", code, errOut)
	}
	var local, host map[string]any
	if err := json.Unmarshal([]byte(localOut), &local); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(hostOut), &host); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, hostOut)
	}
	keys := func(m map[string]any) []string {
		var k []string
		for n := range m {
			k = append(k, n)
		}
		slices.Sort(k)
		return k
	}
	if !slices.Equal(keys(local), keys(host)) {
		t.Errorf("keys %v, local %v", keys(host), keys(local))
	}
	for _, k := range []string{"model", "text", "finish_reason", "prompt_tokens", "completion_tokens"} {
		if host[k] != local[k] {
			t.Errorf("%s = %v, local %v", k, host[k], local[k])
		}
	}
	for _, k := range []string{"ttft_ms", "prefill_tokens_per_second", "decode_tokens_per_second"} {
		if v, _ := host[k].(float64); v <= 0 {
			t.Errorf("%s = %v", k, host[k])
		}
	}
}

func TestRunHostRefusesWhatCannotTravel(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--threads", "2"}, "--threads cannot be used with --host"},
		{[]string{"--mmap"}, "--mmap cannot be used with --host"},
		{[]string{"--head", "q8"}, "--head cannot be used with --host"},
	} {
		code, _, errOut := runCmd(t, "", append([]string{"run", "--host", "127.0.0.1:1", "m", "hi"}, c.args...)...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %s", c.args, code, errOut)
		}
	}
	if code, _, errOut := runCmd(t, "", "run", "--host", "http://h/path", "m", "hi"); code != exitUsage || !strings.Contains(errOut, `--host "http://h/path"`) {
		t.Errorf("bad --host: exit %d, %s", code, errOut)
	}
	if code, _, errOut := runCmd(t, "", "run", runFixture, "hi", "--api-key", "k"); code != exitUsage || !strings.Contains(errOut, "--api-key goes with --host") {
		t.Errorf("--api-key alone: exit %d, %s", code, errOut)
	}
	t.Setenv("EDGECTL_HOST", "h:port")
	if code, _, errOut := runCmd(t, "", "run", "m", "hi"); code != exitUsage || !strings.Contains(errOut, "EDGECTL_HOST") {
		t.Errorf("bad EDGECTL_HOST: exit %d, %s", code, errOut)
	}
}

func TestRunHostServerErrors(t *testing.T) {
	root := hostModels(t)
	url := hostServer(t, root, "k")
	if code, _, errOut := runCmd(t, "", "run", "--host", url, "tinystories-656k", "hi"); code != exitError || !strings.Contains(errOut, "401") || !strings.Contains(errOut, "API key") {
		t.Errorf("no key: exit %d, %s", code, errOut)
	}
	if code, out, errOut := runCmd(t, "", "run", "--host", url, "--api-key", "k", "tinystories-656k", "Once upon a time", "-n", "4"); code != 0 || out == "" {
		t.Errorf("--api-key: exit %d, %q %s", code, out, errOut)
	}
	t.Setenv("EDGECTL_API_KEY", "k")
	if code, _, errOut := runCmd(t, "", "run", "--host", url, "nope", "hi"); code != exitError || !strings.Contains(errOut, `model "nope" not found`) {
		t.Errorf("unknown model: exit %d, %s", code, errOut)
	}
	// A prompt over --ctx fails on the server as it does locally.
	long := strings.Repeat("Once upon a time ", 200)
	if code, _, errOut := runCmd(t, "", "run", "--host", url, "tinystories-656k", long, "--ctx", "64"); code != exitError || !strings.Contains(errOut, "context window") {
		t.Errorf("context: exit %d, %s", code, errOut)
	}
	// EDGECTL_HOST set by accident: the error says how to run locally.
	t.Setenv("EDGECTL_HOST", url)
	if code, _, errOut := runCmd(t, "", "run", "./tinystories-656k", "hi"); code != exitError || !strings.Contains(errOut, "unset it to run MODEL on this machine") {
		t.Errorf("EDGECTL_HOST: exit %d, %s", code, errOut)
	}
}
