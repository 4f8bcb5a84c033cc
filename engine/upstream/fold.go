package upstream

import (
	"fmt"
	"strings"

	"github.com/edgectl/edgectl/api"
)

// main_api_* (single_message) reads one {role, content} object and keeps
// no history between requests, so the conversation is folded into that one
// message: the system prompt first, then each turn as "role: text", the new
// user message last. This is the NPU lane's rule (docs/serve.md
// "Conversations on the NPU lane") where it applies: there is no cache to
// continue, so every request is a rebuild, and with context_length set the
// oldest turns that do not fit are dropped with a warning.

// foldOverhead is the template tokens one folded message adds (its role
// prefix, the runtime's headers).
const foldOverhead = 8

// estimateTokens is about three bytes a token: over-counts English for
// common BPE vocabularies, so truncation errs on the safe side (the axcl
// lane's estimate without a tokenizer).
func estimateTokens(s string) int { return (len(s) + 2) / 3 }

// fold turns msgs into the one message text and says how many of the
// oldest turns (a user message and the replies after it) it dropped to fit
// ctxLen tokens with room for maxTokens of answer (0: no limit known).
func fold(msgs []api.ChatMessage, ctxLen, maxTokens int) (string, int) {
	var system, rest []api.ChatMessage
	for _, m := range msgs {
		if m.Role == "system" || m.Role == "developer" {
			system = append(system, m)
		} else {
			rest = append(rest, m)
		}
	}
	dropped := 0
	if ctxLen > 0 {
		reserve := maxTokens
		if reserve <= 0 || reserve > ctxLen/2 {
			reserve = ctxLen / 4
		}
		need := reserve
		for _, m := range msgs {
			need += estimateTokens(string(m.Content)) + foldOverhead
		}
		// Never the last message: it is the question.
		for need > ctxLen && len(rest) > 1 {
			// One turn: the user message and the replies up to the next one.
			n := 1
			for n < len(rest)-1 && rest[n].Role != "user" {
				n++
			}
			for _, m := range rest[:n] {
				need -= estimateTokens(string(m.Content)) + foldOverhead
			}
			rest = rest[n:]
			dropped++
		}
	}
	all := append(system, rest...)
	var sb strings.Builder
	for _, m := range all {
		if sb.Len() > 0 {
			sb.WriteString("\n")
		}
		if len(all) > 1 {
			sb.WriteString(m.Role + ": ")
		}
		sb.WriteString(string(m.Content))
	}
	return sb.String(), dropped
}

// foldWarning is the warning a truncated fold reports.
func foldWarning(ctxLen, dropped int) string {
	return fmt.Sprintf("conversation too long for the %d-token context: dropped the %d oldest turn(s)", ctxLen, dropped)
}
