package grammar

import (
	"flag"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/edgectl/edgectl/engine/tokenizer"
	"github.com/edgectl/edgectl/format/gguf"
)

// ggufVocab benchmarks on a real vocabulary: go test -bench Mask
// ./engine/grammar -args -grammar.gguf=model.gguf (its tokenizer.ggml.*).
var ggufVocab = flag.String("grammar.gguf", "", "a .gguf whose vocabulary the mask benchmarks use instead of the synthetic 151,936-token one")

// qwenSize is Qwen2/Qwen3's vocabulary size (151,643 tokens padded).
const qwenSize = 151936

// syntheticVocab is a byte-level BPE-shaped vocabulary of n ids: every
// byte, English-like words with and without a leading space and capital,
// CJK characters and pairs, digit groups, whitespace runs, punctuation
// and code fragments (quotes among them), a few partial UTF-8 sequences;
// the last 200 ids are special (empty).
func syntheticVocab(n int) [][]byte {
	r := rand.New(rand.NewPCG(7, 8))
	var v [][]byte
	seen := map[string]bool{}
	add := func(s string) {
		if len(v) < n-200 && s != "" && !seen[s] {
			seen[s] = true
			v = append(v, []byte(s))
		}
	}
	for b := range 256 {
		add(string([]byte{byte(b)}))
	}
	for i := range 1000 {
		add(fmt.Sprint(i))
	}
	for i := 1; i <= 32; i++ {
		add(strings.Repeat(" ", i))
		add("\n" + strings.Repeat(" ", i-1))
		add(strings.Repeat("\t", min(i, 8)))
	}
	punct := []string{`"`, `",`, `":`, `"}`, `"]`, `{"`, `["`, ` "`, `("`, `."`, `.`, `,`, `;`, `:`, `!`, `?`, `(`, `)`, `{`, `}`, `[`, `]`, `<`, `>`,
		`=`, `==`, `+=`, `->`, `=>`, `//`, `/*`, `*/`, `#`, `_`, `__`, `-`, `--`, `'s`, `'t`, `\n`, `\"`, `\\`, `...`, `);`, `();`, `},`, `}}`}
	for _, p := range punct {
		add(p)
		add(" " + p)
	}
	for range 3000 {
		add(punct[r.IntN(len(punct))] + punct[r.IntN(len(punct))])
	}
	for c := 0x4E00; c < 0x4E00+12000; c++ {
		add(string(rune(c)))
	}
	for range 14000 {
		add(string(rune(0x4E00+r.IntN(12000))) + string(rune(0x4E00+r.IntN(12000))))
	}
	for range 300 {
		s := string(rune(0x4E00 + r.IntN(20000)))
		add(s[:2])
		add(s[1:])
	}
	syll := []string{"a", "e", "i", "o", "u", "an", "en", "in", "on", "er", "re", "th", "st", "ing", "ed", "al", "le", "ti", "ro", "ma",
		"ch", "sh", "ou", "ea", "ly", "ment", "tion", "ver", "pro", "con", "de", "com", "ex", "per", "ter", "ar", "or", "ic", "is", "us"}
	cons := "bcdfghklmnprstvwz"
	for len(v) < n-200 {
		var b strings.Builder
		for range 1 + r.IntN(4) {
			if r.IntN(2) == 0 {
				b.WriteByte(cons[r.IntN(len(cons))])
			}
			b.WriteString(syll[r.IntN(len(syll))])
		}
		w := b.String()
		if r.IntN(8) == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		if r.IntN(5) < 3 {
			w = " " + w
		}
		add(w)
	}
	return append(v, make([][]byte, n-len(v))...)
}

// benchVocab is the vocabulary the benchmarks run on.
func benchVocab(b *testing.B) [][]byte {
	if *ggufVocab == "" {
		return syntheticVocab(qwenSize)
	}
	f, err := gguf.Open(*ggufVocab)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	gv, ok, err := tokenizer.ReadGGUFVocab(f)
	if err != nil || !ok {
		b.Fatalf("%s: no vocabulary (%v)", *ggufVocab, err)
	}
	tok, err := tokenizer.FromGGUF(gv)
	if err != nil {
		b.Fatal(err)
	}
	return PiecesOf(tok)
}

