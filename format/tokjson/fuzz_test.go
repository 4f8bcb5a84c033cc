package tokjson

import "testing"

// FuzzParse: tokenizer.json bytes parse or fail; an accepted file's ids
// fit its token table, which stays within a bounded factor of the file's
// own token count, and every token looks up to an id holding it.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		smallTokenizer,
		`{"added_tokens": [{"id": 1000000000, "content": "<evil>"}], "model": {"vocab": {"a": 0}}}`,
		`{"model": {"vocab": {"a": 0, "zzz": 1000000000}}}`,
		`{"model": {"vocab": null, "merges": null}, "added_tokens": null}`,
		`{"model": {"type": "Unigram", "vocab": [["a", -1.5], ["b", -2]]}}`,
		`{"model": {"vocab": {"a": 0, "b": 1}, "merges": [["a", "b"]]}, "pre_tokenizer": {"type": "ByteLevel"}}`,
		`{"model": {"vocab": {"a": -1}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(b)
		if err != nil {
			return
		}
		n := len(file.Model.Vocab) + len(file.AddedTokens)
		toks := file.Tokens()
		if len(toks) > min(MaxVocab, 2*n+idSlack) {
			t.Fatalf("%d tokens define a %d-entry table", n, len(toks))
		}
		for s, id := range file.Model.Vocab {
			if id < 0 || id >= len(toks) {
				t.Fatalf("vocab %q id %d outside the %d-entry table", s, id, len(toks))
			}
			if got, ok := file.ID(s); !ok || got < 0 || got >= len(toks) {
				t.Fatalf("ID(%q) = %d, %v", s, got, ok)
			}
		}
		for _, a := range file.AddedTokens {
			if toks[a.ID] == "" && a.Content != "" && !addedTwice(file, a.ID) {
				t.Fatalf("added token %d %q missing from Tokens()", a.ID, a.Content)
			}
		}
		_, _ = file.SpecialIDs(), file.IsByteLevel()
	})
}

func addedTwice(f *File, id int) bool {
	n := 0
	for _, a := range f.AddedTokens {
		if a.ID == id {
			n++
		}
	}
	return n > 1
}

// FuzzParseConfig: tokenizer_config.json bytes parse or fail, never panic.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`{"bos_token": "<s>", "eos_token": {"content": "</s>"}, "add_bos_token": true, "chat_template": "{{ x }}"}`,
		`{"chat_template": [{"name": "tool_use", "template": "a"}, {"name": "default", "template": "b"}]}`,
		`{"added_tokens_decoder": {"1000000000": {"content": "<x>"}}}`, `null`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseConfig(b, "tokenizer_config.json")
		if err == nil && c == nil {
			t.Fatal("nil config without an error")
		}
	})
}
