package tokenizer

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/format/tokjson"
)

// loadBert loads a generated variant through the public entry point.
func loadBert(t *testing.T, name string) *Tokenizer {
	t.Helper()
	for _, v := range bertVariants {
		if v.name == name {
			tok, err := Load(writeBertTokenizer(t, v))
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}
	}
	t.Fatalf("no variant %q", name)
	return nil
}

// pieces spells ids as vocabulary entries, for readable expectations.
func pieces(tok *Tokenizer, ids []int) string {
	var out []string
	for _, id := range ids {
		out = append(out, string(tok.Piece(id)))
	}
	return strings.Join(out, " ")
}

// The WordPiece rules, spelled out on the generated vocabulary (these
// cases are also in the corpus the Hugging Face reference checks).
func TestWordPieceRules(t *testing.T) {
	tok := loadBert(t, "uncased")
	for _, c := range []struct{ text, want string }{
		{"The unaffable player", "[CLS] the un ##aff ##able play ##er [SEP]"}, // longest match first, ## continuations
		{"Café NAÏVE", "[CLS] cafe naive [SEP]"},                              // lower-cased, accents stripped
		{"我是中国人。", "[CLS] 我 是 中 国 人 。 [SEP]"},                                 // every CJK ideograph a word
		{"playqing zzz", "[CLS] [UNK] [UNK] [SEP]"},                           // no decomposition: one [UNK] per word
		{"hello[MASK]world", "[CLS] hello [MASK] world [SEP]"},                // special tokens found before normalization
		{"a\x00b\u200bc\tplay", "[CLS] a ##b ##c play [SEP]"},                 // control characters dropped, tab a space
		{strings.Repeat("a", 101), "[CLS] [UNK] [SEP]"},                       // over max_input_chars_per_word
		{"x <ENT> y", "[CLS] x <Ent> y [SEP]"},                                // a normalized added token matches lower-cased
		{"", "[CLS] [SEP]"},
	} {
		if got := pieces(tok, tok.Encode(c.text, true)); got != c.want {
			t.Errorf("%q: got %q, want %q", c.text, got, c.want)
		}
	}
	if got := tok.Decode(tok.Encode("The player's tokenizer, hello!", true)); got != "the player ' s tokenizer, hello!" {
		t.Errorf("decode: %q", got)
	}
	if !tok.AddsBOS() || tok.BOS() != 2 || tok.BOSToken() != "[CLS]" || tok.ModelMaxLength() != 512 {
		t.Errorf("BOS %d %v %q, max length %d", tok.BOS(), tok.AddsBOS(), tok.BOSToken(), tok.ModelMaxLength())
	}
	pair := "The player."
	ids, types, err := tok.EncodeTyped(context.Background(), "hello world", &pair, true)
	if err != nil || pieces(tok, ids) != "[CLS] hello world [SEP] the play ##er . [SEP]" || !reflect.DeepEqual(types, []int{0, 0, 0, 0, 1, 1, 1, 1, 1}) {
		t.Errorf("pair: %q %v %v", pieces(tok, ids), types, err)
	}
	ids, types, err = tok.EncodeTyped(context.Background(), "hello", nil, true)
	if err != nil || len(ids) != 3 || !reflect.DeepEqual(types, []int{0, 0, 0}) {
		t.Errorf("single typed: %v %v %v", ids, types, err)
	}
}

// A cased BERT keeps case and accents: strip_accents null follows lowercase.
func TestWordPieceCased(t *testing.T) {
	tok := loadBert(t, "cased")
	if got := pieces(tok, tok.Encode("Hello Café", true)); got != "[CLS] Hello Café [SEP]" {
		t.Errorf("got %q", got)
	}
	if got := pieces(tok, tok.Encode(strings.Repeat("a", 21), false)); got != "[UNK]" { // its limit is 20
		t.Errorf("21 chars: %q", got)
	}
}

// A GGUF "bert" vocabulary (llama.cpp's phantom-space spelling) tokenizes
// as the tokenizer.json it was converted from, for an uncased model.
func TestWordPieceFromGGUF(t *testing.T) {
	f, err := tokjson.Load(filepath.Join(writeBertTokenizer(t, bertVariants[0]), "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := New(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := GGUFVocab{Model: "bert", BOS: -1, EOS: -1, Unk: 1, CLS: 2, SEP: 3}
	for id, s := range f.Tokens() {
		typ := int32(1)
		switch {
		case id < 5:
			typ = 3 // control, as the converter marks BERT's specials
		case strings.HasPrefix(s, "##"):
			s = s[2:]
		default:
			s = "▁" + s
		}
		v.Tokens, v.Types = append(v.Tokens, s), append(v.Types, typ)
	}
	got, err := FromGGUF(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range wordPieceCorpus {
		if strings.Contains(text, "<") || strings.Contains(text, "[sw]") {
			continue // added tokens with their own matching rules have no GGUF form
		}
		if g, w := got.Encode(text, true), want.Encode(text, true); !reflect.DeepEqual(g, w) {
			t.Errorf("%q: GGUF %v, tokenizer.json %v", text, g, w)
		}
	}
	if d := got.Decode(got.Encode("The unaffable player.", true)); d != "the unaffable player." {
		t.Errorf("decode %q", d)
	}
}

// Load refuses what it cannot tokenize as the library would, saying which
// field and how to fix it.
func TestWordPieceLoadErrors(t *testing.T) {
	base := bertTokenizerJSON(bertVariants[0])
	for _, c := range []struct{ name, from, to, want string }{
		{"no unk", `"unk_token":"[UNK]"`, `"unk_token":"[NOPE]"`, `model.unk_token "[NOPE]" is not in model.vocab`},
		{"hostile max chars", `"max_input_chars_per_word":100`, `"max_input_chars_per_word":1000000000`, "max_input_chars_per_word is 1000000000"},
		{"normalizer", `{"type":"BertNormalizer",`, `{"type":"Precompiled","x":1,`, `normalizer "Precompiled" is not supported`},
		{"pre-tokenizer", `{"type":"BertPreTokenizer"}`, `{"type":"Metaspace"}`, `pre_tokenizer "Metaspace"`},
		{"post-processor", `{"type":"TemplateProcessing",`, `{"type":"RobertaProcessing",`, `post_processor "RobertaProcessing" is not supported`},
		{"template token", `"special_tokens":{"[CLS]"`, `"special_tokens":{"[XLS]"`, `special token "[CLS]" is not in special_tokens`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(base, c.from) {
				t.Fatalf("fixture has no %s", c.from)
			}
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(strings.Replace(base, c.from, c.to, 1)), 0o644)
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "tokenizer.json") {
				t.Fatalf("got %v, want an error naming the file and %q", err, c.want)
			}
		})
	}
}

func TestSortedVocabLongest(t *testing.T) {
	v := newSortedVocab(map[string]int{"a": 1, "ab": 2, "abcd": 3, "b": 4, "é": 5})
	for _, c := range []struct {
		s     string
		n, id int
	}{{"abc", 2, 2}, {"abcd", 4, 3}, {"abcde", 4, 3}, {"x", 0, 0}, {"", 0, 0}, {"ba", 1, 4}, {"éa", 2, 5}, {"\xc3", 0, 0}} {
		if n, id := v.longest(c.s); n != c.n || id != c.id {
			t.Errorf("%q: got %d,%d want %d,%d", c.s, n, id, c.n, c.id)
		}
	}
}
