package grammar

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// testVocab is a small vocabulary with the shapes real ones have: every
// byte alone (byte-level BPE and SentencePiece byte fallback), JSON
// punctuation runs, words with and without a leading space, whitespace
// runs, digits, escapes, partial and whole UTF-8 sequences, and random
// mixtures of them. The last id is an EOS with no bytes.
func testVocab(r *rand.Rand, n int) [][]byte {
	var v [][]byte
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			v = append(v, []byte(s))
		}
	}
	for b := range 256 {
		add(string([]byte{byte(b)}))
	}
	frags := []string{`{"`, `":`, `",`, `"}`, `"]`, `}]`, `}}`, `,"`, `":"`, `": "`, `", "`, ` "`, `["`, `[{"`, `null`, `true`, `false`,
		`name`, `na`, `me`, `age`, `tags`, `kind`, `line`, `points`, `x`, `y`, `12`, `0.`, `.5`, `e+`, `E-`, `-1`, `00`, `\n`, `\"`,
		`\u00`, `\u`, `e9`, "中", "\xe4\xb8", "\xad", "😀", "\xf0\x9f", "é", ` the`, ` a`, `  `, "\n  ", "\n    ", "\t", `},{"`, `":[`, `":{"`, `"},`}
	for _, f := range frags {
		add(f)
	}
	for len(v) < n-1 {
		var b strings.Builder
		for range 1 + r.IntN(3) {
			b.WriteString(frags[r.IntN(len(frags))])
		}
		add(b.String())
	}
	return append(v, nil)
}

// allowedByBruteForce checks each token alone on a copy of the machine.
func allowedByBruteForce(x *Matcher) []uint64 {
	bits := make([]uint64, len(x.bits))
	for id, p := range x.v.pieces {
		if len(p) == 0 {
			continue
		}
		m := *x.m
		m.log, m.rec = nil, false
		ok := true
		for _, b := range p {
			if ok = m.step(b); !ok {
				break
			}
		}
		if ok {
			bits[id>>6] |= 1 << (id & 63)
		}
	}
	if x.m.canEnd() {
		for _, e := range x.eos {
			bits[e>>6] |= 1 << (e & 63)
		}
	}
	return bits
}

// The trie walk (with its string shortcuts) allows exactly the tokens
// that checked one by one continue the document, at every step of random
// generations; what the generations complete validates against the schema.
func TestAllowedIsExactAndGenerationsValidate(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pieces := testVocab(r, 3000)
	v := NewVocab(pieces)
	eos := []int{len(pieces) - 1}
	schemas := map[string]string{"object": ""}
	for k, s := range testSchemas {
		schemas[k] = s
	}
	for name, schema := range schemas {
		g := JSONObject()
		if schema != "" {
			var err error
			if g, err = Compile([]byte(schema)); err != nil {
				t.Fatal(err)
			}
		}
		complete := 0
		for walk := range 8 {
			x := NewMatcher(g, v, eos)
			var doc []byte
			for step := 0; step < 300; step++ {
				got := x.Allowed()
				want := allowedByBruteForce(x)
				if !slices.Equal(got, want) {
					t.Fatalf("%s walk %d after %q: the mask differs from token-by-token checks at %s", name, walk, doc, diffIDs(pieces, got, want))
				}
				var ids []int
				for id := range pieces {
					if got[id>>6]>>(id&63)&1 != 0 {
						ids = append(ids, id)
					}
				}
				if len(ids) == 0 {
					t.Fatalf("%s: no token allowed after %q", name, doc)
				}
				id := ids[r.IntN(len(ids))]
				if x.CanEnd() && r.IntN(3) == 0 {
					id = eos[0]
				}
				if err := x.Accept(id); err != nil {
					t.Fatalf("%s: allowed token refused: %v", name, err)
				}
				if id == eos[0] {
					break
				}
				doc = append(doc, pieces[id]...)
				if x.Done() {
					break
				}
			}
			if !x.CanEnd() {
				continue
			}
			complete++
			vschema := schema
			if vschema == "" {
				vschema = `{"type":"object"}`
			}
			if err := validates([]byte(vschema), doc); err != nil {
				t.Errorf("%s: generated %s, which does not validate: %v", name, doc, err)
			}
		}
		t.Logf("%s: %d of 8 random generations completed", name, complete)
	}
}

func diffIDs(pieces [][]byte, got, want []uint64) string {
	var out []string
	for id := range pieces {
		g, w := got[id>>6]>>(id&63)&1, want[id>>6]>>(id&63)&1
		if g != w && len(out) < 5 {
			out = append(out, fmt.Sprintf("%q (mask %d, check %d)", pieces[id], g, w))
		}
	}
	return strings.Join(out, ", ")
}

// EOS is allowed exactly when the document is complete; Done ends a
// generation once nothing can follow; Accept refuses what the mask
// leaves out and keeps its state.
func TestEOSDoneAndAccept(t *testing.T) {
	pieces := [][]byte{[]byte(`{"a":`), []byte("1"), []byte("}"), []byte(`"x"`), nil, []byte("2")}
	eos := []int{4}
	g, err := Compile([]byte(`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	x := NewMatcher(g, NewVocab(pieces), eos)
	bit := func(id int) bool { return x.Allowed()[0]>>id&1 != 0 }
	if bit(4) || !bit(0) || bit(1) {
		t.Errorf("start: mask %b", x.Allowed()[0])
	}
	if err := x.Accept(4); err == nil {
		t.Error("EOS accepted before the document is complete")
	}
	if err := x.Accept(3); err == nil {
		t.Error(`"x" accepted at the start`)
	}
	for _, id := range []int{0, 1, 5} {
		if err := x.Accept(id); err != nil {
			t.Fatal(err)
		}
	}
	if x.CanEnd() || x.Done() || !bit(2) || bit(4) {
		t.Errorf(`after {"a":12: can end %v, done %v, mask %b`, x.CanEnd(), x.Done(), x.Allowed()[0])
	}
	if err := x.Accept(2); err != nil {
		t.Fatal(err)
	}
	if !x.CanEnd() || !x.Done() || x.Allowed()[0] != 1<<4 {
		t.Errorf("complete: can end %v, done %v, mask %b", x.CanEnd(), x.Done(), x.Allowed()[0])
	}
	// A root number may go on: complete, not done.
	n, _ := Compile([]byte(`{"type":"integer"}`))
	x = NewMatcher(n, NewVocab(pieces), eos)
	x.Accept(1)
	if !x.CanEnd() || x.Done() || !bit(4) || !bit(5) {
		t.Errorf("root 1: can end %v, done %v, mask %b", x.CanEnd(), x.Done(), x.Allowed()[0])
	}
}
