package axcl

import (
	"fmt"
	"strings"

	"github.com/edgectl/edgectl/engine"
)

// The vendor runtime holds one conversation in its KV cache and extends it
// with every prompt line until /reset; clients send the whole history with
// every request. The rule that maps one onto the other (docs/serve.md
// "Conversations on the NPU lane"):
//
//   - the Model remembers the conversation its process holds: the system
//     prompt it was started with and each exchange (the user line sent, the
//     answer as the client received it);
//   - a request that repeats that conversation exactly and adds one user
//     message sends only that message;
//   - anything else resets the runtime (/reset, or a restart when the system
//     prompt changes or the runtime has no reset command) and replays the
//     earlier user messages, discarding the runtime's new answers; turns
//     that do not fit the context are dropped, oldest first, with a warning.

// exchange is one user line and the answer that followed it.
type exchange struct{ user, answer string }

// conversation is a system prompt and the exchanges after it.
type conversation struct {
	system string
	turns  []exchange
}

// chat is a request seen as a conversation plus the new user line.
type chat struct {
	conversation
	last  string
	fresh bool // a raw prompt: never continues a conversation
}

// foldLine makes text one line the runtime reads with getline: whitespace
// runs (newlines included) become one space, and a leading "/" is escaped
// so it is not taken for a command (/q, /reset, …).
func foldLine(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if strings.HasPrefix(text, "/") {
		text = " " + text
	}
	return text
}

// sameText compares answers as the runtime printed them and as a client
// sends them back: clients trim and reflow whitespace.
func sameText(a, b string) bool {
	return strings.Join(strings.Fields(a), " ") == strings.Join(strings.Fields(b), " ")
}

// parseChat splits req into system prompt, earlier exchanges and the new
// user line. defaultSystem is what the runtime uses when the request has
// no system message (its config's system_prompt).
func parseChat(req engine.Request, defaultSystem string) (chat, error) {
	c := chat{conversation: conversation{system: defaultSystem}}
	if len(req.Messages) == 0 {
		c.last, c.fresh = foldLine(req.Prompt), true
		if c.last == "" {
			return c, ErrEmptyPrompt
		}
		return c, nil
	}
	var system []string
	// Consecutive messages of one side are joined: the runtime alternates.
	type msg struct {
		user bool
		text string
	}
	var seq []msg
	for _, m := range req.Messages {
		switch m.Role {
		case "system", "developer":
			system = append(system, m.Content)
			continue
		}
		user := m.Role != "assistant"
		if n := len(seq); n > 0 && seq[n-1].user == user {
			seq[n-1].text += "\n" + m.Content
			continue
		}
		seq = append(seq, msg{user, m.Content})
	}
	if len(system) > 0 {
		c.system = strings.Join(system, "\n\n")
	}
	// The runtime cannot hold an answer before any question.
	for len(seq) > 0 && !seq[0].user {
		seq = seq[1:]
	}
	if len(seq) == 0 || !seq[len(seq)-1].user {
		if len(seq) == 0 {
			return c, ErrEmptyPrompt
		}
		return c, fmt.Errorf("%w: the vendor runtime answers a user message; the conversation ends with an assistant message (continuing an answer is not supported on the NPU lane)", engine.ErrInvalidRequest)
	}
	for i := 0; i+1 < len(seq); i += 2 {
		c.turns = append(c.turns, exchange{user: foldLine(seq[i].text), answer: seq[i+1].text})
	}
	c.last = foldLine(seq[len(seq)-1].text)
	if c.last == "" {
		return c, ErrEmptyPrompt
	}
	return c, nil
}

// continues reports whether c is held extended by exactly one user turn.
func (c chat) continues(held *conversation) bool {
	if held == nil || c.fresh || held.system != c.system || len(held.turns) != len(c.turns) {
		return false
	}
	for i, t := range c.turns {
		if t.user != held.turns[i].user || !sameText(t.answer, held.turns[i].answer) {
			return false
		}
	}
	return true
}

// fit drops the oldest exchanges until the estimated prompt and a reserve
// for the answer fit in maxTokens; it returns how many it dropped.
// count estimates a text's tokens.
func (c *chat) fit(maxTokens, reserve int, count func(string) int) int {
	if maxTokens <= 0 {
		return 0
	}
	// per-turn template tokens (role headers, end-of-turn markers)
	const overhead = 8
	need := count(c.system) + overhead + count(c.last) + overhead + reserve
	for _, t := range c.turns {
		need += count(t.user) + count(t.answer) + 2*overhead
	}
	dropped := 0
	for need > maxTokens && dropped < len(c.turns) {
		t := c.turns[dropped]
		need -= count(t.user) + count(t.answer) + 2*overhead
		dropped++
	}
	c.turns = c.turns[dropped:]
	return dropped
}

// estimateTokens is the count used without the model's tokenizer: about
// three bytes a token, which over-counts English for common BPE
// vocabularies (≈4 bytes a token), so truncation errs on the safe side.
func estimateTokens(s string) int { return (len(s) + 2) / 3 }
