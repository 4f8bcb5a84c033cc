// Package hub is edgectl's Hugging Face Hub client and cache. It speaks the
// protocol huggingface_hub speaks and reads and writes the same cache layout
// (models--ORG--NAME/{blobs,snapshots,refs}), so a cache filled by either
// tool serves the other. Downloads resume from `.incomplete` blobs, are
// checked against the Hub's sha256 before they enter the cache, and retry
// connection losses, 5xx and 429 with backoff.
package hub

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/edgectl/edgectl/internal/clip"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/version"
)

// Client talks to one Hub endpoint and owns one cache directory.
type Client struct {
	cfg      Config
	endpoint *url.URL

	// HTTP carries every request. Its redirect policy is ignored: the
	// client follows redirects itself so that it can read the Hub's headers
	// on the redirect and keep the token away from other hosts.
	HTTP *http.Client

	// Retry decides how often and how long to wait after a transient failure.
	Retry RetryPolicy

	// StallTimeout is how long a response may send nothing before the
	// connection is dropped and the request retried (default 30s). A link
	// that hangs without closing would otherwise block a pull forever.
	StallTimeout time.Duration

	// FreeSpace reports the bytes an unprivileged process may still write
	// under dir (ok=false: unknown, nothing is checked). Nil means statfs;
	// tests set it to play a nearly full disk.
	FreeSpace func(dir string) (free int64, ok bool)
}

func (c *Client) freeSpace(dir string) (int64, bool) {
	if c.FreeSpace != nil {
		return c.FreeSpace(dir)
	}
	return freeBytes(dir)
}

func (c *Client) stallTimeout() time.Duration {
	if c.StallTimeout > 0 {
		return c.StallTimeout
	}
	return 30 * time.Second
}

// RetryPolicy is exponential backoff with jitter; a server's Retry-After
// wins over the computed delay.
type RetryPolicy struct {
	Attempts      int           // total tries per request (default 6)
	Base          time.Duration // first delay (default 1s)
	Max           time.Duration // longest computed delay (default 30s)
	MaxRetryAfter time.Duration // cap on a server's Retry-After (default 5m)
	Deadline      time.Duration // total wait of one request's retries (default DefaultRetryDeadline; retry.go)
	// Sleep waits d or until ctx ends; tests replace it to run fast.
	Sleep func(ctx context.Context, d time.Duration) error
}

// NewClient returns a client for cfg.
func NewClient(cfg Config) (*Client, error) {
	if cfg.Endpoint == "" {
		cfg.Endpoint = DefaultEndpoint
	}
	cfg.Endpoint = strings.TrimRight(cfg.Endpoint, "/")
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("HF_ENDPOINT %q is not an http(s) URL: set it like https://huggingface.co", cfg.Endpoint)
	}
	if cfg.CacheDir == "" {
		return nil, fmt.Errorf("no Hub cache directory: set HF_HUB_CACHE or HF_HOME")
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 32
	t.ResponseHeaderTimeout = 60 * time.Second
	return &Client{
		cfg:      cfg,
		endpoint: u,
		HTTP:     &http.Client{Transport: t},
		Retry:    RetryPolicy{},
	}, nil
}

// Config returns the client's configuration.
func (c *Client) Config() Config { return c.cfg }

func (p RetryPolicy) attempts() int {
	if p.Attempts <= 0 {
		return DefaultRetries + 1
	}
	return p.Attempts
}

// delay is the wait before try n+1 (n ≥ 1).
func (p RetryPolicy) delay(n int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		limit := p.MaxRetryAfter
		if limit <= 0 {
			limit = 5 * time.Minute
		}
		return min(retryAfter, limit)
	}
	base, maxd := p.Base, p.Max
	if base <= 0 {
		base = time.Second
	}
	if maxd <= 0 {
		maxd = 30 * time.Second
	}
	d := base << min(n-1, 20)
	if d > maxd || d <= 0 {
		d = maxd
	}
	// ±25% jitter so parallel jobs do not retry in lockstep.
	return d - d/4 + time.Duration(rand.Int64N(int64(d/2)+1))
}

