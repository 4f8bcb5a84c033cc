package grammar

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/edgectl/edgectl/engine"
)

// testSchemas cover every supported keyword, nesting, $ref (recursive
// too), enums of mixed types, escapes in names and values.
var testSchemas = map[string]string{
	"person": `{"type":"object","properties":{
		"name":{"type":"string","minLength":1,"maxLength":12},
		"age":{"type":"integer"},
		"email":{"type":"string","description":"annotations are ignored"},
		"tags":{"type":"array","items":{"type":"string","maxLength":5},"maxItems":3},
		"married":{"type":"boolean"},
		"spouse":{"anyOf":[{"type":"string"},{"type":"null"}]},
		"score":{"type":["number","null"]}},
		"required":["name","age"],"additionalProperties":false}`,
	"shapes": `{"$defs":{"pt":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"]}},
		"type":"object","properties":{
		"kind":{"enum":["line","poly",3,null,{"b":[1,"2"]}]},
		"points":{"type":"array","items":{"$ref":"#/$defs/pt"},"minItems":2,"maxItems":4},
		"closed":{"const":true}},
		"required":["kind","points"]}`,
	"tree":  `{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#"},"maxItems":2}},"required":["v"]}`,
	"extra": `{"type":"object","properties":{"id":{"const":"x\"y"},"q\"uote":{"type":"string"}},"required":["id"],"additionalProperties":{"type":"integer"}}`,
	"loose": `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":true}`,
	"list":  `{"type":"array","items":{"oneOf":[{"type":"integer"},{"type":"string","minLength":2,"maxLength":3},{"type":"object","properties":{"k":{"enum":["a","b"]}},"required":["k"]}]},"minItems":1}`,
	"defs":  `{"definitions":{"s":{"type":"string"}},"allOf":[{"$ref":"#/definitions/s"}]}`,
	"num":   `{"type":"number"}`,
	"any":   `true`,
}

// Random documents of each schema, written to the grammar's rules, are
// accepted, and validate against the schema (the generator is checked
// too); every mutation the grammar accepts still validates, and most
// mutations are rejected.
func TestGrammarAcceptsValidRejectsInvalid(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for name, schema := range testSchemas {
		g, err := Compile([]byte(schema))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		root, _ := decodeSchema([]byte(schema))
		accepted, rejected := 0, 0
		for range 300 {
			gen := &docGen{r: r, root: root}
			gen.value(root, 0)
			doc := gen.b.String()
			if err := validates([]byte(schema), []byte(doc)); err != nil {
				t.Fatalf("%s: the generator wrote an invalid document %s: %v", name, doc, err)
			}
			if !g.Match([]byte(doc)) {
				t.Errorf("%s: valid document rejected: %s", name, doc)
			}
			for range 10 {
				mut := mutate(r, doc)
				if !g.Match([]byte(mut)) {
					rejected++
					continue
				}
				accepted++
				if err := validates([]byte(schema), []byte(mut)); err != nil {
					t.Errorf("%s: the grammar accepted %s, which does not validate: %v", name, mut, err)
				}
			}
		}
		if rejected*3 < accepted+rejected { // numbers mutate into numbers often

			t.Errorf("%s: %d mutations accepted, only %d rejected", name, accepted, rejected)
		}
		t.Logf("%s: %d mutations rejected, %d still valid and accepted", name, rejected, accepted)
	}
}

