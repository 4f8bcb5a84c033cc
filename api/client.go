package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/edgectl/edgectl/internal/envconfig"
	"github.com/edgectl/edgectl/internal/version"
)

// maxLine bounds one NDJSON line (or a whole answer with stream:false): a
// server that never ends a line cannot make the client hold unbounded
// memory.
const maxLine = 16 << 20

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// Client talks to a running edgectl serve, or any server with Ollama's
// native API. Generation goes through Ollama's /api/chat and /api/generate
// NDJSON streams rather than OpenAI's SSE: every line is a whole JSON
// object, the last one carries the done reason, token counts, durations
// and edgectl's metrics block, and an error midway is one more line.
type Client struct {
	base   *url.URL
	apiKey string
	http   *http.Client
}

// NewClient returns a client for host, an address in the forms
// EDGECTL_HOST takes (HOST, HOST:PORT, :PORT, http(s)://HOST:PORT; see
// envconfig.ParseHost). An empty host reads EDGECTL_HOST, and without it
// the client talks to 127.0.0.1:11434. apiKey, when set, is sent as
// Authorization: Bearer on every request (serve --api-key).
func NewClient(host, apiKey string) (*Client, error) {
	var u *url.URL
	var err error
	if host != "" {
		u, err = envconfig.ParseHost(host)
	} else {
		u, err = envconfig.Host.URL()
	}
	if err != nil {
		return nil, err
	}
	if u == nil {
		u, _ = envconfig.ParseHost(envconfig.Host.Default)
	}
	// No overall timeout: a stream lasts as long as the generation; the
	// caller's context ends it.
	return &Client{base: u, apiKey: apiKey, http: &http.Client{}}, nil
}

// URL is the server's base URL (for messages).
func (c *Client) URL() string { return c.base.String() }

// ChatResponseFunc receives each line of a chat answer; an error it
// returns stops the stream and is returned by Chat.
type ChatResponseFunc func(ChatResponse) error

// GenerateResponseFunc receives each line of a generate answer.
type GenerateResponseFunc func(GenerateResponse) error

// Chat sends POST /api/chat and calls fn with every line of the answer
// (once with the whole answer when req.Stream is false); the last has Done
// set and carries the counts, durations and metrics. Cancelling ctx closes
// the stream, which stops the generation on the server.
func (c *Client) Chat(ctx context.Context, req *ChatRequest, fn ChatResponseFunc) error {
	return stream(ctx, c, "/api/chat", req, fn)
}

// Generate sends POST /api/generate, as Chat does.
func (c *Client) Generate(ctx context.Context, req *GenerateRequest, fn GenerateResponseFunc) error {
	return stream(ctx, c, "/api/generate", req, fn)
}

// List is GET /api/tags: the models the server can run.
func (c *Client) List(ctx context.Context) (*ListResponse, error) {
	var out ListResponse
	return &out, c.call(ctx, http.MethodGet, "/api/tags", nil, &out)
}

// PS is GET /api/ps: the models in memory.
func (c *Client) PS(ctx context.Context) (*ProcessResponse, error) {
	var out ProcessResponse
	return &out, c.call(ctx, http.MethodGet, "/api/ps", nil, &out)
}

// Show is POST /api/show: a model's details (its template and context
// length only once it is loaded, on edgectl).
func (c *Client) Show(ctx context.Context, req *ShowRequest) (*ShowResponse, error) {
	var out ShowResponse
	return &out, c.call(ctx, http.MethodPost, "/api/show", req, &out)
}

// Version is GET /api/version.
func (c *Client) Version(ctx context.Context) (string, error) {
	var out VersionResponse
	return out.Version, c.call(ctx, http.MethodGet, "/api/version", nil, &out)
}

// Health is GET /health (edgectl only; it needs no API key).
func (c *Client) Health(ctx context.Context) (*Health, error) {
	var out Health
	return &out, c.call(ctx, http.MethodGet, "/health", nil, &out)
}

// call sends one request and decodes its JSON answer into out.
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	resp, err := c.do(ctx, method, path, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxLine)).Decode(out); err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, c.base.JoinPath(path), err)
	}
	return nil
}

// stream sends in to path and hands each NDJSON line to fn as a T. A line
// holding an error ends the stream with a *StatusError.
func stream[T any](ctx context.Context, c *Client, path string, in any, fn func(T) error) error {
	resp, err := c.do(ctx, http.MethodPost, path, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close() // also what stops the stream when fn fails
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		if err := ctx.Err(); err != nil {
			return err // lines already buffered are not handed on
		}
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if bytes.Contains(line, []byte(`"error"`)) {
			var e struct {
				Error json.RawMessage `json:"error"`
			}
			if json.Unmarshal(line, &e) == nil {
				if msg, ok := ErrorMessage(e.Error); ok {
					return &StatusError{Message: msg}
				}
			}
		}
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			return fmt.Errorf("POST %s: line is not a JSON answer (%v): %.200q", c.base.JoinPath(path), err, line)
		}
		if err := fn(v); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("POST %s: a line of the answer is longer than %d MiB", c.base.JoinPath(path), maxLine>>20)
		}
		return fmt.Errorf("POST %s: reading the answer: %w", c.base.JoinPath(path), err)
	}
	return nil
}

// do sends a request with in as its JSON body (nil: none) and returns the
// answer, or a *StatusError for a status of 400 or more.
func (c *Client) do(ctx context.Context, method, path string, in any) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.JoinPath(path).String(), body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/x-ndjson, application/json")
	req.Header.Set("User-Agent", "edgectl/"+version.String())
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s %s: %w (is edgectl serve, or another Ollama-compatible server, running at that address?)", method, req.URL, err)
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return nil, statusError(resp.StatusCode, b)
	}
	return resp, nil
}
