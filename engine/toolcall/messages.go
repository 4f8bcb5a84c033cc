package toolcall

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"github.com/edgectl/edgectl/engine"
)

// PrepareMessages fits a conversation's tool calls to the format's
// template. Mistral's templates raise an error on any call id that is not
// 9 letters and digits (and clients send OpenAI's "call_…" ids, or none,
// as Ollama's do): each id becomes 9 such characters, derived from it, so
// a call and the tool turn that answers it keep matching; a tool turn
// without an id answers the oldest call not yet answered. Other formats'
// conversations are returned as they are. msgs is not modified.
func PrepareMessages(f Format, msgs []engine.Message) []engine.Message {
	if f != Mistral && f != MistralArgs {
		return msgs
	}
	out := slices.Clone(msgs)
	var open []string // ids of calls not answered yet
	for i, m := range out {
		if len(m.ToolCalls) > 0 {
			m.ToolCalls = slices.Clone(m.ToolCalls)
			for j := range m.ToolCalls {
				id := m.ToolCalls[j].ID
				if id == "" {
					id = positionalID(i, j)
				}
				m.ToolCalls[j].ID = mistralID(id)
				open = append(open, m.ToolCalls[j].ID)
			}
			out[i] = m
			continue
		}
		if m.Role != "tool" {
			continue
		}
		switch {
		case m.ToolCallID != "":
			m.ToolCallID = mistralID(m.ToolCallID)
		case len(open) > 0:
			m.ToolCallID = open[0]
		default:
			m.ToolCallID = mistralID(positionalID(i, 0))
		}
		if k := slices.Index(open, m.ToolCallID); k >= 0 {
			open = slices.Delete(open, k, k+1)
		}
		out[i] = m
	}
	return out
}

func positionalID(msg, call int) string {
	return string(rune('a'+msg%26)) + string(rune('a'+call%26)) + hex.EncodeToString([]byte{byte(msg >> 8), byte(msg), byte(call)})
}

// mistralID is id when it is 9 letters and digits, else 9 hex digits of
// its SHA-256.
func mistralID(id string) string {
	ok := len(id) == 9
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	if ok {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])[:9]
}
