package tokjson

import (
	"encoding/json"
	"fmt"
)

// The typed forms of the normalizer, pre_tokenizer, post_processor and
// decoder blocks a WordPiece (BERT-family) tokenizer.json carries, as the
// `tokenizers` library serializes them (see docs/engine.md, Tokenizers).

// Step is one normalizer or pre-tokenizer, with Sequences flattened.
type Step struct {
	Type string
	// BertNormalizer's switches. StripAccents nil follows Lowercase.
	CleanText, HandleChineseChars, Lowercase bool
	StripAccents                             *bool
	// Behavior is Punctuation's split behavior ("Isolated" when absent).
	Behavior string
}

// stepJSON is a node as serialized; pointers tell absent from false.
type stepJSON struct {
	Type               string            `json:"type"`
	Normalizers        []json.RawMessage `json:"normalizers"`
	Pretokenizers      []json.RawMessage `json:"pretokenizers"`
	CleanText          *bool             `json:"clean_text"`
	HandleChineseChars *bool             `json:"handle_chinese_chars"`
	StripAccents       *bool             `json:"strip_accents"`
	Lowercase          *bool             `json:"lowercase"`
	Behavior           string            `json:"behavior"`
}

// maxStepDepth bounds Sequence nesting, which a hostile file could make
// deep enough to exhaust the stack.
const maxStepDepth = 16

// NormalizerSteps flattens the normalizer block (nil when there is none).
func (f *File) NormalizerSteps() ([]Step, error) {
	return flattenSteps(f.Normalizer, "normalizer", 0)
}

// PreTokenizerSteps flattens the pre_tokenizer block (nil when there is none).
func (f *File) PreTokenizerSteps() ([]Step, error) {
	return flattenSteps(f.PreTokenizer, "pre_tokenizer", 0)
}

func flattenSteps(raw json.RawMessage, where string, depth int) ([]Step, error) {
	if raw == nil {
		return nil, nil
	}
	if depth > maxStepDepth {
		return nil, fmt.Errorf("%s: Sequences nested over %d deep (the file is corrupt or hostile: restore the original tokenizer.json)", where, maxStepDepth)
	}
	var n stepJSON
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	if n.Type == "Sequence" {
		var out []Step
		kids := n.Normalizers
		if kids == nil {
			kids = n.Pretokenizers
		}
		for i, k := range kids {
			s, err := flattenSteps(k, fmt.Sprintf("%s.Sequence[%d]", where, i), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, s...)
		}
		return out, nil
	}
	orTrue := func(b *bool) bool { return b == nil || *b } // the library's defaults
	s := Step{Type: n.Type, Behavior: n.Behavior, StripAccents: n.StripAccents}
	if n.Type == "BertNormalizer" {
		s.CleanText, s.HandleChineseChars, s.Lowercase = orTrue(n.CleanText), orTrue(n.HandleChineseChars), orTrue(n.Lowercase)
	}
	if s.Behavior == "" {
		s.Behavior = "Isolated"
	}
	return []Step{s}, nil
}

// Template is a post-processor's layout of special tokens around one
// sequence (Single) or two (Pair): TemplateProcessing, or BertProcessing's
// fixed [CLS] A [SEP] (B [SEP]).
type Template struct {
	Single, Pair []TemplatePiece
}

// TemplatePiece is a run of special-token ids or a sequence slot ("A"/"B"),
// with the token type id its tokens get.
type TemplatePiece struct {
	Sequence string // "A" or "B"; "" for special tokens
	Special  string // the special token's name
	IDs      []int
	TypeID   int
}

