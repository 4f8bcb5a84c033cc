// Package oci moves a prep artifact directory (OUT/ with its manifest.json)
// through OCI registries — Harbor, GHCR, ECR, a local registry:2 — as an
// ordinary OCI image: one tar+zstd layer per file, each layer annotated
// with its path, size and sha256, and the prep manifest in the image
// manifest's annotations. Being a plain image, it can also be mounted by
// container runtimes (Kubernetes image volumes) or unpacked by any OCI tool.
// Credentials come from the docker config and credential helpers, as crane
// and docker use them.
package oci

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/edgectl/edgectl/internal/progress"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// Annotation keys. The org.opencontainers ones are the OCI standard's;
// dev.edgectl.* are ours.
const (
	AnnotationTitle    = "org.opencontainers.image.title" // layer: file path inside OUT/
	AnnotationRevision = "org.opencontainers.image.revision"
	AnnotationSource   = "org.opencontainers.image.source"
	AnnotationVersion  = "org.opencontainers.image.version"

	AnnotationFileSHA256     = "dev.edgectl.file.sha256" // layer: the file's own digest
	AnnotationFileSize       = "dev.edgectl.file.size"
	AnnotationTarget         = "dev.edgectl.target"
	AnnotationKey            = "dev.edgectl.key" // the prep pipeline key
	AnnotationEdgectl        = "dev.edgectl.version"
	AnnotationManifest       = "dev.edgectl.manifest" // manifest.json, compact
	AnnotationManifestSHA256 = "dev.edgectl.manifest.sha256"
)

// maxManifestAnnotation caps the copy of manifest.json in the annotations;
// registries refuse image manifests above ~4 MiB. Larger manifests (models
// with thousands of files) still travel as the manifest.json layer.
const maxManifestAnnotation = 512 << 10

// Options say how to reach the registry.
type Options struct {
	// Keychain resolves credentials (nil: authn.DefaultKeychain, the docker
	// config and credential helpers).
	Keychain authn.Keychain
	// Transport carries the requests (nil: the default).
	Transport http.RoundTripper
	// Insecure allows plain HTTP to registries other than localhost.
	Insecure bool
	// Jobs is how many layers a pull fetches at once (default 4).
	Jobs int
	// OnEvent, when set, hears Progress: bytes moved so far of the total,
	// step "push" or "pull".
	OnEvent progress.Func
	// FreeSpace reports the bytes that may still be written under dir
	// (ok=false: unknown, not checked). Nil means statfs; tests play a
	// full disk with it.
	FreeSpace func(dir string) (free int64, ok bool)
}

func (o *Options) freeSpace(dir string) (int64, bool) {
	if o.FreeSpace != nil {
		return o.FreeSpace(dir)
	}
	return freeBytes(dir)
}

func (o *Options) keychain() authn.Keychain {
	if o.Keychain != nil {
		return o.Keychain
	}
	return authn.DefaultKeychain
}

// ParseRef parses REF, with or without an oci:// prefix.
func ParseRef(ref string, insecure bool) (name.Reference, error) {
	ref = strings.TrimPrefix(ref, "oci://")
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return nil, fmt.Errorf("%q is not an OCI reference (REGISTRY/REPOSITORY[:TAG|@sha256:DIGEST]): %v", ref, err)
	}
	return r, nil
}
