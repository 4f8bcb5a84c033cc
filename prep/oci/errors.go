package oci

import (
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// registryErr turns a registry failure into one line that says what to do,
// marked with the errkind (auth, not found, busy, network) whose exit code
// pull/push scripts branch on.
func registryErr(verb, ref string, err error) error {
	var te *transport.Error
	if errors.As(err, &te) {
		switch {
		case te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden || hasCode(te, transport.UnauthorizedErrorCode, transport.DeniedErrorCode):
			return errkind.Errorf(errkind.Auth, "%s %s: access denied (%d): log in with `docker login %s` — edgectl reads the docker config and credential helpers, as crane does", verb, ref, te.StatusCode, registryOf(ref))
		case te.StatusCode == http.StatusNotFound || hasCode(te, transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode, transport.BlobUnknownErrorCode):
			return errkind.Errorf(errkind.NotFound, "%s %s: not found in the registry: check the repository, tag or digest", verb, ref)
		case te.StatusCode == http.StatusTooManyRequests || te.StatusCode >= 500:
			return errkind.Errorf(errkind.Busy, "%s %s: registry answered %d: try again later", verb, ref, te.StatusCode)
		}
		return fmt.Errorf("%s %s: %w", verb, ref, err)
	}
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &ne) || errors.As(err, &oe) {
		return errkind.Errorf(errkind.Network, "%s %s: %w: check the registry address and the network (use --insecure for a plain-HTTP registry)", verb, ref, err)
	}
	return fmt.Errorf("%s %s: %w", verb, ref, err)
}

func hasCode(te *transport.Error, codes ...transport.ErrorCode) bool {
	for _, d := range te.Errors {
		for _, c := range codes {
			if d.Code == c {
				return true
			}
		}
	}
	return false
}

func registryOf(ref string) string {
	if r, err := ParseRef(ref, false); err == nil {
		return r.Context().RegistryStr()
	}
	return ref
}
