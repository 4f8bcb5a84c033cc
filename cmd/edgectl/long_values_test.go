package main

import (
	"strings"
	"testing"
)

// A 10 KB id or path on the command line comes back clipped: one line of
// at most 300 bytes, saying how long the value was.
func TestLongValuesAreClippedInErrors(t *testing.T) {
	t.Setenv("HF_HUB_OFFLINE", "1") // nothing here may reach the network
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_CACHE", "")
	id := strings.Repeat("a", 10240)
	for _, args := range [][]string{
		{"pull", id},
		{"pull", id + "/name"},
		{"pull", "org/" + id},
		{"pull", "org/name@" + id},
		{"inspect", id},
		{"inspect", "org/" + id},
		{"run", id, "hi"},
		{"doctor", id},
	} {
		code, _, stderr := runCLI(t, args...)
		what := args[0] + " " + args[1][:min(len(args[1]), 12)] + "…"
		if code == 0 {
			t.Errorf("%s: exit 0", what)
			continue
		}
		if len(stderr) > 300 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s: exit %d, want one line ≤ 300 bytes, got %d bytes: %.400q", what, code, len(stderr), stderr)
		}
	}
}
