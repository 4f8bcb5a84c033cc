package cpu

import (
	"context"
	"fmt"

	"github.com/edgectl/edgectl/engine"
)

var _ engine.PromptCounter = (*model)(nil)

// CountPrompt implements engine.PromptCounter: the prompt as Generate
// builds it (session.prompt) in a session that never reserves its KV
// cache (that happens on the first forward pass), refused as Generate
// refuses it when it leaves no room in the context.
func (m *model) CountPrompt(ctx context.Context, req engine.Request) (int, error) {
	m.life.RLock()
	defer m.life.RUnlock()
	if m.closed {
		return 0, errModelClosed
	}
	s, err := m.NewSession()
	if err != nil {
		return 0, err
	}
	ids, err := s.(*session).prompt(ctx, req)
	if err != nil {
		return 0, err
	}
	window := m.arch.ctx
	if lim := req.ContextLimit; lim > 0 && lim < window {
		window = lim
	}
	if len(ids) >= window {
		return 0, fmt.Errorf("%w: the prompt is %d tokens and the context window is %d; shorten the conversation or load the model with a larger context length",
			engine.ErrContextFull, len(ids), window)
	}
	return len(ids), nil
}
