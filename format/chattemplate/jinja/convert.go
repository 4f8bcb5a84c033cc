package jinja

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// ValueOf converts host data to a template value. Maps from Go have no key
// order, so their keys are sorted; pass json.RawMessage (or build a *Dict)
// where the order must be the one a client sent, as tojson writes keys in
// order. Anything else that encoding/json can marshal is converted through
// JSON (struct fields keep their order).
func ValueOf(v any) (Value, error) {
	return valueOf(v, 0)
}

const maxConvertDepth = 1000

func valueOf(v any, depth int) (Value, error) {
	if depth > maxConvertDepth {
		return nil, fmt.Errorf("data nests deeper than %d levels", maxConvertDepth)
	}
	switch x := v.(type) {
	case nil, bool, int64, float64, string, List, Tuple, *Dict, Range, *Namespace, Undefined, *Func:
		return x, nil
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case uint8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint:
		if uint64(x) > 1<<63-1 {
			return float64(x), nil
		}
		return int64(x), nil
	case uint64:
		if x > 1<<63-1 {
			return float64(x), nil
		}
		return int64(x), nil
	case float32:
		return float64(x), nil
	case json.Number:
		return jsonNumber(string(x))
	case json.RawMessage:
		return FromJSON(x)
	case []any:
		out := make(List, len(x))
		for i, it := range x {
			c, err := valueOf(it, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case []string:
		out := make(List, len(x))
		for i, it := range x {
			out[i] = it
		}
		return out, nil
	case map[string]any:
		d := NewDict()
		for _, k := range slices.Sorted(maps.Keys(x)) {
			c, err := valueOf(x[k], depth+1)
			if err != nil {
				return nil, err
			}
			d.SetString(k, c)
		}
		return d, nil
	case map[string]string:
		d := NewDict()
		for _, k := range slices.Sorted(maps.Keys(x)) {
			d.SetString(k, x[k])
		}
		return d, nil
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Func {
		return nil, fmt.Errorf("cannot pass a Go function to a template; wrap it in *jinja.Func")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("template data of type %T: %w", v, err)
	}
	return FromJSON(b)
}

func jsonNumber(s string) (Value, error) {
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("bad JSON number %q", s)
	}
	return f, nil
}

// FromJSON decodes JSON as Python's json.loads does: objects keep their key
// order, integers stay integers. It does not recurse, so nesting costs no
// stack.
func FromJSON(data []byte) (Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		list    List
		dict    *Dict
		key     string
		haveKey bool
	}
	var stack []*frame
	var result Value
	done := false
	add := func(v Value) {
		if len(stack) == 0 {
			result, done = v, true
			return
		}
		top := stack[len(stack)-1]
		if top.dict != nil {
			top.dict.SetString(top.key, v)
			top.haveKey = false
		} else {
			top.list = append(top.list, v)
		}
	}
	for !done {
		tok, err := dec.Token()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("template data: %w", err)
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '[':
				stack = append(stack, &frame{list: List{}})
			case '{':
				stack = append(stack, &frame{dict: NewDict()})
			default:
				top := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if top.dict != nil {
					add(top.dict)
				} else {
					add(top.list)
				}
			}
			if len(stack) > maxConvertDepth {
				return nil, fmt.Errorf("template data nests deeper than %d levels", maxConvertDepth)
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].dict != nil && !stack[n-1].haveKey {
				stack[n-1].key, stack[n-1].haveKey = t, true
				continue
			}
			add(t)
		case json.Number:
			v, err := jsonNumber(string(t))
			if err != nil {
				return nil, err
			}
			add(v)
		case bool:
			add(t)
		case nil:
			add(nil)
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("template data: extra data after the JSON value")
	}
	return result, nil
}
