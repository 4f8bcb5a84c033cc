package grammar

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// SchemaError is a schema edgectl cannot generate documents for: the
// keyword at fault (when one is), where it is, and why.
type SchemaError struct {
	Keyword string // "" when the schema's shape is at fault
	Path    string // JSON pointer of the subschema ("" is the root)
	Msg     string
}

func (e *SchemaError) Error() string {
	at := e.Path
	if at == "" {
		at = "the root"
	} else if len(at) > 120 {
		at = "…" + at[len(at)-120:]
	}
	if e.Keyword != "" {
		return fmt.Sprintf("schema keyword %q at %s: %s", e.Keyword, at, e.Msg)
	}
	return fmt.Sprintf("schema at %s: %s", at, e.Msg)
}

// annotation keywords change no document's validity: they are ignored, as
// are "x-" extensions.
var annotation = map[string]bool{"$schema": true, "$id": true, "$comment": true, "title": true, "description": true,
	"default": true, "examples": true, "deprecated": true, "readOnly": true, "writeOnly": true, "$defs": true, "definitions": true}

// supported are the keywords the compiler implements.
var supported = map[string]bool{"type": true, "enum": true, "const": true, "properties": true, "required": true,
	"additionalProperties": true, "items": true, "minItems": true, "maxItems": true, "minLength": true, "maxLength": true,
	"anyOf": true, "oneOf": true, "allOf": true, "$ref": true}

// unsupportedWhy says why a known keyword is refused.
var unsupportedWhy = map[string]string{
	"pattern": "regular expressions are not supported", "format": "string formats are not enforced",
	"minimum": "numeric ranges are not supported", "maximum": "numeric ranges are not supported",
	"exclusiveMinimum": "numeric ranges are not supported", "exclusiveMaximum": "numeric ranges are not supported",
	"multipleOf": "numeric ranges are not supported", "patternProperties": "regular expressions are not supported",
	"prefixItems": "tuples are not supported", "not": "negation is not supported", "if": "conditionals are not supported",
	"uniqueItems": "unique items are not enforced", "minProperties": "property counts are not supported",
	"maxProperties": "property counts are not supported",
}

const supportedList = "type, enum, const, properties, required, additionalProperties, items, minItems, maxItems, minLength, maxLength, anyOf, oneOf, a one-schema allOf, $ref to #/$defs or #/definitions"

// compiler turns a decoded schema into nodes.
type compiler struct {
	doc      any
	nodes    []node
	paths    []string // per node: where it came from (errors)
	required [][]bool // per object node: which props are required
	oneOf    []bool   // per anyOf node
	refs     map[string]int32
	literals int // bytes of literals and names so far
	anyID    int32
	anyObj   int32
}

func newCompiler(doc any) *compiler {
	return &compiler{doc: doc, refs: map[string]int32{}, anyID: -1, anyObj: -1}
}

// Compile compiles a JSON schema. Errors are *SchemaError.
func Compile(schema []byte) (*Grammar, error) {
	doc, err := decodeSchema(schema)
	if err != nil {
		return nil, err
	}
	c := newCompiler(doc)
	root, err := c.schema(doc, "", 0)
	if err != nil {
		return nil, err
	}
	return c.finish(root)
}

func (c *compiler) add(n node, path string) (int32, error) {
	if len(c.nodes) >= MaxNodes {
		return 0, &SchemaError{Path: path, Msg: fmt.Sprintf("the schema compiles to more than %d values; simplify it", MaxNodes)}
	}
	c.nodes = append(c.nodes, n)
	c.paths = append(c.paths, path)
	c.required = append(c.required, nil)
	c.oneOf = append(c.oneOf, false)
	return int32(len(c.nodes) - 1), nil
}

// anyValue is the node of any JSON value (built once).
func (c *compiler) anyValue() int32 {
	if c.anyID >= 0 {
		return c.anyID
	}
	id, _ := c.add(node{kind: kPending}, "")
	c.anyID = id
	obj, _ := c.add(node{kind: kObject, addl: id}, "")
	arr, _ := c.add(node{kind: kArray, items: id, maxItems: -1}, "")
	str, _ := c.add(node{kind: kString, maxLen: -1}, "")
	num, _ := c.add(node{kind: kNumber}, "")
	bools, _ := c.add(node{kind: kLiteral, lit: newSmallTrie([]string{"true", "false"})}, "")
	null, _ := c.add(node{kind: kLiteral, lit: newSmallTrie([]string{"null"})}, "")
	c.nodes[id] = node{kind: kAnyOf, alts: []int32{obj, arr, str, num, bools, null}}
	c.anyObj = obj
	return id
}