// Documents the rules refuse, each for one reason.
func TestGrammarRefuses(t *testing.T) {
	person, _ := Compile([]byte(testSchemas["person"]))
	shapes, _ := Compile([]byte(testSchemas["shapes"]))
	extra, _ := Compile([]byte(testSchemas["extra"]))
	list, _ := Compile([]byte(testSchemas["list"]))
	obj := JSONObject()
	for _, tc := range []struct {
		g    *Grammar
		doc  string
		want bool
	}{
		{person, `{"name":"Al","age":3}`, true},
		{person, `{"age":3,"name":"Al"}`, false},                          // declared order
		{person, `{"name":"Al"}`, false},                                  // required age
		{person, `{"name":"","age":3}`, false},                            // minLength
		{person, `{"name":"Al","age":3,"x":1}`, false},                    // additionalProperties false
		{person, `{"name":"Al","age":3.5}`, false},                        // integer
		{person, `{"name":"Al","age":1234567890123456}`, false},           // 16 digits
		{person, `{"name":"Al","age":3,"tags":["a","b","c","d"]}`, false}, // maxItems
		{person, `{"name":"Al","age":3,"spouse":null}`, true},
		{person, `{"name":"\ud800x","age":3}`, false}, // a surrogate half
		{person, `{"name":"\u00e9","age":3}`, true},
		{person, "{\"name\":\"\xc3\",\"age\":3}", false}, // broken UTF-8
		{person, "{\"name\":\"a\nb\",\"age\":3}", false}, // raw control character
		{person, "{\n  \"name\": \"Al\",\n\t\"age\": 3\n}", true},
		{person, `{"name":"Al",` + "\n" + strings.Repeat(" ", MaxIndent) + `"age":3}`, true},
		{person, `{"name":"Al",` + "\n" + strings.Repeat(" ", MaxIndent+1) + `"age":3}`, false},
		{person, `{"name":"Al",  "age":3}`, false},         // two spaces
		{person, "{\"name\":\"Al\",\n\n\"age\":3}", false}, // two newlines
		{person, "{\"name\":\"Al\", \n\"age\":3}", false},  // a space before the newline
		{person, "{\"name\":\"Al\",\r\n\"age\":3}", false}, // CR
		{person, ` {"name":"Al","age":3}`, false},          // nothing before the document
		{person, `{"name":"Al","age":3} `, false},          // nor after
		{shapes, `{"kind":{"b":[1,"2"]},"points":[{"x":1,"y":2},{"x":0.5,"y":-1e3}]}`, true},
		{shapes, `{"kind":"line","points":[{"x":1,"y":2}]}`, false}, // minItems
		{shapes, `{"kind":4,"points":[{"x":1,"y":2},{"x":1,"y":2}]}`, false},
		{shapes, `{"kind":3,"points":[{"x":1,"y":2},{"x":1,"y":2}],"closed":false}`, false},
		{extra, `{"id":"x\"y","zz":7}`, true},
		{extra, `{"id":"x\"y","zz":"7"}`, false},
		{extra, `{"id":"x\"y","id":7}`, false},      // a declared name again
		{extra, `{"id":"x\"y","\u0069d":7}`, false}, // no escapes beside declared names
		{list, `[1,"ab",{"k":"a"}]`, true},
		{list, `["a"]`, false},
		{list, `[]`, false},
		{obj, `{"a":{"b":{"c":[1,[true,null]]}}}`, true},
		{obj, `{"a":1e100}`, false}, // 3 exponent digits
		{obj, `[]`, false},
		{obj, strings.Repeat(`{"a":`, MaxDepth) + "1" + strings.Repeat("}", MaxDepth), true},
		{obj, strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1), false},
	} {
		if got := tc.g.Match([]byte(tc.doc)); got != tc.want {
			t.Errorf("%.80s: accepted %v, want %v", tc.doc, got, tc.want)
		}
	}
}