func (p RetryPolicy) sleep(ctx context.Context, d time.Duration) error {
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// transient marks a failure worth retrying.
type transient struct {
	err         error
	retryAfter  time.Duration
	unavailable bool // the server said busy (429/5xx), as opposed to a broken connection
	progress    bool // the failed try still moved bytes: start the count again
}

func (t *transient) Error() string { return t.err.Error() }
func (t *transient) Unwrap() error { return t.err }

// withRetry runs try until it succeeds, fails for good, or the attempts run
// out; onRetry hears about each wait.
func (c *Client) withRetry(ctx context.Context, what string, onRetry func(attempt int, d time.Duration, err error), try func() error) error {
	onRetry = retryHook(ctx, what, onRetry) // no silent waits
	failures := 0
	var waited time.Duration
	for {
		err := try()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var t *transient
		if !errors.As(err, &t) {
			return err
		}
		if t.progress {
			failures = 0
		}
		failures++
		if failures >= c.Retry.attempts() {
			if t.unavailable {
				return errkind.Errorf(errkind.Busy, "%s: the Hub is busy or failing (%w) after %d tries: retry later", what, t.err, failures)
			}
			return errkind.Errorf(errkind.Network, "%s: network failure after %d tries: %w (check the connection or HF_ENDPOINT)", what, failures, t.err)
		}
		d := c.Retry.delay(failures, t.retryAfter)
		if waited+d > c.Retry.deadline() {
			return errkind.Errorf(errkind.Network, "%s: still failing after %d tries and %v of waiting (%w); the next wait, %v, would pass the %v retry budget: check the connection or HF_ENDPOINT", what, failures, waited.Round(time.Second), t.err, d.Round(time.Second), c.Retry.deadline())
		}
		waited += d
		if onRetry != nil {
			onRetry(failures, d, t.err)
		}
		if err := c.Retry.sleep(ctx, d); err != nil {
			return err
		}
	}
}

// response is the final answer of a redirect chain, with the Hub's own headers.
type response struct {
	*http.Response
	hub http.Header // headers of the last response that came from the endpoint's host
}

// do sends method to rawURL and follows redirects: relative ones always,
// ones to another host only when followAbsolute is set (downloads; a
// metadata HEAD stops at the CDN's Location as huggingface_hub does). The
// token goes only to the endpoint's host. Network errors come back as
// *transient; HTTP statuses are left to the caller.
func (c *Client) do(ctx context.Context, method, rawURL string, hdr http.Header, followAbsolute bool) (*response, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	var hubHdr http.Header
	for range maxRedirects + 1 {
		req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
		if err != nil {
			return nil, err
		}
		for k, v := range hdr {
			req.Header[k] = v
		}
		req.Header.Set("User-Agent", "edgectl/"+version.Version+"; hf_hub-compatible")
		// identity: Content-Length and Range must count the stored bytes,
		// and Go must not decompress behind our back.
		req.Header.Set("Accept-Encoding", "identity")
		if c.sameHost(u) && c.cfg.Token != "" {
			req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
		}
		resp, err := c.roundTrip(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if cause := unreachable(err); cause != "" {
				return nil, errkind.Errorf(errkind.Network, "cannot reach %s: %s (%s %s); check HF_ENDPOINT and the network (not retried)", u.Scheme+"://"+u.Host, cause, method, redact(u))
			}
			return nil, &transient{err: fmt.Errorf("%s %s: %w", method, redact(u), err)}
		}
		if c.sameHost(u) {
			hubHdr = resp.Header
		}
		if !isRedirect(resp.StatusCode) {
			return &response{Response: resp, hub: hubHdr}, nil
		}
		loc, err := resp.Location()
		if err != nil {
			resp.Body.Close()
			return nil, fmt.Errorf("%s %s: redirect without a usable Location: %v", method, redact(u), err)
		}
		relative := !strings.Contains(resp.Header.Get("Location"), "://") && !strings.HasPrefix(resp.Header.Get("Location"), "//")
		if !relative && !followAbsolute {
			return &response{Response: resp, hub: hubHdr}, nil
		}
		drain(resp)
		u = loc
	}
	return nil, fmt.Errorf("%s %s: more than %d redirects", method, redact(u), maxRedirects)
}

func (c *Client) roundTrip(req *http.Request) (*http.Response, error) {
	hc := *c.HTTP
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return hc.Do(req)
}

func (c *Client) sameHost(u *url.URL) bool {
	return strings.EqualFold(u.Scheme, c.endpoint.Scheme) && strings.EqualFold(u.Host, c.endpoint.Host)
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// drain reads a little of an unwanted body so the connection can be reused.
func drain(resp *http.Response) {
	buf := make([]byte, 4096)
	for range 16 {
		if _, err := resp.Body.Read(buf); err != nil {
			break
		}
	}
	resp.Body.Close()
}

// redact drops the query (CDN URLs carry signatures) from a URL for messages.
func redact(u *url.URL) string {
	v := *u
	v.RawQuery = ""
	v.User = nil
	return v.String()
}

// target names what a request was about, for error messages.
type target struct {
	repo, revision, file string
}

func (t target) String() string {
	s := t.repo
	if t.revision != "" {
		s += "@" + t.revision
	}
	if t.file != "" {
		s += ": " + clip.Text(t.file) // a name from the Hub's listing
	}
	return s
}

// statusError turns a non-2xx Hub answer into an actionable error; busy and
// failing servers come back as *transient.
func (c *Client) statusError(resp *response, t target) error {
	defer drain(resp.Response)
	code := resp.Header.Get(headerErrorCode)
	if code == "" && resp.hub != nil {
		code = resp.hub.Get(headerErrorCode)
	}
	msg := resp.Header.Get(headerErrorMsg)
	page := c.cfg.Endpoint + "/" + t.repo
	tokenHint := "set HF_TOKEN (or --token) to a token that can read it"
	if c.cfg.Token != "" {
		tokenHint = "check that your token can read it"
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout ||
		resp.StatusCode == http.StatusInternalServerError || resp.StatusCode == http.StatusBadGateway ||
		resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusGatewayTimeout:
		return &transient{err: fmt.Errorf("HTTP %d %s %s", resp.StatusCode, code, msg), retryAfter: retryAfter(resp.Header), unavailable: true}
	case code == errGatedRepo && resp.StatusCode == http.StatusForbidden:
		return errkind.Errorf(errkind.Auth, "%s is gated and your token has not been granted access: accept the licence at %s (logged in as the token's owner)", t.repo, page)
	case code == errGatedRepo:
		return errkind.Errorf(errkind.Auth, "%s is gated: accept its licence at %s and set HF_TOKEN (or --token)", t.repo, page)
	case code == errRevNotFound:
		return errkind.Errorf(errkind.NotFound, "revision %q not found in %s: use an existing branch, tag or commit", t.revision, t.repo)
	case code == errEntryNotFound:
		return errkind.Errorf(errkind.NotFound, "file %q not found in %s@%s", t.file, t.repo, t.revision)
	case code == errRepoNotFound || resp.StatusCode == http.StatusNotFound:
		return errkind.Errorf(errkind.NotFound, "repository %s not found at %s (or it is private): check the name, or %s", t.repo, c.cfg.Endpoint, tokenHint)
	case code == errDisabledRepo:
		return errkind.Errorf(errkind.NotFound, "repository %s has been disabled by its owner or the Hub", t.repo)
	case resp.StatusCode == http.StatusUnauthorized:
		return errkind.Errorf(errkind.Auth, "%s needs authentication (private or gated): %s", t, tokenHint)
	case resp.StatusCode == http.StatusForbidden:
		return errkind.Errorf(errkind.Auth, "access to %s denied: your token lacks permission; accept the licence at %s or use another token", t, page)
	}
	return fmt.Errorf("%s: unexpected answer from %s: HTTP %d %s", t, c.cfg.Endpoint, resp.StatusCode, strings.TrimSpace(code+" "+msg))
}

// retryAfter reads Retry-After as seconds or an HTTP date.
func retryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get(headerRetryAfter))
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
