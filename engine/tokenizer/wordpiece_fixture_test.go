package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Generated BERT-style tokenizers for the WordPiece tests: a vocabulary with
// "##" continuations, CJK ideographs, accented forms and the five BERT
// special tokens, in three configurations the library's own files use.
// Built deterministically, so the ids in testdata/wordpiece_golden.json stay
// valid.

// bertVocab lists the vocabulary in id order.
func bertVocab() []string {
	v := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
	for c := '!'; c <= '~'; c++ {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			v = append(v, string(c))
		}
	}
	// Letters and their continuations, except q and z: words with them
	// have no decomposition.
	for _, c := range "abcdefghijklmnoprstuvwxyABCDEFGHIJKLMNOPRSTUVWXY0123456789éïåöüßαβγδεικλνοσφηяиотпрвемжд" {
		if c == 'z' || c == 'q' {
			continue
		}
		v = append(v, string(c), "##"+string(c))
	}
	v = append(v,
		"the", "The", "un", "##aff", "##able", "play", "##er", "##ing", "##ed", "##s", "hello", "Hello", "world",
		"token", "##izer", "##ized", "don", "can", "it", "we", "they", "'", "##'", "n", "##t", "cafe", "café", "Café",
		"naive", "resume", "##sume", "angstrom", "istanbul", "super", "##cal", "##if", "##rag", "##il", "##istic",
		"ελληνικα", "σοφια", "привет", "мир", "strasse", "straße", "##ße", "fine", "ﬁ", "mask", "[", "]",
		"中", "国", "人", "我", "是", "日", "本", "の", "。", "한국어", "…", "“", "”", "—", "😀", "👍", "##🏽",
		"مرحبا", "हिन्दी", "ǆ", "ǅ", "ent", "<ent>")
	return v
}

type bertVariant struct {
	name                                string
	normalizer, preTokenizer, processor string
	decoder                             string
	maxChars                            int
}

// bertVariants: uncased (BertNormalizer defaults, as bert-base-uncased and
// all-MiniLM-L6-v2 ship), cased (bert-base-cased: no lower-casing, so no
// accent stripping either; BertProcessing; 20-character words), and a
// hand-built pipeline (Sequence of NFD, Lowercase; WhitespaceSplit and
// Punctuation; no decoder).
var bertVariants = []bertVariant{
	{name: "uncased",
		normalizer:   `{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":null,"lowercase":true}`,
		preTokenizer: `{"type":"BertPreTokenizer"}`,
		processor: `{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"[CLS]","type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"[SEP]","type_id":0}}],` +
			`"pair":[{"SpecialToken":{"id":"[CLS]","type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"[SEP]","type_id":0}},{"Sequence":{"id":"B","type_id":1}},{"SpecialToken":{"id":"[SEP]","type_id":1}}],` +
			`"special_tokens":{"[CLS]":{"id":"[CLS]","ids":[2],"tokens":["[CLS]"]},"[SEP]":{"id":"[SEP]","ids":[3],"tokens":["[SEP]"]}}}`,
		decoder:  `{"type":"WordPiece","prefix":"##","cleanup":true}`,
		maxChars: 100},
	{name: "cased",
		normalizer:   `{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":null,"lowercase":false}`,
		preTokenizer: `{"type":"BertPreTokenizer"}`,
		processor:    `{"type":"BertProcessing","sep":["[SEP]",3],"cls":["[CLS]",2]}`,
		decoder:      `{"type":"WordPiece","prefix":"##","cleanup":false}`,
		maxChars:     20},
	{name: "sequence",
		normalizer:   `{"type":"Sequence","normalizers":[{"type":"NFD"},{"type":"Lowercase"},{"type":"StripAccents"},{"type":"NFC"}]}`,
		preTokenizer: `{"type":"Sequence","pretokenizers":[{"type":"WhitespaceSplit"},{"type":"Punctuation","behavior":"Isolated"}]}`,
		processor:    `null`,
		decoder:      `null`,
		maxChars:     100},
}

