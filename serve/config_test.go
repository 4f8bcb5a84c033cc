package serve

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"8MiB": 8 << 20, "8M": 8 << 20, "512KiB": 512 << 10, "1048576": 1 << 20, "1.5 MB": 3 << 19, "2g": 2 << 30} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1MiB", "8 parsecs", "MiB", "2TiB", "1e3"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("%q accepted as %d", in, got)
		}
	}
}
