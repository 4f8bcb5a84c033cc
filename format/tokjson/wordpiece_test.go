package tokjson

import (
	"reflect"
	"strings"
	"testing"
)

func TestWordPieceBlocks(t *testing.T) {
	f, err := Parse([]byte(`{"added_tokens":[{"id":0,"content":"[CLS]","special":true},{"id":1,"content":"[SEP]","special":true}],
		"normalizer":{"type":"Sequence","normalizers":[{"type":"BertNormalizer","clean_text":false,"handle_chinese_chars":true,"strip_accents":null,"lowercase":true},{"type":"NFC"}]},
		"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"WhitespaceSplit"},{"type":"Punctuation"}]},
		"post_processor":{"type":"BertProcessing","sep":["[SEP]",1],"cls":["[CLS]",0]},
		"decoder":{"type":"WordPiece","prefix":"##","cleanup":false},
		"model":{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##","max_input_chars_per_word":50,"vocab":{"[CLS]":0,"[SEP]":1,"[UNK]":2}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if m := f.Model.MaxInputCharsPerWord; m == nil || *m != 50 {
		t.Errorf("max_input_chars_per_word %v", m)
	}
	norm, err := f.NormalizerSteps()
	want := []Step{{Type: "BertNormalizer", HandleChineseChars: true, Lowercase: true, Behavior: "Isolated"}, {Type: "NFC", Behavior: "Isolated"}}
	if err != nil || !reflect.DeepEqual(norm, want) {
		t.Errorf("normalizer %+v %v", norm, err)
	}
	pre, err := f.PreTokenizerSteps()
	if err != nil || len(pre) != 2 || pre[0].Type != "WhitespaceSplit" || pre[1].Type != "Punctuation" || pre[1].Behavior != "Isolated" {
		t.Errorf("pre_tokenizer %+v %v", pre, err)
	}
	tpl, err := f.Template()
	if err != nil || len(tpl.Single) != 3 || tpl.Single[0].IDs[0] != 0 || tpl.Single[2].IDs[0] != 1 ||
		len(tpl.Pair) != 5 || tpl.Pair[3].Sequence != "B" || tpl.Pair[3].TypeID != 1 || tpl.Pair[4].TypeID != 1 {
		t.Errorf("template %+v %v", tpl, err)
	}
	if prefix, cleanup, ok := f.WordPieceDecoder(); prefix != "##" || cleanup || !ok {
		t.Errorf("decoder %q %v %v", prefix, cleanup, ok)
	}
}

// Sequences nested past the limit are refused, not recursed into.
func TestStepsNestingBounded(t *testing.T) {
	doc := strings.Repeat(`{"type":"Sequence","normalizers":[`, 100) + `{"type":"NFC"}` + strings.Repeat(`]}`, 100)
	f := &File{Normalizer: []byte(doc)}
	if _, err := f.NormalizerSteps(); err == nil || !strings.Contains(err.Error(), "nested over") {
		t.Fatalf("got %v", err)
	}
}

func TestModelMaxLength(t *testing.T) {
	for doc, want := range map[string]int{`{"model_max_length":512}`: 512, `{"model_max_length":1e30}`: 0,
		`{"model_max_length":1000000000000000019884624838656}`: 0, `{}`: 0, `{"model_max_length":-1}`: 0} {
		c, err := parseConfig([]byte(doc), "tokenizer_config.json")
		if err != nil || c.ModelMaxLength != want {
			t.Errorf("%s: %d %v, want %d", doc, c.ModelMaxLength, err, want)
		}
	}
}