// bertTokenizerJSON renders a variant as tokenizer.json text.
func bertTokenizerJSON(v bertVariant) string {
	var vocab []string // bertVocab without repeats: ids are dense
	seen := map[string]bool{}
	for _, s := range bertVocab() {
		if !seen[s] {
			seen[s] = true
			vocab = append(vocab, s)
		}
	}
	var vb strings.Builder
	vb.WriteByte('{')
	for i, k := range vocab {
		if i > 0 {
			vb.WriteByte(',')
		}
		kj, _ := json.Marshal(k)
		vb.Write(kj)
		vb.WriteString(":" + itoa(i))
	}
	vb.WriteByte('}')
	n := len(vocab)
	added := func(id int, content string, singleWord, lstrip, rstrip, normalized, special bool) string {
		b, _ := json.Marshal(map[string]any{"id": id, "content": content, "single_word": singleWord, "lstrip": lstrip,
			"rstrip": rstrip, "normalized": normalized, "special": special})
		return string(b)
	}
	addedTokens := []string{
		added(0, "[PAD]", false, false, false, false, true), added(1, "[UNK]", false, false, false, false, true),
		added(2, "[CLS]", false, false, false, false, true), added(3, "[SEP]", false, false, false, false, true),
		added(4, "[MASK]", false, false, false, false, true),
		added(n, "<Ent>", false, false, false, true, false),  // matched after normalization
		added(n+1, "[sw]", true, false, false, false, false), // only as a word of its own
		added(n+2, "<ls>", false, true, true, false, true),   // eats the spaces beside it
	}
	return `{"version":"1.0","truncation":null,"padding":null,"added_tokens":[` + strings.Join(addedTokens, ",") + `],` +
		`"normalizer":` + v.normalizer + `,"pre_tokenizer":` + v.preTokenizer + `,"post_processor":` + v.processor +
		`,"decoder":` + v.decoder + `,"model":{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##",` +
		`"max_input_chars_per_word":` + itoa(v.maxChars) + `,"vocab":` + vb.String() + `}}`
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// writeBertTokenizer writes a variant (and a tokenizer_config.json) into
// a fresh directory and returns the directory.
func writeBertTokenizer(t testing.TB, v bertVariant) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(bertTokenizerJSON(v)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := `{"tokenizer_class":"BertTokenizer","model_max_length":512,"cls_token":"[CLS]","sep_token":"[SEP]","unk_token":"[UNK]","pad_token":"[PAD]","mask_token":"[MASK]"}`
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// wordPieceCorpus is the agreement corpus: accents, CJK, punctuation,
// control characters, long words, unknown pieces, special and added tokens
// in the text, empty strings.
var wordPieceCorpus = []string{
	"", " ", "\t\n", "Hello, world!", "hello world", "HELLO WORLD", "The unaffable player's playing.",
	"café Café CAFÉ cafe\u0301", "naïve résumé Résumé", "Ångström", "İstanbul ISTANBUL", "ﬁne ﬁ",
	"中国人", "我是中国人。", "日本の人", "한국어 韓國", "𠀀𪜀 CJK extension B/C",
	"a\x00b\x01c\u200bd\ufffde\u0085f", "tab\there\nnewline\r\nend\x0bvt\x0cff", "\u00a0nbsp\u3000ideographic\u2028ls",
	"[CLS] hello [SEP]", "[MASK]", "hello[MASK]world", "[mask] lower", "[MASK][MASK]", "[UNK] [PAD]",
	"x <ENT> y", "x<Ent>y", "<ent>", "a [sw] b", "a[sw]b", "[sw]", "x[sw] y", "a   <ls>   b", "<ls>", "a <ls><ls> b",
	strings.Repeat("supercalifragilisticexpialidocious", 4), strings.Repeat("a", 20), strings.Repeat("a", 21),
	strings.Repeat("a", 100), strings.Repeat("a", 101), strings.Repeat("é", 101),
	"unknownzzz qqq playqing", "don't can't I'm we've they're it's",
	"3.14 + 2 = 5.14 $100 #tag @user ~home^2 `tick` a|b {c} \\d",
	"emoji 😀 🥰 👍🏽", "Ελληνικά ΣΟΦΙΑ σοφία", "привет МИР Привет", "ß straße STRASSE",
	"\u0301leading mark", "x\u2e43y", "a\u0890b", "e\u0898f", "u\u166dv",
	"مرحبا", "हिन्दी", "…“quoted”—dash", "tokenizer tokenizers tokenized", "  leading and trailing  ",
	"ǅ ǆ Ǆ", "playing played plays player players", "The player's token, the tokenizer's play! Don't; it's un-aff-able?",
}

// wordPiecePairs are the text pairs checked for ids and token types.
var wordPiecePairs = [][2]string{{"hello world", "The player."}, {"", ""}, {"café", "中国"}, {"[MASK] a", "b [SEP]"}}
