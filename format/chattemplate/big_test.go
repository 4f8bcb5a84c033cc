package chattemplate

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// The limits leave room for real work: a 1000-message, 4 MiB conversation
// renders with every real template under the default limits, and fast.
func TestLargeConversationFitsDefaultLimits(t *testing.T) {
	var msgs []Message
	body := strings.Repeat("All work and no play makes Jack a dull boy. ", 95) // ~4 KiB
	for i := 0; i < 1000; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, Message{Role: role, Content: body})
	}
	for _, path := range []string{"testdata/qwen3.jinja", "testdata/templates/meta-llama-Llama-3.1-8B-Instruct.jinja",
		"testdata/templates/mistralai-Mistral-Nemo-Instruct-2407.jinja", "testdata/templates/google-gemma-3-4b-it.jinja",
		"testdata/templates/openai-gpt-oss-120b.jinja", "testdata/templates/CohereForAI-c4ai-command-r-plus-default.jinja"} {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		tm, err := Parse(string(src))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		out, err := tm.Render(context.Background(), msgs, Vars{AddGenerationPrompt: true, Now: fixedNow})
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if len(out) < len(body)*1000 {
			t.Errorf("%s: %d bytes", path, len(out))
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: took %v", path, d)
		}
		t.Logf("%s: %d KiB in %v", path, len(out)>>10, time.Since(start))
	}
}
