package serve

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/axcl"
)

// byteTokenizerTxt is an axllm tokenizer file of type 1 whose 256 tokens
// are the single bytes: the smallest file the (fake) runtime loads.
func byteTokenizerTxt() string {
	var b strings.Builder
	b.WriteString("430 1\n0 0 0\n\n256\n")
	for i := range 256 {
		fmt.Fprintln(&b, base64.StdEncoding.EncodeToString([]byte{byte(i)}))
	}
	return b.String()
}

// npuChat serves one fake-runtime model "npu" and returns a function that
// sends a conversation through the OpenAI SDK, answering the reply and the
// usage.metrics.hardware block (where the lane reports what it did with
// the conversation).
func npuChat(t *testing.T, fake string) (func(msgs ...openai.ChatCompletionMessageParamUnion) (string, map[string]any), *logLines) {
	t.Helper()
	logs := &logLines{}
	root := t.TempDir()
	axDir(t, root, "npu", fake, 1)
	ts := start(t, Options{ModelDirs: []string{root}, Engines: map[string]engine.Engine{
		LaneAxcl: axcl.New(axcl.Options{Command: []string{fakeRuntime(t), "run", "{dir}"}, StopTimeout: time.Second, SMI: []string{}, Logf: logs.logf}),
	}})
	cl := ts.client()
	return func(msgs ...openai.ChatCompletionMessageParamUnion) (string, map[string]any) {
		t.Helper()
		resp, err := cl.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "npu", Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		var raw struct {
			Usage struct {
				Metrics struct {
					Hardware map[string]any `json:"hardware"`
				} `json:"metrics"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(resp.RawJSON()), &raw); err != nil {
			t.Fatal(err)
		}
		return resp.Choices[0].Message.Content, raw.Usage.Metrics.Hardware
	}, logs
}

type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *logLines) grep(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.lines {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

func user(s string) openai.ChatCompletionMessageParamUnion { return openai.UserMessage(s) }
func asst(s string) openai.ChatCompletionMessageParamUnion { return openai.AssistantMessage(s) }

// Turn 3 still sees turn 1: each request after the first sends only its new
// user message to the runtime, whose KV cache holds the rest.
func TestNPUConversationKeepsContext(t *testing.T) {
	send, _ := npuChat(t, `{}`)
	a1, hw := send(user("my name is Ada"))
	if a1 != "You said: my name is Ada (turn 1). ☕" || hw["conversation"] != "rebuilt" {
		t.Fatalf("turn 1: %q %v", a1, hw)
	}
	a2, hw := send(user("my name is Ada"), asst(a1), user("I like tea"))
	if a2 != "You said: I like tea (turn 2). ☕" || hw["conversation"] != "continued" {
		t.Fatalf("turn 2: %q %v", a2, hw)
	}
	a3, hw := send(user("my name is Ada"), asst(a1), user("I like tea"), asst(a2), user("HISTORY please"))
	if !strings.Contains(a3, "history=[my name is Ada | I like tea | HISTORY please] (turn 3,") || hw["conversation"] != "continued" {
		t.Fatalf("turn 3: %q %v", a3, hw)
	}
	if kv, _ := hw["kv_remaining"].(float64); kv <= 0 || kv >= 2559 {
		t.Errorf("kv_remaining %v: the cache holds three turns", hw["kv_remaining"])
	}

	// A new conversation resets the runtime.
	if a, hw := send(user("hello")); a != "You said: hello (turn 1). ☕" || hw["conversation"] != "rebuilt" || hw["replayed_turns"] != 0.0 {
		t.Errorf("new conversation: %q %v", a, hw)
	}

	// An edited history resets and replays the earlier user turns.
	a, hw := send(user("my name is Bob"), asst(a1), user("I like tea"), asst(a2), user("HISTORY now"))
	if !strings.Contains(a, "history=[my name is Bob | I like tea | HISTORY now] (turn 3,") || hw["conversation"] != "rebuilt" || hw["replayed_turns"] != 2.0 {
		t.Errorf("edited history: %q %v", a, hw)
	}
	// and the rebuilt conversation continues without another replay
	a4, hw := send(user("my name is Bob"), asst(a1), user("I like tea"), asst(a2), user("HISTORY now"), asst(a), user("more"))
	if a4 != "You said: more (turn 4). ☕" || hw["conversation"] != "continued" {
		t.Errorf("after the rebuild: %q %v", a4, hw)
	}
}

// A system prompt reaches the runtime through its config: the process is
// restarted on a per-model copy of the directory whose config.json carries it.
func TestNPUSystemPromptReachesRuntime(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the per-model config copy goes
	send, logs := npuChat(t, `{}`)
	sys := openai.SystemMessage("You are a pirate.")
	a, hw := send(sys, user("HISTORY"))
	if !strings.Contains(a, "system=[You are a pirate.] history=[HISTORY] (turn 1,") || hw["conversation"] != "rebuilt" {
		t.Fatalf("system prompt: %q %v", a, hw)
	}
	if !logs.grep("restarting the runtime") {
		t.Errorf("no restart logged: %q", logs.lines)
	}
	shadows, _ := filepath.Glob(filepath.Join(tmp, "edgectl-axcl-*", "config.json"))
	if len(shadows) != 1 {
		t.Fatalf("per-model configs %v", shadows)
	}
	if b, _ := os.ReadFile(shadows[0]); !strings.Contains(string(b), `"system_prompt": "You are a pirate."`) {
		t.Errorf("per-model config: %s", b)
	}
	// The same system prompt continues; none goes back to the model's own.
	if a2, hw := send(sys, user("HISTORY"), asst(a), user("HISTORY again")); !strings.Contains(a2, "system=[You are a pirate.] history=[HISTORY | HISTORY again] (turn 2,") || hw["conversation"] != "continued" {
		t.Errorf("continued: %q %v", a2, hw)
	}
	if a3, _ := send(user("HISTORY")); !strings.Contains(a3, "system=[] history=[HISTORY] (turn 1,") {
		t.Errorf("no system prompt: %q", a3)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "edgectl-axcl-*")); len(left) != 0 {
		t.Errorf("per-model config left behind: %v", left)
	}
}

// A history longer than the context is cut from the oldest turn, with a
// warning in the log and in usage.metrics.hardware.
func TestNPULongHistoryTruncated(t *testing.T) {
	send, logs := npuChat(t, `{"max_token_len": 200}`)
	var msgs []openai.ChatCompletionMessageParamUnion
	for i := 1; i <= 6; i++ {
		q := fmt.Sprintf("question %d about a rather long subject that needs words", i)
		msgs = append(msgs, user(q), asst("You said: "+q+fmt.Sprintf(" (turn %d). ☕", i)))
	}
	msgs = append(msgs, user("HISTORY"))
	a, hw := send(msgs...)
	n, _ := hw["context_truncated_turns"].(float64)
	if n < 1 || n >= 6 || !strings.Contains(fmt.Sprint(hw["warning"]), "too long") {
		t.Fatalf("no truncation reported: %v", hw)
	}
	if strings.Contains(a, "question 1 ") || !strings.Contains(a, "question 6 about") {
		t.Errorf("runtime holds %q after dropping %v turns", a, n)
	}
	if hw["replayed_turns"] != 6-n {
		t.Errorf("replayed %v of %v", hw["replayed_turns"], 6-n)
	}
	if !logs.grep("warning: conversation too long for the 200-token context") {
		t.Errorf("no warning logged: %q", logs.lines)
	}
}
