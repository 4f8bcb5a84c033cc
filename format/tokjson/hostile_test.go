package tokjson

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const smallTokenizer = `{"added_tokens": [{"id": 3, "content": "<s>", "special": true}],
  "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}}`

// The red-team tokenizers: ids that would size a 10^9-entry table, and
// a tokenizer with no tokens at all.
func TestHostileIDsAreRefused(t *testing.T) {
	cases := map[string]string{
		`{"added_tokens": [{"id": 1000000000, "content": "<evil>"}], "model": {"vocab": {"a": 0}}}`: `added_tokens[0] "<evil>" has id 1000000000, outside 0..65539`,
		`{"model": {"vocab": {"a": 0, "zzz": 1000000000}}}`:                                         `model.vocab["zzz"] has id 1000000000`,
		`{"model": {"vocab": {"a": -1}}}`:                                                           `model.vocab["a"] has id -1`,
		`{"added_tokens": [{"id": -5, "content": "x"}], "model": {"vocab": {"a": 0}}}`:              `added_tokens[0] "x" has id -5`,
		`{"model": {"vocab": {"a": 0, "b": 16777216}}}`:                                             `has id 16777216`,
		`{"model": {"vocab": {}, "merges": []}, "added_tokens": []}`:                                "no tokens",
		`{"model": {"vocab": {"a": 1e30}}}`:                                                         "model.vocab",
	}
	for doc, want := range cases {
		if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
	// A padded vocabulary (ids past the token count, as many checkpoints
	// have) is fine, and Tokens() fills the gaps with "".
	f, err := Parse([]byte(`{"added_tokens": [{"id": 1000, "content": "<pad>"}], "model": {"vocab": {"a": 0}}}`))
	if err != nil || len(f.Tokens()) != 1001 || f.Tokens()[500] != "" {
		t.Fatalf("padded vocab: %v", err)
	}
}

func TestLoadNamesTheFileInIDErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(`{"model": {"vocab": {"a": 1000000000}}}`), 0o644)
	if _, err := Load(dir); err == nil || !strings.HasPrefix(err.Error(), filepath.Join(dir, "tokenizer.json")+": ") {
		t.Fatalf("error %v does not start with the file", err)
	}
}

// Every tokenizer file read from a model directory is refused without
// blocking when it is a FIFO; symlinks to regular files are followed.
func TestSpecialFilesAreRefusedWithoutBlocking(t *testing.T) {
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json", "chat_template.jinja"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(smallTokenizer), 0o644)
			os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"eos_token": "<s>"}`), 0o644)
			os.Remove(filepath.Join(dir, name))
			if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := Load(dir)
				if err == nil {
					_, err = LoadConfig(dir)
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), name+" is a named pipe (FIFO), not a regular file") {
					t.Fatalf("error %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("blocked on a FIFO")
			}
		})
	}
	dir := t.TempDir()
	blob := filepath.Join(t.TempDir(), "blob")
	os.WriteFile(blob, []byte(smallTokenizer), 0o644)
	os.Symlink(blob, filepath.Join(dir, "tokenizer.json"))
	tmpl := filepath.Join(t.TempDir(), "tmpl")
	os.WriteFile(tmpl, []byte("{{ messages }}"), 0o644)
	os.Symlink(tmpl, filepath.Join(dir, "chat_template.jinja"))
	if f, err := Load(dir); err != nil || len(f.Tokens()) != 4 {
		t.Fatalf("symlinked tokenizer.json: %v", err)
	}
	if c, err := LoadConfig(dir); err != nil || c.ChatTemplate != "{{ messages }}" {
		t.Fatalf("symlinked chat_template.jinja: %+v %v", c, err)
	}
}

func TestOversizeFilesAreRefused(t *testing.T) {
	dir := t.TempDir()
	f, _ := os.Create(filepath.Join(dir, "chat_template.jinja"))
	f.Truncate(MaxConfigSize + 1) // sparse: nothing is written
	f.Close()
	if _, err := LoadConfig(dir); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Fatalf("huge chat template: %v", err)
	}
}
