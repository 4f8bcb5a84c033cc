package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// validates is a JSON Schema validator for the keywords the compiler
// supports, written apart from it (encoding/json values, no grammar) so
// that "the grammar accepted it" can be checked against "it validates".
func validates(schema []byte, doc []byte) error {
	var root any
	if err := json.Unmarshal(schema, &root); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	if dec.More() {
		return fmt.Errorf("data after the document")
	}
	return validate(root, root, v, "")
}

func validate(root, s, v any, at string) error {
	if b, ok := s.(bool); ok {
		if b {
			return nil
		}
		return fmt.Errorf("%s: false schema", at)
	}
	m := s.(map[string]any)
	if r, ok := m["$ref"].(string); ok {
		t := root
		for _, p := range strings.Split(strings.TrimPrefix(r, "#"), "/")[1:] {
			t = t.(map[string]any)[strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")]
		}
		return validate(root, t, v, at)
	}
	if all, ok := m["allOf"].([]any); ok {
		for _, a := range all {
			if err := validate(root, a, v, at); err != nil {
				return err
			}
		}
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		alts, ok := m[kw].([]any)
		if !ok {
			continue
		}
		n := 0
		for _, a := range alts {
			if validate(root, a, v, at) == nil {
				n++
			}
		}
		if n == 0 || kw == "oneOf" && n > 1 {
			return fmt.Errorf("%s: %d alternatives of %s match", at, n, kw)
		}
	}
	if e, ok := m["enum"].([]any); ok {
		found := false
		for _, x := range e {
			found = found || sameJSON(x, v)
		}
		if !found {
			return fmt.Errorf("%s: %v not in enum", at, v)
		}
	}
	if c, ok := m["const"]; ok && !sameJSON(c, v) {
		return fmt.Errorf("%s: %v is not the const", at, v)
	}
	if t, ok := m["type"]; ok {
		var types []any
		if s, ok := t.(string); ok {
			types = []any{s}
		} else {
			types = t.([]any)
		}
		match := false
		for _, ty := range types {
			match = match || isType(ty.(string), v)
		}
		if !match {
			return fmt.Errorf("%s: %v is not of type %v", at, v, t)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := m["properties"].(map[string]any)
		for k, pv := range x {
			if ps, ok := props[k]; ok {
				if err := validate(root, ps, pv, at+"/"+k); err != nil {
					return err
				}
			} else if ap, ok := m["additionalProperties"]; ok {
				if err := validate(root, ap, pv, at+"/"+k); err != nil {
					return fmt.Errorf("%s: additional property %q: %v", at, k, err)
				}
			}
		}
		if req, ok := m["required"].([]any); ok {
			for _, r := range req {
				if _, ok := x[r.(string)]; !ok {
					return fmt.Errorf("%s: required %q missing", at, r)
				}
			}
		}
	case []any:
		if it, ok := m["items"]; ok {
			for i, e := range x {
				if err := validate(root, it, e, fmt.Sprintf("%s/%d", at, i)); err != nil {
					return err
				}
			}
		}
		if n, ok := m["minItems"].(float64); ok && float64(len(x)) < n {
			return fmt.Errorf("%s: %d items < minItems", at, len(x))
		}
		if n, ok := m["maxItems"].(float64); ok && float64(len(x)) > n {
			return fmt.Errorf("%s: %d items > maxItems", at, len(x))
		}
	case string:
		n := float64(utf8.RuneCountInString(x))
		if l, ok := m["minLength"].(float64); ok && n < l {
			return fmt.Errorf("%s: %q shorter than minLength", at, x)
		}
		if l, ok := m["maxLength"].(float64); ok && n > l {
			return fmt.Errorf("%s: %q longer than maxLength", at, x)
		}
	}
	return nil
}

func isType(t string, v any) bool {
	switch x := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case json.Number:
		f, err := x.Float64()
		return err == nil && (t == "number" || t == "integer" && f == math.Trunc(f))
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	}
	return false
}

func sameJSON(a, b any) bool {
	if n, ok := b.(json.Number); ok {
		f, _ := n.Float64()
		af, ok := a.(float64)
		return ok && af == f
	}
	if arr, ok := b.([]any); ok {
		aa, ok := a.([]any)
		if !ok || len(aa) != len(arr) {
			return false
		}
		for i := range aa {
			if !sameJSON(aa[i], arr[i]) {
				return false
			}
		}
		return true
	}
	if obj, ok := b.(map[string]any); ok {
		ao, ok := a.(map[string]any)
		if !ok || len(ao) != len(obj) {
			return false
		}
		for k := range ao {
			if !sameJSON(ao[k], obj[k]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// docGen writes random documents of a schema the way the grammar wants
// them: declared properties in order, bounded whitespace, bounded numbers.
type docGen struct {
	r    *rand.Rand
	root any // decodeSchema's ordered form
	b    strings.Builder
}

var genChars = []string{"a", "b", "Z", " ", "0", "é", "中", "😀", `\"`, `\\`, `\/`, `\n`, `\t`, `\u00e9`, `\u4e2d`, "~", "'", "<", "&", "\x7f"}

func (g *docGen) ws() {
	switch g.r.IntN(6) {
	case 0:
		g.b.WriteByte(' ')
	case 1:
		g.b.WriteByte('\n')
		for range g.r.IntN(4) {
			g.b.WriteByte(" \t"[g.r.IntN(2)])
		}
	}
}

func (g *docGen) str(lo, hi int) {
	if hi < 0 {
		hi = lo + 8
	}
	n := lo + g.r.IntN(min(hi, lo+8)-lo+1)
	g.b.WriteByte('"')
	for range n {
		g.b.WriteString(genChars[g.r.IntN(len(genChars))])
	}
	g.b.WriteByte('"')
}

func (g *docGen) num(integer bool) {
	if g.r.IntN(3) == 0 {
		g.b.WriteByte('-')
	}
	if g.r.IntN(4) == 0 {
		g.b.WriteByte('0')
	} else {
		d := strconv.FormatInt(100000000000000+g.r.Int64N(899999999999999), 10) // 15 digits
		g.b.WriteString(d[:1+g.r.IntN(len(d))])
	}
	if integer {
		return
	}
	if g.r.IntN(2) == 0 {
		g.b.WriteString("." + strconv.Itoa(g.r.IntN(1000)))
	}
	if g.r.IntN(3) == 0 {
		g.b.WriteString([]string{"e", "E", "e+", "e-"}[g.r.IntN(4)] + strconv.Itoa(g.r.IntN(99)))
	}
}

func (g *docGen) anyValue(depth int) {
	switch k := g.r.IntN(6); {
	case k == 0 && depth < 3:
		g.b.WriteString("{")
		for i := range g.r.IntN(3) {
			if i > 0 {
				g.b.WriteString(",")
			}
			g.ws()
			g.str(0, 4)
			g.b.WriteString(":")
			g.anyValue(depth + 1)
		}
		g.b.WriteString("}")
	case k == 1 && depth < 3:
		g.b.WriteString("[")
		for i := range g.r.IntN(3) {
			if i > 0 {
				g.b.WriteString(",")
			}
			g.anyValue(depth + 1)
		}
		g.b.WriteString("]")
	case k == 2:
		g.str(0, 6)
	case k == 3:
		g.num(false)
	default:
		g.b.WriteString([]string{"true", "false", "null"}[g.r.IntN(3)])
	}
}

func (g *docGen) value(s any, depth int) {
	if b, ok := s.(bool); ok && b {
		g.anyValue(depth)
		return
	}
	o := s.(*object)
	if r, ok := o.vals["$ref"].(string); ok {
		t, _ := resolvePointer(g.root, r[1:])
		g.value(t, depth+1)
		return
	}
	if all, ok := o.vals["allOf"].([]any); ok {
		g.value(all[0], depth)
		return
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if alts, ok := o.vals[kw].([]any); ok {
			i := g.r.IntN(len(alts))
			if depth > 4 { // recursion: the last alternative ends
				i = len(alts) - 1
			}
			g.value(alts[i], depth+1)
			return
		}
	}
	if c, ok := o.vals["const"]; ok {
		canon(&g.b, c)
		return
	}
	if e, ok := o.vals["enum"].([]any); ok {
		canon(&g.b, e[g.r.IntN(len(e))])
		return
	}
	var types []string
	switch t := o.vals["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			types = append(types, x.(string))
		}
	default:
		if _, ok := o.vals["properties"]; ok {
			types = []string{"object"}
		} else {
			g.anyValue(depth)
			return
		}
	}
	count := func(kw string, def int) int {
		if n, ok := o.vals[kw].(json.Number); ok {
			i, _ := n.Int64()
			return int(i)
		}
		return def
	}
	switch types[g.r.IntN(len(types))] {
	case "object":
		g.b.WriteString("{")
		g.ws()
		props, _ := o.vals["properties"].(*object)
		req := map[string]bool{}
		if r, ok := o.vals["required"].([]any); ok {
			for _, x := range r {
				req[x.(string)] = true
			}
		}
		n := 0
		sep := func() {
			if n > 0 {
				g.b.WriteString(",")
				g.ws()
			}
			n++
		}
		if props != nil {
			for _, k := range props.keys {
				if !req[k] && (g.r.IntN(2) == 0 || depth > 4) {
					continue
				}
				sep()
				canon(&g.b, k)
				g.ws()
				g.b.WriteString(":")
				g.ws()
				g.value(props.vals[k], depth+1)
				g.ws()
			}
		}
		ap, given := o.vals["additionalProperties"]
		if !given && props == nil {
			ap = true
		}
		if ap != nil && ap != false && depth < 4 {
			for i := range g.r.IntN(3) {
				sep()
				fmt.Fprintf(&g.b, `"zz%d"`, i)
				g.b.WriteString(":")
				g.value(ap, depth+1)
			}
		}
		g.b.WriteString("}")
	case "array":
		g.b.WriteString("[")
		lo, hi := count("minItems", 0), count("maxItems", -1)
		if hi < 0 || hi > lo+3 {
			hi = lo + 3
		}
		if depth > 4 {
			hi = lo
		}
		items, ok := o.vals["items"]
		if !ok {
			items = true
		}
		for i := range lo + g.r.IntN(hi-lo+1) {
			if i > 0 {
				g.b.WriteString(",")
			}
			g.ws()
			g.value(items, depth+1)
		}
		g.b.WriteString("]")
	case "string":
		g.str(count("minLength", 0), count("maxLength", -1))
	case "integer":
		g.num(true)
	case "number":
		g.num(false)
	case "boolean":
		g.b.WriteString([]string{"true", "false"}[g.r.IntN(2)])
	case "null":
		g.b.WriteString("null")
	}
}

// mutate changes doc at random: a byte deleted, inserted, replaced, a
// span repeated, or the end cut.
func mutate(r *rand.Rand, doc string) string {
	const pool = "{}[]\":,0123456789.-+eE tfnul\\ax\x01\xff\xe4"
	i := r.IntN(len(doc) + 1)
	switch r.IntN(5) {
	case 0:
		if i < len(doc) {
			return doc[:i] + doc[i+1:]
		}
	case 1:
		return doc[:i] + string(pool[r.IntN(len(pool))]) + doc[i:]
	case 2:
		if i < len(doc) {
			return doc[:i] + string(pool[r.IntN(len(pool))]) + doc[i+1:]
		}
	case 3:
		j := i + r.IntN(len(doc)-i+1)
		return doc[:j] + doc[i:j] + doc[j:]
	}
	return doc[:i]
}
