package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// A schema is read keeping each object's key order (properties are
// generated in the order the schema lists them), numbers as written and
// duplicate keys refused.

// object is a JSON object with its keys in document order.
type object struct {
	keys []string
	vals map[string]any
}

// maxDocNesting bounds how deep the schema's JSON itself nests.
const maxDocNesting = 512

func decodeSchema(schema []byte) (any, error) {
	if len(schema) > MaxSchemaSize {
		return nil, &SchemaError{Msg: fmt.Sprintf("the schema is %d bytes; the limit is %d", len(schema), MaxSchemaSize)}
	}
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err == nil {
		if _, e := dec.Token(); !errors.Is(e, io.EOF) {
			err = errors.New("data after the schema")
		}
	}
	if err != nil {
		return nil, &SchemaError{Msg: "not valid JSON: " + err.Error()}
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxDocNesting {
		return nil, fmt.Errorf("nested deeper than %d", maxDocNesting)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch d {
	case '{':
		o := &object{vals: map[string]any{}}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k := kt.(string)
			if _, dup := o.vals[k]; dup {
				return nil, fmt.Errorf("key %q appears twice in one object", k)
			}
			v, err := decodeValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			o.keys = append(o.keys, k)
			o.vals[k] = v
		}
		_, err := dec.Token()
		return o, err
	case '[':
		a := []any{}
		for dec.More() {
			v, err := decodeValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token()
		return a, err
	}
	return nil, fmt.Errorf("unexpected %v", d)
}

// canon appends v's compact JSON text: keys in document order, numbers as
// written, strings as encoding/json writes them without HTML escapes.
func canon(b *strings.Builder, v any) {
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case json.Number:
		b.WriteString(t.String())
	case string:
		s, _ := encodeJSON(t)
		b.WriteString(s)
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			canon(b, e)
		}
		b.WriteByte(']')
	case *object:
		b.WriteByte('{')
		for i, k := range t.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			canon(b, k)
			b.WriteByte(':')
			canon(b, t.vals[k])
		}
		b.WriteByte('}')
	}
}

// jsonType is v's JSON Schema type ("integer" for integral numbers).
func jsonType(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if f, err := t.Float64(); err == nil && f == math.Trunc(f) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	}
	return "object"
}

// resolvePointer follows a JSON pointer (RFC 6901) from doc.
func resolvePointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if ptr[0] != '/' {
		return nil, false
	}
	v := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch t := v.(type) {
		case *object:
			var ok bool
			if v, ok = t.vals[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t) {
				return nil, false
			}
			v = t[i]
		default:
			return nil, false
		}
	}
	return v, true
}