// Template reads the post_processor block: nil, nil when there is none;
// an error naming the type when it is one the engine does not lay out.
func (f *File) Template() (*Template, error) {
	if f.PostProcessor == nil {
		return nil, nil
	}
	var pp struct {
		Type          string         `json:"type"`
		Single        []templateJSON `json:"single"`
		Pair          []templateJSON `json:"pair"`
		SpecialTokens map[string]struct {
			IDs []int `json:"ids"`
		} `json:"special_tokens"`
	}
	if err := json.Unmarshal(f.PostProcessor, &pp); err != nil {
		return nil, fmt.Errorf("post_processor: %v", err)
	}
	switch pp.Type {
	case "BertProcessing":
		var bp struct {
			Sep, Cls [2]json.RawMessage
		}
		if err := json.Unmarshal(f.PostProcessor, &bp); err != nil {
			return nil, fmt.Errorf("post_processor BertProcessing: %v", err)
		}
		cls, err := namedID(bp.Cls, "cls")
		if err != nil {
			return nil, err
		}
		sep, err := namedID(bp.Sep, "sep")
		if err != nil {
			return nil, err
		}
		return &Template{
			Single: []TemplatePiece{cls, {Sequence: "A"}, sep},
			Pair:   []TemplatePiece{cls, {Sequence: "A"}, sep, {Sequence: "B", TypeID: 1}, {Special: sep.Special, IDs: sep.IDs, TypeID: 1}},
		}, nil
	case "TemplateProcessing":
		conv := func(list []templateJSON, field string) ([]TemplatePiece, error) {
			out := make([]TemplatePiece, 0, len(list))
			for i, p := range list {
				switch {
				case p.Sequence != nil:
					out = append(out, TemplatePiece{Sequence: p.Sequence.ID, TypeID: p.Sequence.TypeID})
				case p.SpecialToken != nil:
					st, ok := pp.SpecialTokens[p.SpecialToken.ID]
					if !ok {
						return nil, fmt.Errorf("post_processor.%s[%d]: special token %q is not in special_tokens (restore the original tokenizer.json)", field, i, p.SpecialToken.ID)
					}
					out = append(out, TemplatePiece{Special: p.SpecialToken.ID, IDs: st.IDs, TypeID: p.SpecialToken.TypeID})
				default:
					return nil, fmt.Errorf("post_processor.%s[%d]: neither Sequence nor SpecialToken", field, i)
				}
			}
			return out, nil
		}
		single, err := conv(pp.Single, "single")
		if err != nil {
			return nil, err
		}
		pair, err := conv(pp.Pair, "pair")
		if err != nil {
			return nil, err
		}
		return &Template{Single: single, Pair: pair}, nil
	}
	return nil, fmt.Errorf("post_processor %q is not supported for this model (the engine lays out TemplateProcessing and BertProcessing)", pp.Type)
}

type templateJSON struct {
	Sequence *struct {
		ID     string `json:"id"`
		TypeID int    `json:"type_id"`
	} `json:"Sequence"`
	SpecialToken *struct {
		ID     string `json:"id"`
		TypeID int    `json:"type_id"`
	} `json:"SpecialToken"`
}

// namedID reads BertProcessing's ["[CLS]", 101] pairs.
func namedID(p [2]json.RawMessage, field string) (TemplatePiece, error) {
	var name string
	var id int
	if json.Unmarshal(p[0], &name) != nil || json.Unmarshal(p[1], &id) != nil {
		return TemplatePiece{}, fmt.Errorf("post_processor BertProcessing.%s is not a [token, id] pair (restore the original tokenizer.json)", field)
	}
	return TemplatePiece{Special: name, IDs: []int{id}}, nil
}

// WordPieceDecoder reads a decoder of type WordPiece: its continuing
// prefix and whether it cleans up spaces before punctuation. ok is false
// for any other decoder.
func (f *File) WordPieceDecoder() (prefix string, cleanup, ok bool) {
	var d struct {
		Type    string  `json:"type"`
		Prefix  *string `json:"prefix"`
		Cleanup *bool   `json:"cleanup"`
	}
	if f.Decoder == nil || json.Unmarshal(f.Decoder, &d) != nil || d.Type != "WordPiece" {
		return "", false, false
	}
	prefix, cleanup = "##", true
	if d.Prefix != nil {
		prefix = *d.Prefix
	}
	if d.Cleanup != nil {
		cleanup = *d.Cleanup
	}
	return prefix, cleanup, true
}