// Unsupported and broken schemas are errors naming the keyword and where
// it is; the error wraps engine.ErrInvalidRequest through ForFormat.
func TestSchemaErrorsNameTheKeyword(t *testing.T) {
	for _, tc := range []struct{ schema, keyword, path string }{
		{`{"type":"string","pattern":"^a"}`, "pattern", ""},
		{`{"type":"object","properties":{"d":{"type":"string","format":"date"}}}`, "format", "/properties/d"},
		{`{"type":"integer","minimum":0}`, "minimum", ""},
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["b"]}`, "required", ""},
		{`{"type":"array","items":[{"type":"string"}]}`, "items", ""},
		{`{"anyOf":[{"type":"object"},{"type":"object","properties":{"a":{}}}]}`, "anyOf", ""},
		{`{"anyOf":[{"type":"string"},{"enum":["a"]}]}`, "anyOf", ""},
		{`{"oneOf":[{"type":"integer"},{"type":"number"}]}`, "oneOf", ""},
		{`{"$ref":"other.json#/x"}`, "$ref", ""},
		{`{"$ref":"#/$defs/missing"}`, "$ref", ""},
		{`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}}`, "$ref", ""},
		{`{"type":"strin"}`, "type", ""},
		{`{"type":"string","minLength":3,"maxLength":2}`, "minLength", ""},
		{`{"type":"array","minItems":1e9}`, "minItems", ""},
		{`{"enum":[1,2],"type":"string"}`, "enum", ""},
		{`{"allOf":[{"type":"string"},{"maxLength":3}]}`, "allOf", ""},
		{`{"type":"object","uniqueItems":true}`, "uniqueItems", ""},
		{`{"nullable":true}`, "nullable", ""},
	} {
		_, err := ForFormat(&engine.Format{Schema: []byte(tc.schema)})
		var se *SchemaError
		if !errors.As(err, &se) || se.Keyword != tc.keyword || se.Path != tc.path || !errors.Is(err, engine.ErrInvalidRequest) ||
			!strings.Contains(err.Error(), fmt.Sprintf("%q", tc.keyword)) {
			t.Errorf("%s: %v (%#v), want keyword %q at %q", tc.schema, err, se, tc.keyword, tc.path)
		}
	}
	for _, schema := range []string{`false`, `{"type":"object","properties":{"me":{"$ref":"#"}},"required":["me"]}`, `[1]`, `{"a":`} {
		var se *SchemaError
		if _, err := Compile([]byte(schema)); !errors.As(err, &se) {
			t.Errorf("%s: %v, want a SchemaError", schema, err)
		} else {
			t.Logf("%s: %v", schema, err)
		}
	}
}

// Hostile schemas cost bounded time: deep nesting, huge enums, many
// references, wide anyOfs all compile or fail fast with a limit's error.
func TestHostileSchemasAreBounded(t *testing.T) {
	nested := strings.Repeat(`{"type":"array","items":`, MaxNesting+1) + `{}` + strings.Repeat("}", MaxNesting+1)
	deep := strings.Repeat(`{"type":"array","items":`, 10000) + `{}` + strings.Repeat("}", 10000)
	var enum strings.Builder
	enum.WriteString(`{"enum":[`)
	for i := range 15000 {
		fmt.Fprintf(&enum, `"value-%d",`, i)
	}
	enum.WriteString(`"x"]}`)
	var defs strings.Builder // a chain of definitions, each using the next twice
	defs.WriteString(`{"$ref":"#/$defs/d0","$defs":{`)
	for i := range 2000 {
		fmt.Fprintf(&defs, `"d%d":{"type":"object","properties":{"a":{"$ref":"#/$defs/d%d"},"b":{"$ref":"#/$defs/d%d"}}},`, i, i+1, i+1)
	}
	defs.WriteString(`"d2000":{"type":"string"}}}`)
	big := `{"enum":["` + strings.Repeat("x", MaxSchemaSize) + `"]}`
	for name, tc := range map[string]struct {
		schema string
		ok     bool
	}{
		"deep": {deep, false}, "nested": {nested, false}, "enum": {enum.String(), false}, "defs": {defs.String(), true}, "big": {big, false},
	} {
		start := time.Now()
		g, err := Compile([]byte(tc.schema))
		took := time.Since(start)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", name, err)
		}
		if took > 2*time.Second {
			t.Errorf("%s: compiling took %v", name, took)
		}
		if g != nil && len(g.nodes) > MaxNodes+64 {
			t.Errorf("%s: %d nodes", name, len(g.nodes))
		}
		t.Logf("%s (%d bytes): %v in %v", name, len(tc.schema), err, took)
	}
}
