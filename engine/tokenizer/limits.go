package tokenizer

import (
	"fmt"

	"github.com/edgectl/edgectl/format/tokjson"
)

// maxVocab bounds the ids a tokenizer may number (Gemma 3's 262208 is the
// largest published vocabulary): the id → piece tables are sized by the
// largest id, so an id of 10^9 in a hostile tokenizer.json would allocate
// gigabytes.
const maxVocab = tokjson.MaxVocab

// checkIDs validates tokenizer.json's ids before any table is sized by
// them: none negative, none beyond what the file's entries can number
// (twice their count leaves room for the holes real files have).
func checkIDs(f *tokjson.File) error {
	if len(f.Model.Vocab) == 0 {
		return fmt.Errorf("model.vocab is empty: this tokenizer cannot encode anything (re-download the model's tokenizer.json)")
	}
	entries := len(f.Model.Vocab) + len(f.AddedTokens)
	limit := min(2*entries+1024, maxVocab)
	bad := func(where string, id int, tok string) error {
		return fmt.Errorf("%s id %d (%q) is outside 0..%d, more than its %d entries can number; the tokenizer is corrupt or hostile (re-download the model's tokenizer.json)",
			where, id, clip(tok), limit-1, entries)
	}
	for tok, id := range f.Model.Vocab {
		if id < 0 || id >= limit {
			return bad("model.vocab", id, tok)
		}
	}
	for _, a := range f.AddedTokens {
		if a.ID < 0 || a.ID >= limit {
			return bad("added_tokens", a.ID, a.Content)
		}
	}
	return nil
}

// clip shortens a token for an error message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}
