package tokenizer

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// piece is one vocabulary entry of a generated SentencePiece vocabulary.
type piece struct {
	text  string
	score float32
	typ   int32 // 0: normal
}

// spmOpts are the GGUF keys a test vocabulary sets.
type spmOpts struct {
	noBytes        bool  // leave out the 256 <0xXX> byte tokens
	addSpacePrefix *bool // nil: absent (llama.cpp's default, true)
	addEOS         bool
}

// spmVocab is <unk> <s> </s>, the 256 byte tokens (ids 3..258) unless
// left out, then the pieces given, as llama.cpp's converter lays out a
// Llama 2 vocabulary.
func spmVocab(o spmOpts, pieces ...piece) GGUFVocab {
	v := GGUFVocab{Model: "llama", BOS: 1, EOS: 2, Unk: 0, AddSpacePrefix: o.addSpacePrefix, AddEOS: &o.addEOS}
	add := func(text string, score float32, typ int32) {
		v.Tokens, v.Scores, v.Types = append(v.Tokens, text), append(v.Scores, score), append(v.Types, typ)
	}
	add("<unk>", 0, typeUnknown)
	add("<s>", 0, typeControl)
	add("</s>", 0, typeControl)
	if !o.noBytes {
		for b := range 256 {
			add(fmt.Sprintf("<0x%02X>", b), 0, typeByte)
		}
	}
	for _, p := range pieces {
		add(p.text, p.score, max(p.typ, typeNormal))
	}
	return v
}

func newSPM(t testing.TB, v GGUFVocab) *Tokenizer {
	t.Helper()
	tk, err := FromGGUF(v)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// encodeTexts encodes and names the ids by their vocabulary text, so that
// the expectations below read as the pieces a hand check gives.
func encodeTexts(tk *Tokenizer, v GGUFVocab, text string, addSpecial bool) []string {
	var out []string
	for _, id := range tk.Encode(text, addSpecial) {
		out = append(out, v.Tokens[id])
	}
	return out
}

var off, on = new(bool), func() *bool { b := true; return &b }()

// Each case is checked by hand against llama.cpp's algorithm: pairs that
// spell a piece are queued by score (ties: the pair further left first),
// the best is merged, and its new neighbours are queued.
func TestSPMMergesByScore(t *testing.T) {
	cases := []struct {
		name   string
		pieces []piece
		text   string
		want   []string
	}{
		// "ab" and "bc" score the same: the pair further left wins.
		{"tie goes left", []piece{{"a", 0, 0}, {"b", 0, 0}, {"c", 0, 0}, {"ab", -1, 0}, {"bc", -1, 0}}, "abc", []string{"ab", "c"}},
		// The better score wins wherever it is.
		{"score beats position", []piece{{"a", 0, 0}, {"b", 0, 0}, {"c", 0, 0}, {"ab", -1, 0}, {"bc", -0.5, 0}}, "abc", []string{"a", "bc"}},
		// aa aa a: (0,1) merges first; (1,2) is then stale; (2,3) merges;
		// "aaa" is no piece, so nothing more.
		{"run, ties left to right", []piece{{"a", 0, 0}, {"aa", -1, 0}}, "aaaaa", []string{"aa", "aa", "a"}},
		// The two "aa" made above are adjacent and spell "aaaa", which is
		// queued when the second one is made, though it scores lower.
		{"merged pair queued again", []piece{{"a", 0, 0}, {"aa", -1, 0}, {"aaaa", -2, 0}}, "aaaaa", []string{"aaaa", "a"}},
		// el (-1) first; then "he" is stale, "hel" (-4) is queued and
		// merged; "hell" is no piece.
		{"stale pairs skipped", []piece{{"h", 0, 0}, {"e", 0, 0}, {"l", 0, 0}, {"o", 0, 0}, {"he", -3, 0}, {"el", -1, 0}, {"ll", -2, 0}, {"hel", -4, 0}}, "hello", []string{"hel", "l", "o"}},
		// A long piece is not taken greedily: "abcd" is never spelled,
		// because "bc" (the best pair) splits it.
		{"no longest match", []piece{{"a", 0, 0}, {"b", 0, 0}, {"c", 0, 0}, {"d", 0, 0}, {"ab", -2, 0}, {"cd", -2, 0}, {"bc", -1, 0}, {"abcd", 0, 0}}, "abcd", []string{"a", "bc", "d"}},
	}
	for _, c := range cases {
		v := spmVocab(spmOpts{addSpacePrefix: off}, c.pieces...)
		if got := encodeTexts(newSPM(t, v), v, c.text, false); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q → %q, want %q", c.name, c.text, got, c.want)
		}
	}
}

