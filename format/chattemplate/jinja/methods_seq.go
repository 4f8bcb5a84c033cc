package jinja

import "fmt"

// The methods of dict, list and tuple that do not change them.

var dictMethods = map[string]method{
	"items": func(e *evaluator, recv Value, a *args) (Value, error) {
		if _, err := a.bind("items", 0); err != nil {
			return nil, err
		}
		return e.dictItems(recv.(*Dict))
	},
	"keys": func(e *evaluator, recv Value, a *args) (Value, error) {
		if _, err := a.bind("keys", 0); err != nil {
			return nil, err
		}
		d := recv.(*Dict)
		return List(d.keys[:len(d.keys):len(d.keys)]), nil
	},
	"values": func(e *evaluator, recv Value, a *args) (Value, error) {
		if _, err := a.bind("values", 0); err != nil {
			return nil, err
		}
		d := recv.(*Dict)
		return List(d.vals[:len(d.vals):len(d.vals)]), nil
	},
	"get": func(e *evaluator, recv Value, a *args) (Value, error) {
		v, err := a.bind("get", 1, "key", "default")
		if err != nil {
			return nil, err
		}
		if _, ok := hashKey(v[0]); !ok {
			return nil, fmt.Errorf("unhashable type: '%s'", typeName(v[0]))
		}
		if r, ok := recv.(*Dict).Get(v[0]); ok {
			return r, nil
		}
		return or(v[1], nil), nil
	},
	"copy": func(e *evaluator, recv Value, a *args) (Value, error) {
		d := recv.(*Dict)
		if err := e.needList(2 * d.Len()); err != nil {
			return nil, err
		}
		return d.copyDict(), nil
	},
}

func (e *evaluator) dictItems(d *Dict) (List, error) {
	if err := e.needList(3 * d.Len()); err != nil {
		return nil, err
	}
	out := make(List, d.Len())
	for i, k := range d.keys {
		out[i] = Tuple{k, d.vals[i]}
	}
	return out, nil
}

var seqMethods = map[string]method{
	"index": func(e *evaluator, recv Value, a *args) (Value, error) {
		v, err := a.bind("index", 1, "value")
		if err != nil {
			return nil, err
		}
		items, err := e.iterate(recv)
		if err != nil {
			return nil, err
		}
		for i, it := range items {
			if equal(it, v[0]) {
				return int64(i), nil
			}
		}
		return nil, fmt.Errorf("value is not in %s", typeName(recv))
	},
	"count": func(e *evaluator, recv Value, a *args) (Value, error) {
		v, err := a.bind("count", 1, "value")
		if err != nil {
			return nil, err
		}
		items, err := e.iterate(recv)
		if err != nil {
			return nil, err
		}
		n := int64(0)
		for _, it := range items {
			if equal(it, v[0]) {
				n++
			}
		}
		return n, nil
	},
	"copy": func(e *evaluator, recv Value, a *args) (Value, error) {
		items, err := e.iterate(recv)
		if err != nil {
			return nil, err
		}
		if err := e.needList(len(items)); err != nil {
			return nil, err
		}
		return append(List{}, items...), nil
	},
}
