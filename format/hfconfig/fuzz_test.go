package hfconfig

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParse: config.json bytes parse or fail with a LoadError; an
// accepted config validates without panicking, and one that validates has
// usable derived numbers. The minimal-diff editor keeps an accepted file
// byte for byte, and an edit reads back.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		tinyConfig, "null\n", "", "{}", `{"eos_token_id": [1, 106], "bos_token_id": null}`,
		string(withKey(`"max_position_embeddings": 1099511627776`)), string(withKey(`"vocab_size": 1099511627776`)),
		string(withKey(`"num_attention_heads": 2147483648, "num_key_value_heads": 2147483648`)),
		string(withKey(`"num_hidden_layers": -1`)), string(withKey(`"hidden_size": 0, "num_attention_heads": 0`)),
		`{"text_config": {"hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4, "vocab_size": 10}}`,
		"{\n  \"a\": \"\\\"}\",\n  \"b\": 1\n}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b, "config.json")
		if err != nil {
			if _, ok := err.(*LoadError); !ok {
				t.Fatalf("error %T is not a LoadError: %v", err, err)
			}
			return
		}
		if err := c.Validate(); err == nil {
			tc := c.Text()
			if hd := tc.HeadDimension(); hd < 1 || hd > DefaultLimits.HiddenSize {
				t.Fatalf("validated config has head dim %d", hd)
			}
			if kv := tc.KVHeads(); kv < 1 || tc.NumAttentionHeads%kv != 0 {
				t.Fatalf("validated config has %d KV heads for %d heads", kv, tc.NumAttentionHeads)
			}
		}
		if n := c.ContextLength(4096); n < 0 || n > 4096 {
			t.Fatalf("ContextLength(4096) = %d", n)
		}
		_, _, _, _ = c.Tied(), c.Experts(), c.Arch(), c.WeightDType()

		d, err := ParseDoc(b)
		if err != nil {
			t.Fatalf("ParseDoc refuses a config Parse accepts: %v", err)
		}
		if !bytes.Equal(d.Bytes(), b) {
			t.Fatal("ParseDoc changed the bytes")
		}
		if dupKeys(b) {
			return // the editor edits the first of duplicate keys; readers see the last
		}
		if err := d.Set("kv_cache_len", 7); err != nil {
			t.Fatalf("Set: %v", err)
		}
		c2, err := Parse(d.Bytes(), "edited")
		if err != nil || c2.KVCacheLen != 7 {
			t.Fatalf("edited config reads back %v, kv_cache_len %v\n%s", err, c2, d.Bytes())
		}
	})
}

// dupKeys reports whether the top-level object repeats a key, ignoring
// case as encoding/json does when it fills a struct.
func dupKeys(b []byte) bool {
	d, _ := ParseDoc(b)
	if d == nil {
		return true
	}
	seen := map[string]bool{}
	for _, m := range d.members {
		k := strings.ToLower(m.key)
		if seen[k] {
			return true
		}
		seen[k] = true
	}
	return false
}
