// Package grammar constrains generation to JSON: a JSON schema (or "any
// JSON object", OpenAI's json_object and Ollama's format "json") compiles
// to a Grammar, a graph of value nodes; a Matcher runs it as a byte-level
// pushdown automaton over the tokens a model generates and, before each
// token, marks which tokens of the vocabulary can come next (Matcher.
// Allowed), walking a token trie built once per vocabulary (Vocab) and
// pruning every subtree whose first bytes the automaton rejects.
//
// Generated documents are JSON with bounded whitespace (between two JSON
// tokens nothing, one space, or a newline and at most MaxIndent spaces or
// tabs; nothing before or after the document) and bounded numbers, so a
// model cannot spend its budget on padding. Declared object properties come in the schema's order
// (optional ones may be skipped); see docs/serve.md "Structured output"
// for what is supported and why.
package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/edgectl/edgectl/engine"
)

// Limits: what a generated document may hold, and what a schema may ask
// for (hostile schemas cost bounded time and memory to compile).
const (
	MaxIndent     = 20        // spaces or tabs after a newline between two JSON tokens
	MaxDepth      = 64        // nested objects and arrays in a document
	MaxIntDigits  = 15        // digits before the point: every integer is exact in a float64
	MaxFracDigits = 15        // digits after the point
	MaxExpDigits  = 2         // exponent digits: within float64's range
	MaxSchemaSize = 256 << 10 // bytes of schema JSON
	MaxNodes      = 4096      // compiled value nodes
	MaxNesting    = 64        // subschemas inside subschemas
	MaxLiterals   = 64 << 10  // bytes of enum/const values and property names
	MaxCount      = 1 << 20   // minItems, maxItems, minLength, maxLength
)

// maxFrames bounds the automaton's stack: MaxDepth containers and the
// value or key inside the innermost.
const maxFrames = MaxDepth + 1

type kind uint8

const (
	kObject  kind = iota
	kArray        // items: one node
	kString       // minLen..maxLen code points
	kNumber       // integer: no fraction, no exponent
	kLiteral      // one of a set of JSON texts (enum, const, true/false, null)
	kAnyOf        // an alternative, picked by the first byte
	kKey          // frames only: an object key
	kPending      // compile time only: a $ref being compiled
	kSeq          // parts in order (compose.go)
	kSwitch       // literal heads, each with its continuation (compose.go)
)

// node is one compiled value schema.
type node struct {
	kind    kind
	integer bool // kNumber

	minLen, maxLen int32 // kString; maxLen < 0: unlimited

	items              int32 // kArray
	minItems, maxItems int32 // maxItems < 0: unlimited

	// kObject: declared properties in schema order; firstReq[i] is the
	// first required property at or after i (len(props): none), so the
	// keys that may come next are props[i..firstReq[i]].
	props    []int32
	names    []string // the names as JSON encodes them, without quotes
	firstReq []int32
	addl     int32 // node of undeclared keys' values; -1: none allowed
	keys     *smallTrie
	noEsc    bool // undeclared keys beside declared ones may not hold escapes

	lit *smallTrie // kLiteral: the JSON texts; kSwitch: the heads

	alts  []int32     // kAnyOf
	first *[256]int32 // kAnyOf: the alternative each first byte picks, -1: none

	// kSeq: the parts; kSwitch: per head (lit's string index), the node
	// that follows it.
	seq []int32
}

// Grammar is a compiled schema; it is immutable and safe to share.
type Grammar struct {
	nodes []node
	root  int32
}

// JSONObject is the grammar of any JSON object (OpenAI's json_object,
// Ollama's format "json").
func JSONObject() *Grammar {
	c := newCompiler(nil)
	c.anyValue()
	root := c.anyObj
	g, err := c.finish(root)
	if err != nil {
		panic("grammar: the any-object grammar does not compile: " + err.Error())
	}
	return g
}

// ForFormat compiles a request's structured-output format: its schema, or
// any JSON object when it has none. Errors wrap engine.ErrInvalidRequest
// (a client's schema is a client mistake) and are *SchemaError.
func ForFormat(f *engine.Format) (*Grammar, error) {
	if len(f.Schema) == 0 || string(f.Schema) == "null" {
		return JSONObject(), nil
	}
	g, err := Compile(f.Schema)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", engine.ErrInvalidRequest, err)
	}
	return g, nil
}

// Match reports whether doc is a complete document of the grammar, as
// generation would produce it (compact whitespace rules included).
func (g *Grammar) Match(doc []byte) bool {
	m := newMachine(g)
	for _, b := range doc {
		if !m.step(b) {
			return false
		}
	}
	return m.canEnd()
}

// encodeJSON is JSON's canonical compact text of v (object keys sorted),
// without the HTML escapes of <, > and &: a model writes those as is.
func encodeJSON(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
