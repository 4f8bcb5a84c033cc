package grammar

import (
	"encoding/json"
	"slices"
	"testing"
)

// Any schema compiles or fails with a SchemaError, never panics; a
// document the grammar accepts is JSON; the mask over a small vocabulary
// equals token-by-token checks along the document's bytes.
func FuzzCompileAndMatch(f *testing.F) {
	for _, s := range testSchemas {
		f.Add([]byte(s), []byte(`{"name":"a","age":1}`))
	}
	f.Add([]byte(`{"type":"object"}`), []byte(`{"a":[1,{"b":"\u00e9"}]}`))
	var pieces [][]byte
	for b := range 256 {
		pieces = append(pieces, []byte{byte(b)})
	}
	for _, s := range []string{`{"`, `":`, `",`, `"}`, `null`, `true`, "12", `\u`, " \"", "\n  "} {
		pieces = append(pieces, []byte(s))
	}
	v := NewVocab(append(pieces, nil))
	eos := []int{len(pieces)}
	f.Fuzz(func(t *testing.T, schema, doc []byte) {
		g, err := Compile(schema)
		if err != nil {
			if _, ok := err.(*SchemaError); !ok {
				t.Fatalf("%T %v", err, err)
			}
			return
		}
		if g.Match(doc) && !json.Valid(doc) {
			t.Fatalf("accepted %q, which is not JSON", doc)
		}
		x := NewMatcher(g, v, eos)
		for _, b := range doc[:min(len(doc), 64)] {
			if got, want := x.Allowed(), allowedByBruteForce(x); !slices.Equal(got, want) {
				t.Fatalf("mask differs from token checks: %s", diffIDs(v.pieces, got, want))
			}
			if x.Accept(int(b)) != nil {
				return
			}
		}
	})
}