// greedyTokens splits doc into the longest vocabulary tokens (what a model
// writing doc would roughly produce).
func greedyTokens(v *Vocab, doc string) []int {
	var out []int
	for i := 0; i < len(doc); {
		best, bestLen := -1, 0
		n := int32(0)
		for d := 1; i+d-1 < len(doc); d++ {
			c := int32(-1)
			for k := n + 1; k < v.end[n]; k = v.end[k] { // n's children
				if v.b[k] == doc[i+d-1] {
					c = k
					break
				}
			}
			if c < 0 {
				break
			}
			n = c
			if v.tokStart[n] < v.tokStart[n+1] {
				best, bestLen = int(v.tok[v.tokStart[n]]), d
			}
		}
		out = append(out, best)
		i += bestLen
	}
	return out
}

const benchStory = "Once upon a time, in a small village by the sea, there lived a girl named Lily. She loved to walk along the beach and collect shells. " +
	"One day she found a big, shiny shell that sang when the wind blew through it. She ran home to show her mother, who smiled and said it was magic."

var benchCases = []struct {
	name, schema, doc string
}{
	{"fields", `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"email":{"type":"string"},
		"tags":{"type":"array","items":{"enum":["red","green","blue"]}},"married":{"type":"boolean"},"spouse":{"type":["string","null"]},"score":{"type":"number"}},
		"required":["name","age"],"additionalProperties":false}`,
		`{"name": "Alice Wonderland", "age": 34, "email": "alice@example.com", "tags": ["red", "blue"], "married": false, "spouse": null, "score": 12.5}`},
	{"string", `{"type":"object","properties":{"title":{"type":"string","maxLength":80},"story":{"type":"string"}},"required":["title","story"]}`,
		`{"title":"The singing shell","story":"` + benchStory + `"}`},
	{"json_object", "", `{"user":{"id":17,"names":["Lily","Lil"],"home":{"town":"Seaside","zip":"12345"}},"items":[{"sku":"A-1","qty":2,"price":3.25},{"sku":"B-7","qty":1,"price":10}],"note":"` + benchStory[:120] + `"}`},
}

// BenchmarkMask is the per-token cost of structured output on a
// 151,936-token vocabulary: Allowed (the trie walk) and Accept for each
// token of a document, as the CPU engine runs them once per generated
// token. ns/token is the figure docs/serve.md reports.
func BenchmarkMask(b *testing.B) {
	pieces := benchVocab(b)
	start := time.Now()
	v := NewVocab(pieces)
	b.Logf("vocabulary: %d ids, %d trie nodes, built in %v", v.Size(), v.Nodes(), time.Since(start))
	eos := []int{len(pieces) - 1}
	for _, bc := range benchCases {
		g := JSONObject()
		if bc.schema != "" {
			var err error
			if g, err = Compile([]byte(bc.schema)); err != nil {
				b.Fatal(err)
			}
		}
		toks := greedyTokens(v, bc.doc)
		b.Run(bc.name, func(b *testing.B) { benchMatch(b, g, v, eos, toks, pieces) })
	}
}

func popcount(words []uint64) int {
	n := 0
	for _, w := range words {
		n += bits.OnesCount64(w)
	}
	return n
}

// BenchmarkVocab is the one-time cost of a vocabulary's trie (once per
// loaded model, on its first structured request).
func BenchmarkVocab(b *testing.B) {
	pieces := benchVocab(b)
	for b.Loop() {
		NewVocab(pieces)
	}
}

// benchMatch walks toks through a matcher of g per iteration, checking
// each is allowed, and reports the mask's cost and breadth per token.
func benchMatch(b *testing.B, g *Grammar, v *Vocab, eos, toks []int, pieces [][]byte) {
	var allowed int
	for b.Loop() {
		x := NewMatcher(g, v, eos)
		for _, id := range toks {
			bits := x.Allowed()
			if bits[id>>6]>>(id&63)&1 == 0 {
				b.Fatalf("token %q not allowed", pieces[id])
			}
			allowed += popcount(bits)
			if err := x.Accept(id); err != nil {
				b.Fatal(err)
			}
		}
		if !x.Done() {
			b.Fatal("document not done")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(toks)), "ns/token")
	b.ReportMetric(float64(allowed)/float64(b.N*len(toks)), "allowed/token")
	b.ReportMetric(0, "ns/op")
}
