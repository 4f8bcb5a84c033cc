package cpu

import (
	"fmt"

	"github.com/edgectl/edgectl/engine"
)

// The context a model's sessions reserve KV cache for. A model file may
// declare any max_position_embeddings (2^40 has been seen): the cache is
// address space reserved for the whole context at a session's first token,
// and filled as positions are used, so a declared size that memory cannot
// hold must not become the default.
const (
	// maxContext is the most positions the engine reserves for, whatever
	// the model declares or LoadOptions.ContextLength asks.
	maxContext = 1 << 20
	// kvMemoryDivisor: by default a full context's KV cache takes at most
	// 1/kvMemoryDivisor of the memory available once the weights are in.
	kvMemoryDivisor = 2
	// minDefaultContext is the least the memory bound leaves (or the
	// model's own limit when smaller): a context shorter than that is of no
	// use, and its cache is small against any model's weights.
	minDefaultContext = 512
)

// availableMemory is the memory the KV cache may use (bytes, 0 when
// unknown); a variable so tests can pin it.
var availableMemory = memAvailable

// kvBytesPerPosition is what one cached position costs: K and V rows of
// every layer and KV head, in float32.
func (a *arch) kvBytesPerPosition() int64 {
	return 2 * 4 * int64(a.layers) * int64(a.kvHeads) * int64(a.headDim)
}

// contextLength is the number of positions to reserve: requested (capped at
// the model's declared a.ctx) when set, else the model's own limit bounded
// by maxContext and by memory.
func contextLength(a *arch, requested int) (int, error) {
	declared := a.ctx
	switch {
	case requested < 0:
		return 0, fmt.Errorf("%w: context length %d is negative (0 means the model's own)", engine.ErrInvalidRequest, requested)
	case requested > maxContext:
		return 0, fmt.Errorf("%w: context length %d is beyond the CPU engine's limit of %d positions; ask for less (--ctx)",
			engine.ErrInvalidRequest, requested, maxContext)
	case requested > 0:
		return min(requested, declared), nil
	}
	n := min(declared, maxContext)
	if avail := availableMemory(); avail > 0 {
		fit := avail / kvMemoryDivisor / a.kvBytesPerPosition()
		n = int(min(int64(n), max(fit, int64(min(declared, minDefaultContext)))))
	}
	return n, nil
}
