//go:build !linux

package artifact

import "errors"

// exchange is not available: SwapDir falls back to two renames.
func exchange(a, b string) error { return errors.New("no atomic exchange on this system") }
