package hfconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadFaults(t *testing.T) {
	dir := t.TempDir()
	write := func(b string) string {
		p := filepath.Join(dir, "config.json")
		os.WriteFile(p, []byte(b), 0o644)
		return p
	}
	if _, err := Load(filepath.Join(dir, "nope")); !errors.Is(err, ErrMissing) {
		t.Fatalf("missing: %v", err)
	}
	if _, err := Load(write("")); !errors.Is(err, ErrEmpty) || !strings.Contains(err.Error(), "empty (0 bytes)") {
		t.Fatalf("empty: %v", err)
	}
	_, err := Load(write("{\n  \"a\": 1,\n  \"b\": ]\n}"))
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("invalid: %v", err)
	}
	if _, err := Load(write("{\"a\": \"\xfe\"}")); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "UTF-8 at byte 7") {
		t.Fatalf("non-utf8: %v", err)
	}
	if _, err := Load(write(`{"hidden_size": "big"}`)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"hidden_size"`) {
		t.Fatalf("wrong type: %v", err)
	}
}

func TestIDsAndDerivedFields(t *testing.T) {
	c, err := Parse([]byte(`{"eos_token_id": [1, 106], "bos_token_id": 2, "hidden_size": 64, "num_attention_heads": 4,
		"text_config": {"hidden_size": 128, "num_attention_heads": 8, "num_key_value_heads": 2, "num_local_experts": 8}}`), "c")
	if err != nil {
		t.Fatal(err)
	}
	if !c.EosIsArray || len(c.EosTokenID) != 2 || c.EosTokenID[1] != 106 || c.BosTokenID[0] != 2 {
		t.Fatalf("ids %v %v %v", c.EosIsArray, c.EosTokenID, c.BosTokenID)
	}
	if c.HeadDimension() != 16 || c.Text().HiddenSize != 128 || c.Text().KVHeads() != 2 || c.Text().Experts() != 8 {
		t.Fatalf("derived %d %d %d", c.HeadDimension(), c.Text().HiddenSize, c.Text().KVHeads())
	}
}

func TestDocSetKeepsEverythingElse(t *testing.T) {
	in := "{\n    \"zeta\": 1,\n    \"eos_token_id\": [\n        1,\n        106\n    ],\n    \"unknown_vendor_key\": {\"x\": [1, 2]},\n    \"rope_theta\": 1e6\n}\n"
	d, err := ParseDoc([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Set("eos_token_id", 1); err != nil {
		t.Fatal(err)
	}
	if err := d.Set("kv_cache_len", 2047); err != nil {
		t.Fatal(err)
	}
	want := "{\n    \"zeta\": 1,\n    \"eos_token_id\": 1,\n    \"unknown_vendor_key\": {\"x\": [1, 2]},\n    \"rope_theta\": 1e6,\n    \"kv_cache_len\": 2047\n}\n"
	if got := string(d.Bytes()); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	// Setting the same value again changes nothing.
	before := string(d.Bytes())
	d.Set("kv_cache_len", 2047)
	if string(d.Bytes()) != before {
		t.Fatal("idempotent Set changed bytes")
	}
}

func TestDocInlineAndEmpty(t *testing.T) {
	d, _ := ParseDoc([]byte(`{"a": 1, "b": "x\"y"}`))
	d.Set("c", []int{1})
	if got := string(d.Bytes()); got != `{"a": 1, "b": "x\"y", "c": [1]}` {
		t.Fatalf("inline: %s", got)
	}
	d, _ = ParseDoc([]byte("{}\n"))
	d.Set("k", true)
	if _, err := Parse(d.Bytes(), "x"); err != nil || !strings.Contains(string(d.Bytes()), `"k": true`) {
		t.Fatalf("empty object: %q %v", d.Bytes(), err)
	}
}
