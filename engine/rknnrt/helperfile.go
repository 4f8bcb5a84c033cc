package rknnrt

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/edgectl/edgectl/internal/atomicfile"
)

// HelperScript is the helper program (Python 3, rknn-toolkit-lite2), built
// into the binary so a board needs only edgectl and the vendor wheel.
//
//go:embed helper/edgectl_rknn_helper.py
var HelperScript []byte

// writeHelper puts HelperScript in dir (default: the user cache dir's
// edgectl/rknnrt) under a name carrying its hash, so binaries of
// different versions never run each other's helper, and returns its path.
// An existing file with the right bytes is reused.
func writeHelper(dir string) (string, error) {
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		dir = filepath.Join(base, "edgectl", "rknnrt")
	}
	sum := sha256.Sum256(HelperScript)
	path := filepath.Join(dir, "edgectl_rknn_helper-"+hex.EncodeToString(sum[:6])+".py")
	if b, err := os.ReadFile(path); err == nil && bytes.Equal(b, HelperScript) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("rknn helper dir %s: %w (make it writable, or set XDG_CACHE_HOME)", dir, err)
	}
	if err := atomicfile.WriteFile(path, HelperScript, 0o644); err != nil {
		return "", fmt.Errorf("write the rknn helper: %w", err)
	}
	return path, nil
}
