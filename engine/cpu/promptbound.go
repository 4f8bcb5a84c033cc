package cpu

import (
	"fmt"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/tokenizer"
)

// Check before work: a prompt whose byte length already passes what the
// context could hold is refused before it is tokenized. A text of B bytes
// has at least ceil(B / M) tokens, M being the most bytes one token of the
// model's tokenizer can stand for (tokenizer.MinTokens states the rule and
// its exceptions); tokenizing a 7 MB single word to learn that it is too
// long once took ~700 MB and 3 s.

// checkPromptBytes refuses text when its fewest possible tokens already
// fill the context window ctxLen (or the request's limit, when smaller).
func checkPromptBytes(tok *tokenizer.Tokenizer, text string, ctxLen, limit int) error {
	window := ctxLen
	if limit > 0 && limit < window {
		window = limit
	}
	if len(text) < window {
		return nil // a token is at least one byte: it fits, or tokenizing it is cheap
	}
	least := tok.MinTokens(text)
	if least < window {
		return nil
	}
	return fmt.Errorf("%w: the prompt is %d bytes, so at least %d tokens, and the context window is %d tokens; shorten it",
		engine.ErrContextFull, len(text), least, window)
}
