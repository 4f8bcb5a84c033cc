package toolcall

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/edgectl/edgectl/format/chattemplate"
)

// Reasoning models write their thinking in the answer before the answer
// proper, in their family's form:
//
//	<think>
//	The user asks…
//	</think>
//
//	Paris.
//
// (Qwen3, QwQ, DeepSeek R1 and its distills, DeepSeek V3.1 in thinking
// mode), or harmony's analysis channel (gpt-oss, read by the harmony
// Parser, which makes Reasoning events of it). Templates of the first
// kind may open the block themselves at the end of the generation
// prompt (DeepSeek R1's distills, Qwen3's thinking-only models): the
// answer then starts inside it and only `</think>` is written. Servers
// the clients were written against (llama.cpp's reasoning_format auto,
// vLLM's reasoning parsers, Ollama's think) split the block off the
// answer; ThinkSplitter does that while the answer streams.

// Thinking is how a chat template's model writes its reasoning.
type Thinking uint8

const (
	NoThinking   Thinking = iota // the template shows no reasoning this package knows
	ThinkTags                    // a <think>…</think> block at the answer's start
	ThinkHarmony                 // harmony's analysis channel (gpt-oss)
)

const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

func (t Thinking) String() string {
	return [...]string{"none", "think-tags", "harmony"}[t]
}

// DetectThinking is how the model of template writes its reasoning, by
// the markers in its source: "</think>" (the template writes past turns'
// thinking, or closes the block in its generation prompt), or harmony's
// channels with an analysis channel.
func DetectThinking(template string) Thinking {
	switch {
	case strings.Contains(template, hChannel) && strings.Contains(template, "analysis"):
		return ThinkHarmony
	case strings.Contains(template, thinkClose):
		return ThinkTags
	}
	return NoThinking
}

// ThinkVars are the template variables that turn thinking on or off:
// enable_thinking (Qwen3's templates, and the name chat_template_kwargs
// clients send), and thinking for the templates that read that name
// instead (DeepSeek V3.1, where thinking is off unless asked).
func ThinkVars(template string, on bool) map[string]any {
	v := map[string]any{"enable_thinking": on}
	if strings.Contains(template, "thinking is defined") || strings.Contains(template, "if not thinking") {
		v["thinking"] = on
	}
	return v
}

// opensCache remembers OpensThinking's answers: templates are few (one
// per loaded model) and the variables that matter fewer.
var opensCache sync.Map // string (vars key + template) → bool

// OpensThinking reports whether template, rendered for a one-message
// conversation with the generation prompt and vars, leaves a <think>
// block open: the answer then starts inside it. A template that fails to
// render this way (one that wants a system turn, say) is taken not to.
func OpensThinking(template string, vars map[string]any) bool {
	if !strings.Contains(template, thinkOpen) {
		return false
	}
	key, cacheable := varsKey(vars)
	key += "\x00" + template
	if v, ok := opensCache.Load(key); ok {
		return v.(bool)
	}
	open := false
	if t, err := chattemplate.Parse(template); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		out, err := t.Render(ctx, []chattemplate.Message{{Role: "user", Content: "hi"}}, chattemplate.Vars{AddGenerationPrompt: true, Extra: vars})
		cancel()
		open = err == nil && strings.HasSuffix(strings.TrimRight(out, " \t\r\n"), thinkOpen)
	}
	if cacheable {
		opensCache.Store(key, open)
	}
	return open
}

// thinkKeys are the template variables known to change where the
// generation prompt leaves the answer.
var thinkKeys = []string{"enable_thinking", "thinking", "open_thinking", "reasoning_effort"}

// varsKey is vars as a cache key; not cacheable when vars holds others
// than thinkKeys (a client's chat_template_kwargs: rendered each time,
// so the cache stays as small as the set of loaded templates).
func varsKey(vars map[string]any) (string, bool) {
	var b strings.Builder
	n := 0
	for _, k := range thinkKeys {
		if v, ok := vars[k]; ok {
			n++
			b.WriteString(k)
			switch v := v.(type) {
			case bool:
				if v {
					b.WriteString("=1;")
				} else {
					b.WriteString("=0;")
				}
			case string:
				b.WriteString("=" + v + ";")
			default:
				return "", false
			}
		}
	}
	return b.String(), n == len(vars)
}
