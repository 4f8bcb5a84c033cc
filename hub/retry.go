package hub

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"syscall"
	"time"

	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/progress"
)

// The retry budget, stated once (docs/models.md#pull): a request is tried
// at most RetryPolicy.Attempts times (`pull --retries N`: N+1), waits
// between tries grow from 1 s to at most 30 s (a server's Retry-After is
// honoured up to 5 min), and a request gives up once its waits would pass
// DefaultRetryDeadline. Only failures that may pass are retried: a dropped
// or hung connection, a timeout, 429 and 5xx. An endpoint that refuses the
// connection, a host or network that cannot be reached, a name that does
// not resolve and a certificate that does not verify fail at once.

// DefaultRetries is `pull --retries`'s default: retries after the first try.
const DefaultRetries = 5

// DefaultRetryDeadline bounds the total wait of one request's retries.
const DefaultRetryDeadline = 3 * time.Minute

func (p RetryPolicy) deadline() time.Duration {
	if p.Deadline > 0 {
		return p.Deadline
	}
	return DefaultRetryDeadline
}

// unreachable returns why err means the endpoint cannot be reached at all,
// a failure no retry within seconds or minutes would cure, or "".
func unreachable(err error) string {
	var dns *net.DNSError
	var cert *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused, nothing listens there"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "host unreachable"
	case errors.Is(err, syscall.ENETUNREACH):
		return "network unreachable"
	case errors.As(err, &dns) && dns.IsNotFound:
		return "no such host (" + dns.Name + ")"
	case errors.As(err, &cert), errors.As(err, &unknownCA), errors.As(err, &hostname):
		return "TLS certificate not trusted"
	}
	return ""
}

// unreachableError is the one-line error for an endpoint that cannot be
// reached: the endpoint, the cause, what to check.
func (c *Client) unreachableError(what, cause string) error {
	return errkind.Errorf(errkind.Network, "%s: cannot reach %s: %s; check HF_ENDPOINT and the network (not retried)", what, c.cfg.Endpoint, cause)
}

// retryHookKey carries, in a context, who hears that a request is being
// retried when its caller passed no hook of its own (metadata requests of
// a Snapshot), so no wait is silent.
type retryHookKey struct{}

func withRetryEvents(ctx context.Context, repo string, emit progress.Func) context.Context {
	return context.WithValue(ctx, retryHookKey{}, func(what string, attempt int, d time.Duration, err error) {
		emit(progress.Event{Event: progress.Retry, Repo: repo, File: what, Attempt: attempt, DelayMS: d.Milliseconds(), Message: err.Error()})
	})
}

// retryHook is the hook withRetry uses: onRetry, else the context's.
func retryHook(ctx context.Context, what string, onRetry func(int, time.Duration, error)) func(int, time.Duration, error) {
	if onRetry != nil {
		return onRetry
	}
	if h, ok := ctx.Value(retryHookKey{}).(func(string, int, time.Duration, error)); ok {
		return func(attempt int, d time.Duration, err error) { h(what, attempt, d, err) }
	}
	return nil
}