func (c *compiler) schema(v any, path string, depth int) (int32, error) {
	if depth > MaxNesting {
		return 0, &SchemaError{Path: path, Msg: fmt.Sprintf("subschemas nest deeper than %d", MaxNesting)}
	}
	var s *object
	switch t := v.(type) {
	case bool:
		if t {
			return c.anyValue(), nil
		}
		return 0, &SchemaError{Path: path, Msg: "false admits no value; remove it or give a schema"}
	case *object:
		s = t
	default:
		return 0, &SchemaError{Path: path, Msg: "a schema must be a JSON object or true"}
	}
	var constraints []string // keywords that constrain, in document order
	for _, k := range s.keys {
		switch {
		case annotation[k] || strings.HasPrefix(k, "x-"):
		case supported[k]:
			constraints = append(constraints, k)
		default:
			why := unsupportedWhy[k]
			if why == "" {
				why = "edgectl's structured output does not know it"
			}
			return 0, &SchemaError{Keyword: k, Path: path, Msg: why + "; remove it (supported: " + supportedList + ")"}
		}
	}
	only := func(kw string) error { // kw must stand alone among the constraints
		for _, k := range constraints {
			if k != kw {
				return &SchemaError{Keyword: kw, Path: path, Msg: fmt.Sprintf("beside %q is not supported; move %q into the %s", k, k, kw)}
			}
		}
		return nil
	}
	switch {
	case s.vals["$ref"] != nil:
		if err := only("$ref"); err != nil {
			return 0, err
		}
		return c.ref(s.vals["$ref"], path)
	case s.vals["allOf"] != nil:
		if err := only("allOf"); err != nil {
			return 0, err
		}
		all, ok := s.vals["allOf"].([]any)
		if !ok || len(all) != 1 {
			return 0, &SchemaError{Keyword: "allOf", Path: path, Msg: "only an allOf of one schema is supported; merge the schemas into one"}
		}
		return c.schema(all[0], path+"/allOf/0", depth+1)
	case s.vals["anyOf"] != nil || s.vals["oneOf"] != nil:
		kw := "anyOf"
		if s.vals["oneOf"] != nil {
			kw = "oneOf"
		}
		if err := only(kw); err != nil {
			return 0, err
		}
		list, ok := s.vals[kw].([]any)
		if !ok || len(list) == 0 {
			return 0, &SchemaError{Keyword: kw, Path: path, Msg: "must be a non-empty array of schemas"}
		}
		id, err := c.add(node{kind: kAnyOf}, path)
		if err != nil {
			return 0, err
		}
		c.oneOf[id] = kw == "oneOf"
		for i, a := range list {
			alt, err := c.schema(a, fmt.Sprintf("%s/%s/%d", path, kw, i), depth+1)
			if err != nil {
				return 0, err
			}
			c.nodes[id].alts = append(c.nodes[id].alts, alt)
		}
		return id, nil
	case s.vals["enum"] != nil || s.vals["const"] != nil:
		return c.literal(s, constraints, path)
	}
	types, err := c.types(s, path)
	if err != nil {
		return 0, err
	}
	if len(types) == 0 { // no constraint at all
		return c.anyValue(), nil
	}
	var ids []int32
	for _, t := range types {
		var n node
		switch t {
		case "object":
			oid, err := c.object(s, path, depth)
			if err != nil {
				return 0, err
			}
			ids = append(ids, oid)
			continue
		case "array":
			n, err = c.array(s, path, depth)
		case "string":
			n = node{kind: kString, maxLen: -1}
			if n.minLen, err = c.count(s, "minLength", path, 0); err == nil {
				n.maxLen, err = c.count(s, "maxLength", path, -1)
			}
			if err == nil && n.maxLen >= 0 && n.minLen > n.maxLen {
				err = &SchemaError{Keyword: "minLength", Path: path, Msg: "exceeds maxLength: no string fits"}
			}
		case "number", "integer":
			n = node{kind: kNumber, integer: t == "integer"}
		case "boolean":
			n = node{kind: kLiteral, lit: newSmallTrie([]string{"true", "false"})}
		case "null":
			n = node{kind: kLiteral, lit: newSmallTrie([]string{"null"})}
		}
		if err != nil {
			return 0, err
		}
		id, err := c.add(n, path)
		if err != nil {
			return 0, err
		}
		ids = append(ids, id)
	}
	if len(ids) == 1 {
		return ids[0], nil
	}
	return c.add(node{kind: kAnyOf, alts: ids}, path)
}