// Spaces become ▁ and, with add_space_prefix, one goes before the text;
// leading, trailing and repeated spaces are pieces like any other.
func TestSPMSpaces(t *testing.T) {
	pieces := []piece{{"▁", -1, 0}, {"a", -1, 0}, {"b", -1, 0}, {"▁a", -2, 0}, {"▁b", -2, 0}, {"▁▁", -3, 0}}
	cases := []struct {
		prefix *bool
		text   string
		want   []string
	}{
		{nil, "a", []string{"▁a"}}, // add_space_prefix absent: on, as llama.cpp reads it
		{on, "a", []string{"▁a"}},
		{off, "a", []string{"a"}},
		{off, " a", []string{"▁a"}},
		// ▁▁a: "▁a" (-2) beats "▁▁" (-3), which is then stale.
		{on, " a", []string{"▁", "▁a"}},
		// ▁a▁▁b: (0,1) and (3,4) tie at -2, left first; "▁▁" is stale.
		{on, "a  b", []string{"▁a", "▁", "▁b"}},
		{on, "a ", []string{"▁a", "▁"}},
		{off, "  ", []string{"▁▁"}},
		{on, "", nil},
		// Only spaces are escaped: a tab or newline stays itself (here
		// byte tokens, having no piece).
		{off, "a\tb\n", []string{"a", "<0x09>", "b", "<0x0A>"}},
	}
	for _, c := range cases {
		v := spmVocab(spmOpts{addSpacePrefix: c.prefix}, pieces...)
		if got := encodeTexts(newSPM(t, v), v, c.text, false); !slices.Equal(got, c.want) {
			t.Errorf("add_space_prefix %v: %q → %q, want %q", c.prefix == nil || *c.prefix, c.text, got, c.want)
		}
	}
}

// A character that spells no piece falls back to its UTF-8 bytes as
// <0xXX> tokens; without byte tokens it is unk, one per character.
func TestSPMByteFallback(t *testing.T) {
	pieces := []piece{{"a", 0, 0}, {"é", 0, 0}}
	v := spmVocab(spmOpts{addSpacePrefix: off}, pieces...)
	tk := newSPM(t, v)
	cases := []struct {
		text string
		want []string
	}{
		{"aé", []string{"a", "é"}},
		{"ü", []string{"<0xC3>", "<0xBC>"}},
		{"a€", []string{"a", "<0xE2>", "<0x82>", "<0xAC>"}},
		{"🙂", []string{"<0xF0>", "<0x9F>", "<0x99>", "<0x82>"}},
		// Invalid UTF-8 is split as llama.cpp splits it: a lead byte
		// claims its sequence's length whatever follows, so "\xE2a" is
		// one symbol and the "a" inside it goes out as a byte.
		{"a\xbfa", []string{"a", "<0xBF>", "a"}},
		{"\xe2a", []string{"<0xE2>", "<0x61>"}},
		{"a\xe2", []string{"a", "<0xE2>"}},
	}
	for _, c := range cases {
		if got := encodeTexts(tk, v, c.text, false); !slices.Equal(got, c.want) {
			t.Errorf("%q → %q, want %q", c.text, got, c.want)
		}
		if utf8.ValidString(c.text) {
			if back := tk.Decode(tk.Encode(c.text, false)); back != c.text {
				t.Errorf("Decode(Encode(%q)) = %q", c.text, back)
			}
		}
	}
	v = spmVocab(spmOpts{addSpacePrefix: off, noBytes: true}, pieces...)
	if got, want := encodeTexts(newSPM(t, v), v, "aüa€€", false), []string{"a", "<unk>", "a", "<unk>", "<unk>"}; !slices.Equal(got, want) {
		t.Errorf("without byte tokens: %q, want %q", got, want)
	}
}

// Added tokens are matched whole before the SPM pass: user-defined ones
// always, control and unknown ones too (the engine parses special tokens
// in prompts, as llama-cli does). Longer ones are matched first, over the
// whole text, as llama.cpp does; raw text after an added token gets the
// space prefix again.
func TestSPMAddedTokens(t *testing.T) {
	v := spmVocab(spmOpts{}, piece{"▁", -1, 0}, piece{"a", -1, 0}, piece{"▁a", -2, 0}, piece{"x", -1, 0}, piece{"b", -1, 0}, piece{"c", -1, 0},
		piece{"<x>", 0, typeUserDefined}, piece{"xa", 0, typeUserDefined}, piece{"abc", 0, typeUserDefined}, piece{"▁u▁", 0, typeUserDefined})
	tk := newSPM(t, v)
	cases := []struct {
		text       string
		addSpecial bool
		want       []string
	}{
		{"a<x>a", false, []string{"▁a", "<x>", "▁a"}},
		{"<x>", false, []string{"<x>"}},
		{"<s>a</s>", false, []string{"<s>", "▁a", "</s>"}},
		{"<s>a", true, []string{"<s>", "<s>", "▁a"}}, // a second BOS, as llama.cpp gives (and warns)
		{"<unk>", false, []string{"<unk>"}},
		// "abc" (longer) is taken over the whole text before "xa" is
		// looked for, so "xa" never forms; the earliest-match rule of
		// tokenizer.json added tokens would give xa b c.
		{"xabc", false, []string{"▁", "x", "abc"}},
		{"▁u▁", false, []string{"▁u▁"}},
	}
	for _, c := range cases {
		if got := encodeTexts(tk, v, c.text, c.addSpecial); !slices.Equal(got, c.want) {
			t.Errorf("%q → %q, want %q", c.text, got, c.want)
		}
	}
	// Decoding: user-defined text verbatim (▁ stays), control tokens
	// dropped.
	if got := tk.Decode(tk.Encode("a<x>a</s>▁u▁", false)); got != "a<x> a▁u▁" {
		t.Errorf("decode: %q", got)
	}
}

