package cpu

import (
	"context"

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
	if err := promptFits(len(ids), m.arch.ctx, req.ContextLimit); err != nil {
		return 0, err
	}
	return len(ids), nil
}
