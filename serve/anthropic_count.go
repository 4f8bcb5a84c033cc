package serve

import (
	"net/http"
	"time"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
)

// handleCountTokens is POST /v1/messages/count_tokens: the prompt's
// tokens as the model's template and tokenizer make them, max_tokens not
// required. A lane that counts apart from generating (the cpu lane,
// engine.PromptCounter) renders and tokenizes the prompt and runs
// nothing; on the others the count is a generation's prompt count, cut
// at one token (the cost of a prefill).
func (s *Server) handleCountTokens(w http.ResponseWriter, r *http.Request) {
	req, ok := s.decodeMessages(w, r)
	if !ok {
		return
	}
	one := 1
	req.MaxTokens, req.StopSequences = &one, nil
	ereq, err := messagesRequest(req)
	if err != nil {
		s.anthropicFail(w, r, req.Model, http.StatusBadRequest, err)
		return
	}
	ask, _ := anthropicThink(req.Thinking) // checked in messagesRequest: the prompt as the answer's would be
	n, err := s.countTokens(r, req.Model, keepAlive(req.KeepAlive), ereq, ask)
	if err != nil {
		code, err := turnStatus(err)
		s.anthropicFail(w, r, req.Model, code, renameField(err, "response_format", "output_config.format"))
		return
	}
	note(r, req.Model, http.StatusOK)
	writeJSON(w, http.StatusOK, api.AnthropicCountTokens{InputTokens: n})
}

// countTokens is ereq's prompt count on model's lane: counted where the
// lane can, else generated for (one token, recorded as any generation).
func (s *Server) countTokens(r *http.Request, model string, ka *time.Duration, ereq engine.Request, ask thinkAsk) (int, error) {
	e, l, _, ereq, err := s.leaseChat(r, model, ka, ereq, ask)
	if err != nil {
		return 0, err
	}
	defer l.Release()
	if n, err := countPrompt(r.Context(), l, ereq); n > 0 || err != nil {
		return n, err
	}
	res, err := s.run(r.Context(), l, ereq, func(engine.Token) error { return nil })
	if err != nil {
		return 0, err
	}
	s.record(e, res)
	return res.PromptTokens, nil
}
