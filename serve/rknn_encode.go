package serve

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine"
)

// POST /v1/rknn/encode: a tensor in, a tensor out, on the rknn lane's
// sharded encoders (engine/rknnrt), over engine.Encoder, through the
// scheduler like every other route (queue, lane slot, load, keep-alive,
// counters). See docs/rknn.md "On the board".

// LaneRKNN is the rknn lane's name.
const LaneRKNN = "rknn"

// rknnEncodeRequest is the route's body. Input is a flat array of numbers
// (encoding_format "float", the default) or a base64 string of
// little-endian float32 ("base64"); the output comes back the same way.
type rknnEncodeRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	Shape          []int           `json:"shape,omitempty"` // default: the model's input shape
	EncodingFormat string          `json:"encoding_format,omitempty"`
	KeepAlive      *api.Duration   `json:"keep_alive,omitempty"`
}

// rknnEncodeResponse is the answer: the output tensor, each shard's core
// and time, and the telemetry block every route carries.
type rknnEncodeResponse struct {
	Object         string         `json:"object"` // "rknn.encoding"
	Model          string         `json:"model"`
	Shape          []int          `json:"shape"`
	EncodingFormat string         `json:"encoding_format"`
	Output         any            `json:"output"` // []float32 or a base64 string
	Shards         []rknnShardRun `json:"shards"`
	Metrics        *api.Metrics   `json:"metrics"`
}

// rknnShardRun is one shard's step of the chain.
type rknnShardRun struct {
	File string  `json:"file"`
	Core int     `json:"core"`
	MS   float64 `json:"ms"`
}

func (s *Server) handleRKNNEncode(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req rknnEncodeRequest
	if err := api.Decode(r.Body, &req); err != nil {
		s.openAIFail(w, r, "", http.StatusBadRequest, err)
		return
	}
	fail := func(code int, err error) { s.openAIFail(w, r, req.Model, code, err) }
	if req.Model == "" {
		fail(http.StatusBadRequest, errors.New("model is required"))
		return
	}
	base64Format := req.EncodingFormat == "base64"
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && !base64Format {
		fail(http.StatusBadRequest, &api.FieldError{Field: "encoding_format", Msg: fmt.Sprintf("encoding_format %q: want float or base64", req.EncodingFormat)})
		return
	}
	input, err := decodeTensor(req.Input, base64Format)
	if err != nil {
		fail(http.StatusBadRequest, err)
		return
	}
	e, ok := s.reg.Lookup(req.Model)
	if !ok {
		fail(http.StatusNotFound, modelNotFound(req.Model))
		return
	}
	if e.Lane != LaneRKNN { // refused before a load: a chat model is not started to say no
		fail(http.StatusBadRequest, fmt.Errorf("%w: %s runs on the %s lane, which does not encode tensors; /v1/rknn/encode serves rknn shard chains (edgectl rknn build directories)",
			engine.ErrInvalidRequest, e.Name, e.Lane))
		return
	}
	l, err := s.sched.Acquire(r.Context(), e, keepAlive(req.KeepAlive))
	if err != nil {
		fail(httpStatus(err), err)
		return
	}
	defer l.Release()
	enc, ok := l.Model.(engine.Encoder)
	if !ok {
		fail(http.StatusBadRequest, fmt.Errorf("%w: %s cannot encode on the %s lane", engine.ErrInvalidRequest, e.Name, l.Lane))
		return
	}
	res, err := s.runEncode(r.Context(), l, enc, engine.EncodeRequest{Input: input, Shape: req.Shape})
	if err != nil {
		fail(encodeStatus(err), err)
		return
	}
	s.metrics.prefillSeconds.WithLabelValues(e.Name).Add(res.Duration.Seconds())
	out := rknnEncodeResponse{Object: "rknn.encoding", Model: req.Model, Shape: res.Shape, EncodingFormat: "float", Output: res.Output,
		Shards: make([]rknnShardRun, len(res.Stages))}
	if base64Format {
		out.EncodingFormat, out.Output = "base64", base64Floats(res.Output)
	}
	var helperMS float64
	for i, st := range res.Stages {
		ms := float64(st.Duration) / float64(time.Millisecond)
		out.Shards[i] = rknnShardRun{File: st.Name, Core: st.Core, MS: ms}
		helperMS += ms
	}
	out.Metrics = s.telemetry(engine.Result{PrefillDuration: res.Duration,
		Extra: map[string]any{"shards": len(res.Stages), "npu_ms": helperMS, "encode_ms": float64(res.Duration) / float64(time.Millisecond)}}, l, time.Since(start))
	note(r, req.Model, http.StatusOK)
	writeJSON(w, http.StatusOK, out)
}

// runEncode is Encode under the watchdog (one request has Watchdog to
// finish: the lane kills a helper that outlives it), with a panic turned
// into an error and the model discarded.
func (s *Server) runEncode(ctx context.Context, l *Lease, enc engine.Encoder, req engine.EncodeRequest) (res engine.EncodeResult, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Watchdog)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = recovered(p, "encoding", s.opts.Logf)
			l.Discard("engine panic")
		}
	}()
	res, err = enc.Encode(ctx, req)
	if errors.Is(err, context.DeadlineExceeded) {
		s.opts.Logf("encoding on %s (lane %s) ran out of time: %v", l.r.entry.Name, l.Lane, err)
	}
	return res, err
}

// encodeStatus is an encode error's status: past its time a gateway
// timeout (the helper was killed and the next request starts a new one);
// the rest as for generation (400 for the request's fault, 500 for the
// helper's).
func encodeStatus(err error) int {
	if errors.Is(err, context.DeadlineExceeded) {
		return http.StatusGatewayTimeout
	}
	return embedStatus(err)
}

// decodeTensor reads input: a JSON array of numbers, or with b64 a
// base64 string of little-endian float32.
func decodeTensor(raw json.RawMessage, b64 bool) ([]float32, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, &api.FieldError{Field: "input", Msg: "input is required: an array of numbers (or, with encoding_format base64, a base64 string of little-endian float32)"}
	}
	if b64 {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, &api.FieldError{Field: "input", Msg: "input: with encoding_format base64, send a base64 string of little-endian float32"}
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, &api.FieldError{Field: "input", Msg: fmt.Sprintf("input: not standard base64: %v", err)}
		}
		if len(b)%4 != 0 {
			return nil, &api.FieldError{Field: "input", Msg: fmt.Sprintf("input: %d bytes, not a whole number of float32 values (4 bytes each)", len(b))}
		}
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return v, nil
	}
	var v []float32
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, &api.FieldError{Field: "input", Msg: fmt.Sprintf("input: want a flat array of numbers: %v", err)}
	}
	return v, nil
}
