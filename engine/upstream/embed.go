package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/edgectl/edgectl/engine"
)

// engine.Embedder: the batch goes to the upstream's own /v1/embeddings
// (FastFlowLM, llama-server --embeddings, Lemonade), floats asked for, and
// its vectors and usage come back as they are; serve normalises and cuts
// to `dimensions` on top, as for every lane. Truncation is the upstream's
// business (OpenAI's API has no field for it).

var _ engine.Embedder = (*Model)(nil)

// maxEmbedAnswer bounds the upstream's answer (2048 vectors of 4096
// floats as JSON text fit well within it).
const maxEmbedAnswer = 256 << 20

// embedAnswer is the part of an OpenAI embeddings answer read back.
type embedAnswer struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// Embed implements engine.Embedder.
func (m *Model) Embed(ctx context.Context, req engine.EmbedRequest) (engine.EmbedResult, error) {
	start := time.Now()
	var res engine.EmbedResult
	if err := m.Alive(); err != nil {
		return res, err
	}
	input := make([]any, len(req.Inputs))
	for i, in := range req.Inputs {
		if in.Tokens != nil {
			input[i] = in.Tokens
		} else {
			input[i] = in.Text
		}
	}
	model := m.cfg.Model
	if model == "" {
		model = m.cfg.Name
	}
	body, err := json.Marshal(map[string]any{"model": model, "input": input, "encoding_format": "float"})
	if err != nil {
		return res, err
	}
	resp, err := m.post(ctx, "/v1/embeddings", body, "application/json")
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxEmbedAnswer+1))
	if err != nil {
		return res, fmt.Errorf("upstream %q: reading its /v1/embeddings answer: %w", m.cfg.Name, err)
	}
	if len(b) > maxEmbedAnswer {
		return res, fmt.Errorf("upstream %q: its /v1/embeddings answer is over %d MiB; send fewer inputs", m.cfg.Name, maxEmbedAnswer>>20)
	}
	if resp.StatusCode != http.StatusOK {
		return res, &Error{Status: resp.StatusCode, Message: errorText(b, resp.Status)}
	}
	var a embedAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		return res, fmt.Errorf("upstream %q: its /v1/embeddings answer is not an OpenAI embedding list: %v", m.cfg.Name, err)
	}
	if len(a.Error) > 0 && string(a.Error) != "null" { // an error sent with 200
		return res, &Error{Status: statusOf(a.Error), Message: errorText(b, resp.Status)}
	}
	res.Embeddings = make([][]float32, len(req.Inputs))
	for _, d := range a.Data {
		if d.Index < 0 || d.Index >= len(req.Inputs) || res.Embeddings[d.Index] != nil {
			return res, fmt.Errorf("upstream %q: its /v1/embeddings answer has index %d twice or out of range for %d inputs", m.cfg.Name, d.Index, len(req.Inputs))
		}
		res.Embeddings[d.Index] = d.Embedding
	}
	for i, v := range res.Embeddings {
		if v == nil {
			return res, fmt.Errorf("upstream %q: its /v1/embeddings answer has no vector for input %d", m.cfg.Name, i)
		}
	}
	res.PromptTokens = a.Usage.PromptTokens
	res.Duration = time.Since(start)
	if req.Progress != nil {
		req.Progress(len(req.Inputs))
	}
	return res, nil
}

// post sends a JSON body to the upstream's path; a server it cannot reach
// marks the model broken (Alive then fails and serve reloads it).
func (m *Model) post(ctx context.Context, path string, body []byte, accept string) (*http.Response, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, m.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", accept)
	m.auth(hreq)
	resp, err := m.client.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		err = fmt.Errorf("upstream %q unreachable: %w", m.cfg.Name, err)
		m.broken.Keep(err)
		return nil, err
	}
	return resp, nil
}
