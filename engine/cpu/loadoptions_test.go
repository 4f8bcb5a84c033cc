package cpu

import (
	"context"
	"errors"
	"testing"

	"github.com/edgectl/edgectl/engine"
)

// Serving weights from the file mapping or from anonymous copies, and either
// LM head form, must not change what the model says.
func TestLoadOptionsKeepOutput(t *testing.T) {
	req := engine.Request{Prompt: "Once upon a time", MaxTokens: 24, Sampling: greedy()}
	var want string
	for i, opts := range []engine.LoadOptions{{}, {Mmap: true}, {Head: "float"}, {Head: "q8", Mmap: true}} {
		m, err := New().Load(context.Background(), tinyStories, opts)
		if err != nil {
			t.Fatal(err)
		}
		text, _ := generate(t, m, req)
		m.Close()
		if opts.Head == "q8" {
			// An int8 head may flip a near-tie; it must still be English.
			if len(text) < 40 {
				t.Errorf("%+v: %q", opts, text)
			}
			continue
		}
		if i == 0 {
			want = text
		} else if text != want {
			t.Errorf("%+v: %q, want %q", opts, text, want)
		}
	}
	if _, err := New().Load(context.Background(), tinyStories, engine.LoadOptions{Head: "int4"}); !errors.Is(err, engine.ErrInvalidRequest) {
		t.Fatalf("Head int4: %v", err)
	}
}
