package cpu

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestKVCacheIsReservedOnce: the cache is mapped once for the whole
// context at the first forward pass (no regrowth, so positions keep their
// addresses), positions past the context are refused with both sizes,
// a truncated state recomputes the same logits, and release unmaps it.
func TestKVCacheIsReservedOnce(t *testing.T) {
	m := loadModel(t, tinyStories)
	ctx := context.Background()
	st := newState(m)
	ids := m.tok.Encode("Once upon a time", true)
	first, err := st.forward(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	first = slices.Clone(first)
	base := &st.kc[0]
	want := m.arch.ctx * m.arch.layers * m.arch.kvHeads * m.arch.headDim
	if len(st.kc) != want || len(st.vc) != want {
		t.Fatalf("cache holds %d/%d floats, want %d (ctx %d)", len(st.kc), len(st.vc), want, m.arch.ctx)
	}
	if runtime.GOOS == "linux" && st.kvMem == nil {
		t.Fatal("the cache is not a reserved mapping")
	}
	for range 3 {
		if _, err := st.forward(ctx, []int{ids[0]}); err != nil {
			t.Fatal(err)
		}
	}
	if &st.kc[0] != base {
		t.Fatal("the cache moved while positions were added")
	}
	st.truncate(0)
	again, err := st.forward(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again, first) {
		t.Fatal("a truncated state gives other logits for the same prompt")
	}
	st.pos = m.arch.ctx - 1
	if _, err := st.forward(ctx, []int{ids[0], ids[0]}); err == nil || !strings.Contains(err.Error(), "exceed the context") {
		t.Fatalf("forward past the context: %v", err)
	}
	st.release()
	if st.kc != nil || st.kvMem != nil || st.pos != 0 {
		t.Fatal("release kept the cache")
	}
}
