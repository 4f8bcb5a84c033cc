package serve

import (
	"encoding/json"
	"fmt"

	"github.com/edgectl/edgectl/api"
)

// Anthropic's Messages API gives a model's thinking as thinking blocks
// before the answer's, only when the request's thinking enables it:
// {"type":"enabled","budget_tokens":N} or {"type":"adaptive"}. A thinking
// block's signature lets Anthropic check blocks sent back; edgectl checks
// nothing and signs "edgectl". Disabled, the template is told so
// (enable_thinking false); absent, thinking the model writes anyway is
// dropped.

// thinkingSignature is the signature of edgectl's thinking blocks.
const thinkingSignature = "edgectl"

// anthropicThink reads the request's thinking.
func anthropicThink(raw json.RawMessage) (thinkAsk, error) {
	a := thinkAsk{split: true, field: "thinking"}
	if absent(raw) {
		return a, nil
	}
	var t struct {
		Type         string `json:"type"`
		BudgetTokens *int   `json:"budget_tokens"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return a, &api.FieldError{Field: "thinking", Msg: fmt.Sprintf(`thinking: want {"type":"enabled","budget_tokens":N}, {"type":"adaptive"} or {"type":"disabled"}, not %s`, short(raw))}
	}
	on := t.Type != "disabled"
	switch t.Type {
	case "enabled":
		if t.BudgetTokens == nil || *t.BudgetTokens < 1 {
			return a, &api.FieldError{Field: "thinking.budget_tokens", Msg: "thinking.budget_tokens: Field required (an integer ≥ 1) when thinking is enabled"}
		}
	case "adaptive", "disabled":
	default:
		return a, &api.FieldError{Field: "thinking.type", Msg: fmt.Sprintf(`thinking.type %q: want "enabled", "adaptive" or "disabled"`, t.Type)}
	}
	a.on, a.show = &on, on
	return a, nil
}

// anthropicThinkErr is what is wrong with the request's thinking (nil:
// nothing).
func anthropicThinkErr(raw json.RawMessage) error {
	_, err := anthropicThink(raw)
	return err
}

// thinking adds text to the open thinking block (opened when needed).
func (aw *anthropicWriter) thinking(s string) error {
	if s == "" {
		return nil
	}
	if aw.open < 0 || aw.msg.Content[aw.open].Type != "thinking" {
		if err := aw.start(api.AnthropicBlock{Type: "thinking"}); err != nil {
			return err
		}
	}
	aw.msg.Content[aw.open].Thinking += s
	return aw.event("content_block_delta", api.AnthropicBlockDelta{Type: "content_block_delta", Index: aw.open,
		Delta: api.AnthropicDelta{Type: "thinking_delta", Thinking: &s}})
}

// sign ends block i, when it is a thinking block, with its signature (a
// signature_delta before content_block_stop, as Anthropic streams it).
func (aw *anthropicWriter) sign(i int) error {
	b := &aw.msg.Content[i]
	if b.Type != "thinking" {
		return nil
	}
	b.Signature = thinkingSignature
	sig := thinkingSignature
	return aw.event("content_block_delta", api.AnthropicBlockDelta{Type: "content_block_delta", Index: i,
		Delta: api.AnthropicDelta{Type: "signature_delta", Signature: &sig}})
}
