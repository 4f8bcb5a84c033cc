package bench

import (
	"slices"
	"testing"
)

// The windows cover every token once: behind BOS from the first token,
// without BOS from the second (the first only gives context).
func TestPerplexityWindows(t *testing.T) {
	for _, c := range []struct {
		n, ctx int
		bos    bool
		want   []Window
	}{
		{5, 512, true, []Window{{0, 5}}},
		{10, 4, true, []Window{{0, 3}, {3, 6}, {6, 9}, {9, 10}}},
		{10, 4, false, []Window{{1, 4}, {4, 7}, {7, 10}}},
		{1, 4, false, nil},
		{0, 4, true, nil},
	} {
		got := Windows(c.n, c.ctx, c.bos)
		if !slices.Equal(got, c.want) {
			t.Errorf("Windows(%d, %d, %v) = %v, want %v", c.n, c.ctx, c.bos, got, c.want)
		}
	}
}
