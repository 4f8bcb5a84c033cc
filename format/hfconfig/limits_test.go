package hfconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const tinyConfig = `{"architectures": ["LlamaForCausalLM"], "hidden_size": 128, "intermediate_size": 384,
  "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 4, "vocab_size": 2048,
  "max_position_embeddings": 512}`

// withKey returns tinyConfig with one more key (a later duplicate wins in
// encoding/json, as in Python's json module).
func withKey(kv string) []byte {
	return []byte(strings.TrimSuffix(tinyConfig, "}") + ", " + kv + "}")
}

// The red-team configs: numbers that would size allocations of 2^40
// elements, negative or zero dimensions, and a null document.
func TestValidateRefusesHostileDimensions(t *testing.T) {
	cases := map[string]string{
		`"vocab_size": 1099511627776`:        "vocab_size 1099511627776 is outside 0..16777216",
		`"num_attention_heads": 2147483648`:  "num_attention_heads 2147483648 is outside 0..4096",
		`"num_hidden_layers": -1`:            "num_hidden_layers -1 is outside",
		`"hidden_size": 0`:                   "hidden_size is 0 or missing",
		`"num_attention_heads": 0`:           "num_attention_heads is 0 or missing",
		`"intermediate_size": 1099511627776`: "intermediate_size 1099511627776",
		`"max_position_embeddings": -5`:      "max_position_embeddings -5",
		`"num_key_value_heads": 3`:           "not a multiple of num_key_value_heads 3",
		`"hidden_size": 100`:                 "hidden_size 100 is not a multiple of num_attention_heads 8",
		`"sliding_window": -1`:               "sliding_window -1",
		`"text_config": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2147483648}`: "text_config.num_attention_heads 2147483648",
		`"text_config": {"hidden_size": -64}`: "text_config.hidden_size -64",
		`"num_local_experts": 1099511627776`:  "num_local_experts",
	}
	for kv, want := range cases {
		c, err := Parse(withKey(kv), "m/config.json")
		if err != nil {
			t.Fatalf("%s: parse: %v", kv, err)
		}
		err = c.Validate()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "m/config.json: ") ||
			!strings.Contains(err.Error(), "restore config.json") {
			t.Errorf("%s: %v, want %q with the file and the fix", kv, err, want)
		}
	}
	c, err := Parse([]byte(tinyConfig), "m/config.json")
	if err != nil || c.Validate() != nil {
		t.Fatalf("tiny config: %v %v", err, c.Validate())
	}
}

// A context of 2^40 positions is a claim, not an error: ContextLength
// clamps it, and Validate lets it through.
func TestContextLengthClamps(t *testing.T) {
	c, err := Parse(withKey(`"max_position_embeddings": 1099511627776`), "config.json")
	if err != nil || c.Validate() != nil {
		t.Fatalf("%v %v", err, c.Validate())
	}
	if n := c.ContextLength(0); n != DefaultLimits.Context {
		t.Errorf("ContextLength(0) = %d, want %d", n, DefaultLimits.Context)
	}
	if n := c.ContextLength(4096); n != 4096 {
		t.Errorf("ContextLength(4096) = %d", n)
	}
	small, _ := Parse([]byte(tinyConfig), "config.json")
	if n := small.ContextLength(4096); n != 512 {
		t.Errorf("ContextLength of a 512 model = %d", n)
	}
	none, _ := Parse([]byte(`{"hidden_size": 8}`), "config.json")
	if n := none.ContextLength(4096); n != 0 {
		t.Errorf("ContextLength without the key = %d", n)
	}
}

func TestParseRefusesNonObjects(t *testing.T) {
	for doc, kind := range map[string]string{"null\n": "null", "[1]": "an array", `"x"`: "a string", "42": "a number", "true": "a boolean"} {
		_, err := Parse([]byte(doc), "m/config.json")
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "top level is "+kind+", not a JSON object") {
			t.Errorf("%q: %v", doc, err)
		}
	}
}

func TestLoadRefusesSpecialAndHugeFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 2)
	go func() {
		_, err := Load(dir)
		done <- err
		os.Rename(p, filepath.Join(dir, "generation_config.json"))
		_, err = LoadGeneration(dir)
		done <- err
	}()
	for range 2 {
		select {
		case err := <-done:
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "named pipe (FIFO), not a regular file") {
				t.Errorf("FIFO: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Load blocked on a FIFO")
		}
	}
	big := filepath.Join(t.TempDir(), "config.json")
	f, _ := os.Create(big)
	f.Truncate(MaxFileSize + 1) // sparse: nothing is written
	f.Close()
	if _, err := Load(big); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "over the 16777216-byte limit") {
		t.Errorf("huge config: %v", err)
	}
	// A Hugging Face cache symlink is followed.
	blob := filepath.Join(t.TempDir(), "blob")
	os.WriteFile(blob, []byte(tinyConfig), 0o644)
	link := filepath.Join(t.TempDir(), "config.json")
	os.Symlink(blob, link)
	if c, err := Load(link); err != nil || c.HiddenSize != 128 {
		t.Errorf("symlinked config: %v", err)
	}
}
