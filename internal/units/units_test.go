package units

import "testing"

func TestUnits(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Bytes(7), "7 B"}, {Bytes(1536), "1.5 KiB"}, {Bytes(3 << 30), "3.0 GiB"},
		{Count(999), "999"}, {Count(656000), "656.0K"}, {Count(2_410_000_000), "2.41B"}, {Count(1_500_000), "1.50M"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
