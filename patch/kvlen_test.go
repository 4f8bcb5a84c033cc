package patch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/hfconfig"
)

func TestKVLenRounding(t *testing.T) {
	for in, want := range map[int]int{2048: 2047, 2047: 2047, 1024: 1023, 4096: 4095, 3000: 2943, 100: 127, 255: 255, 256: 255} {
		k := NewKVLen(in, nil)
		if got := k.Len(); got != want || !NewKVLen(got, nil).Exact() {
			t.Errorf("NewKVLen(%d).Len() = %d, want %d", in, got, want)
		}
		if k.Exact() != (in == want) {
			t.Errorf("NewKVLen(%d).Exact() = %v", in, k.Exact())
		}
	}
}

// The flag wins over config.json, config.json over the default, and each
// says where it came from.
func TestNewKVLenOrder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, []byte(`{"model_type": "llama", "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 1, "kv_cache_len": 1023}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := hfconfig.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	noKV := *cfg
	noKV.KVCacheLen = 0
	for _, c := range []struct {
		flag int
		cfg  *hfconfig.Config
		want KVLen
	}{
		{2048, cfg, KVLen{2048, KVLenFlag}},
		{0, cfg, KVLen{1023, path + " kv_cache_len"}},
		{0, &noKV, KVLen{DefaultKVLen, "default"}},
		{0, nil, KVLen{DefaultKVLen, "default"}},
		{-5, nil, KVLen{-5, KVLenFlag}},
	} {
		if got := NewKVLen(c.flag, c.cfg); got != c.want {
			t.Errorf("NewKVLen(%d, cfg %v) = %+v, want %+v", c.flag, c.cfg != nil, got, c.want)
		}
	}
	if !NewKVLen(0, nil).Defaulted() || NewKVLen(0, cfg).Defaulted() {
		t.Error("Defaulted is wrong")
	}
}

func TestKVLenBudget(t *testing.T) {
	if n, err := NewKVLen(2048, nil).Budget(); n != 2047 || err != nil {
		t.Errorf("Budget(2048) = %d, %v", n, err)
	}
	if n, err := NewKVLen(0, nil).Budget(); n != DefaultKVLen || err != nil {
		t.Errorf("Budget(default) = %d, %v", n, err)
	}
	for _, in := range []int{100, -1} {
		if _, err := NewKVLen(in, nil).Budget(); err == nil || !strings.Contains(err.Error(), "--kv-cache-len") || !strings.Contains(err.Error(), "at least 127") {
			t.Errorf("Budget(%d) err = %v", in, err)
		}
	}
}
