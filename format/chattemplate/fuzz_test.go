package chattemplate

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/edgectl/edgectl/format/chattemplate/jinja"
)

// FuzzParseRender feeds arbitrary templates (seeded in
// testdata/fuzz/FuzzParseRender with the hostile corpus and real templates)
// through Parse and Render: no input may panic (a recovered panic surfaces
// as jinja.ErrInternal) or run past its deadline.
//
//	go test -run=^$ -fuzz=FuzzParseRender -fuzztime=10s ./format/chattemplate/
func FuzzParseRender(f *testing.F) {
	f.Add(`{% for m in messages %}{{ m.role }}: {{ m.content }}{% endfor %}`)
	msgs, err := jinja.FromJSON([]byte(`[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
		{"role": "assistant", "content": "", "tool_calls": [{"id": "call12345", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]},
		{"role": "tool", "tool_call_id": "call12345", "content": "42"}]`))
	if err != nil {
		f.Fatal(err)
	}
	tools := json.RawMessage(`[{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}]`)
	// Smaller limits keep each run short; the checks are the same.
	lim := Limits{Timeout: time.Second, MaxSteps: 200_000, MaxOutputBytes: 1 << 20, MaxStringBytes: 1 << 20,
		MaxListLen: 1 << 14, MaxAllocBytes: 8 << 20}
	f.Fuzz(func(t *testing.T, src string) {
		tm, err := ParseLimits(src, lim)
		if err != nil {
			if errors.Is(err, jinja.ErrInternal) {
				t.Fatalf("parse: %v", err)
			}
			return
		}
		start := time.Now()
		_, err = tm.render(context.Background(), msgs, Vars{BOSToken: "<s>", EOSToken: "</s>", AddGenerationPrompt: true,
			Extra: map[string]any{"tools": tools}})
		if errors.Is(err, jinja.ErrInternal) {
			t.Fatalf("render: %v", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("render took %v", d)
		}
	})
}
