package engine

import "context"

// PromptCounter is implemented by models that can count a request's
// prompt tokens without running the model: serve answers Anthropic's
// count_tokens with it, and puts the count in a Messages stream's
// message_start before the prefill. Backends whose prompt is built in
// another process (the vendor runtime, HTTP upstreams) cannot.
type PromptCounter interface {
	// CountPrompt is the number of tokens Generate would feed for req:
	// the chat template rendered (tools, template variables and all) and
	// tokenized, or Prompt tokenized; no forward pass. A prompt Generate
	// would refuse before its prefill (a template error, ErrInvalidRequest;
	// one that leaves no room in the context, ErrContextFull) fails the
	// same way.
	CountPrompt(ctx context.Context, req Request) (int, error)
}
