package engine

import (
	"context"
	"time"
)

// Encoder is implemented by models that map a tensor to a tensor rather
// than text to text: the rknn lane's sharded vision encoder (patch
// embeddings in, hidden states out; engine/rknnrt). serve's
// POST /v1/rknn/encode asks a loaded Model for it as /v1/embeddings asks
// for Embedder; a model without it cannot encode, and serve answers 400.
type Encoder interface {
	// Encode runs the model once on req.Input. A backend that runs one
	// request at a time serialises calls itself; cancelling ctx (or its
	// deadline passing) ends the call, and a backend that cannot stop a
	// running request then restarts (Pinger reports it dead meanwhile).
	Encode(ctx context.Context, req EncodeRequest) (EncodeResult, error)
}

// EncodeRequest is one input tensor: float32 values in row-major (C)
// order and the shape they fill. A nil Shape means the model's own input
// shape.
type EncodeRequest struct {
	Input []float32
	Shape []int
}

// EncodeResult is the output tensor and what it cost.
type EncodeResult struct {
	Output []float32
	Shape  []int
	// Duration is the wall time of the call; Stages the backend's own
	// timings of each step it ran, in the order it ran them.
	Duration time.Duration
	Stages   []EncodeStage
}

// EncodeStage is one step of an Encode: a shard of a chain, the core it
// ran on (-1: not pinned) and how long it took.
type EncodeStage struct {
	Name     string
	Core     int
	Duration time.Duration
}