// types are the JSON types a schema allows: its "type", or those its
// keywords imply (a schema with "properties" describes objects).
func (c *compiler) types(s *object, path string) ([]string, error) {
	var out []string
	switch t := s.vals["type"].(type) {
	case nil:
		if _, ok := s.vals["type"]; ok {
			return nil, &SchemaError{Keyword: "type", Path: path, Msg: "must be a type name or an array of them"}
		}
		has := func(kws ...string) bool {
			for _, k := range kws {
				if _, ok := s.vals[k]; ok {
					return true
				}
			}
			return false
		}
		if has("properties", "required", "additionalProperties") {
			out = append(out, "object")
		}
		if has("items", "minItems", "maxItems") {
			out = append(out, "array")
		}
		if has("minLength", "maxLength") {
			out = append(out, "string")
		}
		return out, nil
	case string:
		out = []string{t}
	case []any:
		for _, e := range t {
			name, ok := e.(string)
			if !ok {
				return nil, &SchemaError{Keyword: "type", Path: path, Msg: "must be a type name or an array of them"}
			}
			out = append(out, name)
		}
		if len(out) == 0 {
			return nil, &SchemaError{Keyword: "type", Path: path, Msg: "an empty type array admits no value"}
		}
	default:
		return nil, &SchemaError{Keyword: "type", Path: path, Msg: "must be a type name or an array of them"}
	}
	for _, t := range out {
		switch t {
		case "object", "array", "string", "number", "integer", "boolean", "null":
		default:
			return nil, &SchemaError{Keyword: "type", Path: path, Msg: fmt.Sprintf("%q is not a JSON Schema type (object, array, string, number, integer, boolean, null)", t)}
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if slices.Contains(out, "number") { // every integer is a number
		out = slices.DeleteFunc(out, func(t string) bool { return t == "integer" })
	}
	return out, nil
}

// count reads a non-negative integer keyword (def when absent).
func (c *compiler) count(s *object, kw, path string, def int32) (int32, error) {
	v, ok := s.vals[kw]
	if !ok {
		return def, nil
	}
	num, _ := v.(json.Number)
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil || f != math.Trunc(f) || f < 0 {
		return 0, &SchemaError{Keyword: kw, Path: path, Msg: "must be a non-negative integer"}
	}
	if f > MaxCount {
		return 0, &SchemaError{Keyword: kw, Path: path, Msg: fmt.Sprintf("%s is above the limit of %d", num, MaxCount)}
	}
	return int32(f), nil
}

func (c *compiler) object(s *object, path string, depth int) (int32, error) {
	id, err := c.add(node{kind: kObject, addl: -1}, path)
	if err != nil {
		return 0, err
	}
	n := node{kind: kObject, addl: -1}
	var req []bool
	if pv, ok := s.vals["properties"]; ok {
		props, ok := pv.(*object)
		if !ok {
			return 0, &SchemaError{Keyword: "properties", Path: path, Msg: "must be an object of schemas"}
		}
		for _, name := range props.keys {
			enc, _ := encodeJSON(name)
			enc = enc[1 : len(enc)-1]
			if err := c.budget(len(enc), "properties", path); err != nil {
				return 0, err
			}
			p, err := c.schema(props.vals[name], path+"/properties/"+pointerEscape(name), depth+1)
			if err != nil {
				return 0, err
			}
			n.props = append(n.props, p)
			n.names = append(n.names, enc)
			req = append(req, false)
		}
		// names holds the encoded names; find them back by their plain form.
		if rv, ok := s.vals["required"]; ok {
			list, ok := rv.([]any)
			if !ok {
				return 0, &SchemaError{Keyword: "required", Path: path, Msg: "must be an array of property names"}
			}
			for _, r := range list {
				name, ok := r.(string)
				i := slices.Index(props.keys, name)
				if !ok || i < 0 {
					return 0, &SchemaError{Keyword: "required", Path: path, Msg: fmt.Sprintf("names %v, which properties does not define; define it or drop it from required", r)}
				}
				req[i] = true
			}
		}
	} else if rv, ok := s.vals["required"]; ok {
		if list, _ := rv.([]any); len(list) > 0 {
			return 0, &SchemaError{Keyword: "required", Path: path, Msg: "names properties the schema does not define; define them under properties"}
		}
	}
	switch a := s.vals["additionalProperties"].(type) {
	case nil:
		if _, given := s.vals["additionalProperties"]; given {
			return 0, &SchemaError{Keyword: "additionalProperties", Path: path, Msg: "must be a boolean or a schema"}
		}
		if len(n.props) == 0 { // no properties declared: any object
			n.addl = c.anyValue()
		} // else: only the declared ones (a subset of what validates)
	case bool:
		if a {
			n.addl = c.anyValue()
		}
	default:
		if n.addl, err = c.schema(a, path+"/additionalProperties", depth+1); err != nil {
			return 0, err
		}
	}
	n.noEsc = len(n.props) > 0 && n.addl >= 0
	c.nodes[id] = n
	c.required[id] = req
	return id, nil
}

func (c *compiler) array(s *object, path string, depth int) (node, error) {
	n := node{kind: kArray, maxItems: -1}
	var err error
	switch it := s.vals["items"].(type) {
	case nil:
		if _, given := s.vals["items"]; given {
			return n, &SchemaError{Keyword: "items", Path: path, Msg: "must be a schema"}
		}
		n.items = c.anyValue()
	case bool:
		n.items = c.anyValue()
		if !it {
			n.maxItems = 0
		}
	case []any:
		return n, &SchemaError{Keyword: "items", Path: path, Msg: "an array of schemas (a tuple) is not supported; give one schema for every item"}
	default:
		if n.items, err = c.schema(it, path+"/items", depth+1); err != nil {
			return n, err
		}
	}
	if n.minItems, err = c.count(s, "minItems", path, 0); err != nil {
		return n, err
	}
	max, err := c.count(s, "maxItems", path, -1)
	if err != nil {
		return n, err
	}
	if max >= 0 && (n.maxItems < 0 || max < n.maxItems) {
		n.maxItems = max
	}
	if n.maxItems >= 0 && n.minItems > n.maxItems {
		return n, &SchemaError{Keyword: "minItems", Path: path, Msg: "exceeds maxItems (or items is false): no array fits"}
	}
	return n, nil
}

// literal compiles enum and const: the JSON texts of the values (of the
// schema's type, when it gives one).
func (c *compiler) literal(s *object, constraints []string, path string) (int32, error) {
	kw := "enum"
	var vals []any
	if cv, ok := s.vals["const"]; ok {
		if _, both := s.vals["enum"]; both {
			return 0, &SchemaError{Keyword: "const", Path: path, Msg: "beside enum is not supported; keep one of them"}
		}
		kw, vals = "const", []any{cv}
	} else {
		var ok bool
		if vals, ok = s.vals["enum"].([]any); !ok || len(vals) == 0 {
			return 0, &SchemaError{Keyword: "enum", Path: path, Msg: "must be a non-empty array of values"}
		}
	}
	for _, k := range constraints {
		if k != kw && k != "type" {
			return 0, &SchemaError{Keyword: kw, Path: path, Msg: fmt.Sprintf("beside %q is not supported; list only the values that satisfy it", k)}
		}
	}
	var types []string
	if _, ok := s.vals["type"]; ok {
		var err error
		if types, err = c.types(s, path); err != nil {
			return 0, err
		}
	}
	var texts []string
	for _, v := range vals {
		t := jsonType(v)
		if types != nil && !slices.Contains(types, t) && !(t == "integer" && slices.Contains(types, "number")) {
			continue // not of the schema's type: no document holds it
		}
		var b strings.Builder
		canon(&b, v)
		if err := c.budget(b.Len(), kw, path); err != nil {
			return 0, err
		}
		if !slices.Contains(texts, b.String()) {
			texts = append(texts, b.String())
		}
	}
	if len(texts) == 0 {
		return 0, &SchemaError{Keyword: kw, Path: path, Msg: "no value is of the schema's type"}
	}
	return c.add(node{kind: kLiteral, lit: newSmallTrie(texts)}, path)
}

func (c *compiler) budget(n int, kw, path string) error {
	c.literals += n
	if c.literals > MaxLiterals {
		return &SchemaError{Keyword: kw, Path: path, Msg: fmt.Sprintf("the schema's values and property names exceed %d bytes", MaxLiterals)}
	}
	return nil
}

// ref compiles a $ref to a place in the same schema ("#", "#/$defs/x",
// "#/definitions/x", any JSON pointer). Each place compiles once, so a
// recursive schema is a cycle in the node graph.
func (c *compiler) ref(v any, path string) (int32, error) {
	r, ok := v.(string)
	if !ok || !strings.HasPrefix(r, "#") {
		return 0, &SchemaError{Keyword: "$ref", Path: path, Msg: fmt.Sprintf("%v: only references inside the schema (\"#/$defs/name\") are supported; inline the other document", v)}
	}
	ptr := r[1:]
	if id, ok := c.refs[ptr]; ok {
		return id, nil
	}
	target, ok := resolvePointer(c.doc, ptr)
	if !ok {
		return 0, &SchemaError{Keyword: "$ref", Path: path, Msg: fmt.Sprintf("%q points at nothing in the schema", r)}
	}
	id, err := c.add(node{kind: kPending}, ptr)
	if err != nil {
		return 0, err
	}
	c.refs[ptr] = id
	// Each place compiles once, so references add no depth of their own
	// (MaxNodes bounds how many there are).
	got, err := c.schema(target, ptr, 0)
	if err != nil {
		return 0, err
	}
	if c.nodes[got].kind == kPending {
		return 0, &SchemaError{Keyword: "$ref", Path: path, Msg: fmt.Sprintf("%q refers to itself without a schema in between", r)}
	}
	c.nodes[id] = c.nodes[got]
	c.required[id] = c.required[got]
	c.oneOf[id] = c.oneOf[got]
	c.paths[id] = c.paths[got]
	return id, nil
}

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