// BOS and EOS follow add_bos / add_eos; missing ids take llama.cpp's
// defaults for llama vocabularies (BOS 1, EOS 2, unk 0).
func TestSPMSpecialIDs(t *testing.T) {
	v := spmVocab(spmOpts{addEOS: true}, piece{"▁a", -1, 0}, piece{"▁", -2, 0}, piece{"a", -2, 0})
	tk := newSPM(t, v)
	if got, want := encodeTexts(tk, v, "a", true), []string{"<s>", "▁a", "</s>"}; !slices.Equal(got, want) {
		t.Errorf("add_eos: %q, want %q", got, want)
	}
	if got := encodeTexts(tk, v, "", true); !slices.Equal(got, []string{"<s>", "</s>"}) {
		t.Errorf("empty text with specials: %q", got)
	}
	if got := tk.Encode("a", false); len(got) != 1 {
		t.Errorf("no specials: %v", got)
	}
	v.AddEOS, v.AddBOS = nil, off
	v.BOS, v.EOS, v.Unk = -1, -1, -1
	tk = newSPM(t, v)
	if tk.BOS() != 1 || !slices.Equal(tk.EOS(), []int{2}) || tk.unk != 0 || tk.AddsBOS() || tk.BOSToken() != "<s>" || tk.EOSToken() != "</s>" {
		t.Errorf("defaults: bos %d eos %v unk %d addBOS %v", tk.BOS(), tk.EOS(), tk.unk, tk.AddsBOS())
	}
	if got := encodeTexts(tk, v, "a", true); !slices.Equal(got, []string{"▁a"}) {
		t.Errorf("add_bos false: %q", got)
	}
}

// Decoding as llama.cpp's detokenize: ▁ is a space, byte tokens are
// reassembled into UTF-8, control and unused tokens print nothing, and
// the first token loses the leading space the encoder added — unless the
// first token is BOS: llama.cpp then drops the BOS and keeps the space.
func TestSPMDecode(t *testing.T) {
	v := spmVocab(spmOpts{}, piece{"▁a", -1, 0}, piece{"b", -1, 0}, piece{"[PAD9]", 0, typeUnused})
	tk := newSPM(t, v)
	id := func(s string) int { return slices.Index(v.Tokens, s) }
	cases := []struct {
		ids  []int
		want string
	}{
		{[]int{id("▁a"), id("b")}, "ab"},
		{[]int{id("<s>"), id("▁a"), id("b")}, " ab"},
		{[]int{id("b"), id("▁a")}, "b a"},
		{[]int{id("▁a"), id("</s>"), id("▁a")}, "a a"},
		{[]int{id("<0xC3>"), id("<0xA9>"), id("▁a")}, "é a"},
		{[]int{id("<0xC3>")}, "\uFFFD"},
		{[]int{id("[PAD9]"), id("b")}, "b"},
		{nil, ""},
	}
	for _, c := range cases {
		if got := tk.Decode(c.ids); got != c.want {
			t.Errorf("Decode(%v) = %q, want %q", c.ids, got, c.want)
		}
	}
	if string(tk.Piece(id("▁a"))) != " a" || string(tk.Piece(id("<0x41>"))) != "A" || !tk.IsSpecial(id("</s>")) || tk.IsSpecial(id("b")) {
		t.Errorf("pieces: %q %q", tk.Piece(id("▁a")), tk.Piece(id("<0x41>")))
	}
}

// A vocabulary llama.cpp would refuse is refused with what to do.
func TestSPMRefusesShortScores(t *testing.T) {
	v := spmVocab(spmOpts{}, piece{"a", 0, 0})
	v.Scores = v.Scores[:10]
	_, err := FromGGUF(v)
	if err == nil || !strings.Contains(err.Error(), "tokenizer.ggml.scores holds 10 scores for 260 tokens") || !strings.Contains(err.Error(), "convert the model again") {
		t.Fatalf("%v", err)
	}
}
