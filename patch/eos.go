package patch

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/edgectl/edgectl/format/chattemplate"
	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/tokjson"
)

// EOS rules, as patch config reports them (Change.Rule).
const (
	RuleFlag      = "--eos"         // the user chose the id
	RuleTemplate  = "chat-template" // the token the chat template closes assistant turns with
	RuleTokenizer = "tokenizer-eos" // tokenizer_config.json's eos_token
	RuleLast      = "last-entry"    // the eos_token_id array's last entry
)

// EndOfTurn is the token a chat template emits right after an assistant's
// reply: the one a runtime must stop on.
type EndOfTurn struct {
	Token string `json:"token"`
	ID    int    `json:"id"`
}

// ErrNoTemplate means the model has no chat template (a base model).
var ErrNoTemplate = errors.New("no chat template")

// Sentinel message contents: strings no template produces by itself, so
// the assistant's reply can be found in the rendered text.
const (
	sentinelSystem    = "edgectl-sentinel-system"
	sentinelUser      = "edgectl-sentinel-user-1"
	sentinelAssistant = "edgectl-sentinel-assistant-reply"
	sentinelUser2     = "edgectl-sentinel-user-2"
)

// FindEndOfTurn renders a two-turn conversation with the chat template of
// the checkpoint in dir (tokenizer_config.json or chat_template.jinja) and
// returns the special token of tokenizer.json that immediately follows the
// assistant's content, whitespace allowed in between. It returns
// ErrNoTemplate for a model without a chat template. The template runs in
// the sandboxed format/chattemplate renderer with its default limits.
func FindEndOfTurn(dir string) (*EndOfTurn, error) {
	tc, err := tokjson.LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(tc.ChatTemplate) == "" {
		return nil, ErrNoTemplate
	}
	tokPath := filepath.Join(dir, "tokenizer.json")
	tok, err := tokjson.Load(tokPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tokPath, err)
	}
	tpl, err := chattemplate.Parse(tc.ChatTemplate)
	if err != nil {
		return nil, err
	}
	// Some templates reject a system message (Gemma 2, Mistral): try with
	// one, then without. A fixed clock keeps dated templates reproducible.
	vars := chattemplate.Vars{BOSToken: tc.BOSToken, EOSToken: tc.EOSToken, Now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	convs := [][]chattemplate.Message{
		{{Role: "system", Content: sentinelSystem}, {Role: "user", Content: sentinelUser}, {Role: "assistant", Content: sentinelAssistant}, {Role: "user", Content: sentinelUser2}},
		{{Role: "user", Content: sentinelUser}, {Role: "assistant", Content: sentinelAssistant}, {Role: "user", Content: sentinelUser2}},
	}
	var lastErr error
	for _, msgs := range convs {
		out, err := tpl.Render(context.Background(), msgs, vars)
		if err != nil {
			lastErr = err
			continue
		}
		i := strings.Index(out, sentinelAssistant)
		if i < 0 {
			lastErr = errors.New("the rendered conversation does not contain the assistant's reply")
			continue
		}
		rest := strings.TrimLeft(out[i+len(sentinelAssistant):], " \t\r\n")
		if eot, ok := specialPrefix(tok, rest); ok {
			return eot, nil
		}
		return nil, fmt.Errorf("the chat template follows the assistant's reply with %q, which starts with no special token of %s", head(rest, 40), tokPath)
	}
	return nil, fmt.Errorf("chat template of %s did not render a conversation: %v", dir, lastErr)
}

// specialPrefix returns the longest special added token s starts with.
func specialPrefix(tok *tokjson.File, s string) (*EndOfTurn, bool) {
	var best *EndOfTurn
	for _, a := range tok.AddedTokens {
		if a.Special && a.Content != "" && strings.HasPrefix(s, a.Content) && (best == nil || len(a.Content) > len(best.Token)) {
			best = &EndOfTurn{Token: a.Content, ID: a.ID}
		}
	}
	return best, best != nil
}

func head(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// EOSIDs lists the model's eos ids: config.json's, then those only
// generation_config.json adds.
func EOSIDs(dir string, cfg *hfconfig.Config) []int {
	ids := slices.Clone([]int(cfg.EosTokenID))
	if gen, err := hfconfig.Load(filepath.Join(dir, "generation_config.json")); err == nil {
		for _, id := range gen.EosTokenID {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// eosChoice is the single eos id patch config writes, the rule that chose
// it and a sentence saying why.
type eosChoice struct {
	ID   int
	Rule string
	Why  string
}

// chooseEOS picks the single eos id: --eos; else the chat template's
// end-of-turn token when it is one of the eos ids; else the tokenizer's
// eos token when it is one of them; else the last entry. ok is false when
// the model lists no eos id at all.
func chooseEOS(dir string, cfg *hfconfig.Config, want *int) (c eosChoice, ok bool, err error) {
	ids := EOSIDs(dir, cfg)
	eot, eotErr := FindEndOfTurn(dir)
	if want != nil {
		if len(ids) > 0 && !slices.Contains(ids, *want) && (eotErr != nil || eot.ID != *want) {
			return c, false, fmt.Errorf("--eos %d is not one of the model's eos ids %v nor its chat template's end-of-turn token: pick one of them", *want, ids)
		}
		return eosChoice{*want, RuleFlag, fmt.Sprintf("chosen with --eos from %v", ids)}, true, nil
	}
	if len(ids) == 0 {
		return c, false, nil
	}
	// note says why the template rule did not apply.
	var note string
	switch {
	case eotErr == nil && slices.Contains(ids, eot.ID):
		return eosChoice{eot.ID, RuleTemplate, fmt.Sprintf("the chat template closes assistant turns with %q, id %d (of %v); the runtime must stop there", eot.Token, eot.ID, ids)}, true, nil
	case eotErr == nil:
		note = fmt.Sprintf("; the chat template's end-of-turn %q (id %d) is not among them", eot.Token, eot.ID)
	case errors.Is(eotErr, ErrNoTemplate):
		note = "; no chat template"
	default:
		note = "; chat template not used: " + eotErr.Error()
	}
	if tc, err := tokjson.LoadConfig(dir); err == nil && tc.EOSToken != "" {
		if tok, err := tokjson.Load(filepath.Join(dir, "tokenizer.json")); err == nil {
			if id, ok := tok.ID(tc.EOSToken); ok && slices.Contains(ids, id) {
				return eosChoice{id, RuleTokenizer, fmt.Sprintf("the tokenizer's eos_token %q is id %d (of %v)%s", tc.EOSToken, id, ids, note)}, true, nil
			}
		}
	}
	last := ids[len(ids)-1]
	return eosChoice{last, RuleLast, fmt.Sprintf("last entry of %v (no tokenizer eos_token among them%s; override with --eos)", ids, note)}, true, nil
}
