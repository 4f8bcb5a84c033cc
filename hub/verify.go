package hub

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
)

// verifier checks a download against what the Hub promised: the sha256 of
// an LFS file (its ETag), or the git blob sha1 of a regular file.
type verifier struct {
	h      hash.Hash
	prefix []byte // git's "blob <size>\x00" header for sha1
	want   string
	algo   string
}

// newVerifier returns nil when there is nothing to check against.
func newVerifier(sha256Hex, etag string, size int64) *verifier {
	switch {
	case sha256Re.MatchString(sha256Hex):
		return &verifier{h: sha256.New(), want: sha256Hex, algo: "sha256"}
	case sha256Re.MatchString(etag):
		return &verifier{h: sha256.New(), want: etag, algo: "sha256"}
	case commitRe.MatchString(etag) && size >= 0:
		v := &verifier{h: sha1.New(), want: etag, algo: "git-sha1", prefix: fmt.Appendf(nil, "blob %d\x00", size)}
		v.h.Write(v.prefix)
		return v
	}
	return nil
}

func (v *verifier) Write(p []byte) (int, error) {
	if v == nil {
		return len(p), nil
	}
	return v.h.Write(p)
}

func (v *verifier) reset() {
	if v == nil {
		return
	}
	v.h.Reset()
	v.h.Write(v.prefix)
}

func (v *verifier) sum() string {
	if v == nil {
		return ""
	}
	return hex.EncodeToString(v.h.Sum(nil))
}

// checksumError is a download whose bytes are not the promised ones: a
// wrong digest, a wrong size, or a body longer than the Hub announced.
type checksumError struct {
	file, algo, got, want string
	size, wantSize        int64
	over                  bool  // the body went past wantSize
	from, announced       int64 // a Content-Length (from byte from) past wantSize
}

// errOverflow stops a body at the first byte past the announced size.
var errOverflow = errors.New("body longer than announced")

func (e *checksumError) sizeOnly() bool { return e.algo == "" }

func (e *checksumError) Error() string {
	switch {
	case e.algo != "":
		return fmt.Sprintf("%s: %s is %s, the Hub announced %s", e.file, e.algo, e.got, e.want)
	case e.over:
		return fmt.Sprintf("%s: the server sent more than the %d bytes the Hub announced; the download stopped at byte %d", e.file, e.wantSize, e.wantSize)
	case e.announced > 0:
		return fmt.Sprintf("%s: the server announced %d bytes (Content-Length) from byte %d of a file the Hub listed at %d bytes; nothing was written", e.file, e.announced, e.from, e.wantSize)
	}
	return fmt.Sprintf("%s: downloaded %d bytes, the Hub announced %d", e.file, e.size, e.wantSize)
}
