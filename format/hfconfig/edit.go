package hfconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Doc edits the top-level keys of a JSON object in place, byte for byte:
// values are replaced by splicing their span, new keys are appended in the
// file's own indentation, and everything else (key order, spacing, unknown
// keys, number spelling) is left exactly as it was. Patching a vendor
// config should produce a one-line diff, not a reformatted file.
type Doc struct {
	b       []byte
	members []member
	sep     []byte // bytes between a key and its value, e.g. `: `
	indent  []byte // whitespace before a key at the start of a line
	inline  bool   // the object is written on one line
}

type member struct {
	key                string
	keyStart, valStart int
	valEnd             int
}

// ParseDoc indexes the top-level members of a JSON object.
func ParseDoc(b []byte) (*Doc, error) {
	d := &Doc{b: append([]byte(nil), b...)}
	dec := json.NewDecoder(bytes.NewReader(d.b))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if delim, ok := tok.(json.Delim); !ok || delim != '{' {
		return nil, fmt.Errorf("top level is not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keyEnd := int(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		valEnd := int(dec.InputOffset())
		valStart := valEnd - len(raw)
		keyStart := bytes.LastIndexByte(d.b[:keyEnd-1], '"')
		for keyStart > 0 && isEscaped(d.b, keyStart) {
			keyStart = bytes.LastIndexByte(d.b[:keyStart], '"')
		}
		d.members = append(d.members, member{key: tok.(string), keyStart: keyStart, valStart: valStart, valEnd: valEnd})
		if len(d.members) == 1 {
			d.sep = append([]byte(nil), d.b[keyEnd:valStart]...)
			line := bytes.LastIndexByte(d.b[:keyStart], '\n')
			if line < 0 {
				d.inline = true
			} else {
				d.indent = append([]byte(nil), d.b[line+1:keyStart]...)
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if d.sep == nil {
		d.sep, d.indent = []byte(": "), []byte("  ")
	}
	return d, nil
}

func isEscaped(b []byte, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && b[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// Bytes is the edited document.
func (d *Doc) Bytes() []byte { return d.b }

// Has reports whether key is a top-level member.
func (d *Doc) Has(key string) bool { return d.find(key) >= 0 }

// Raw returns the raw value bytes of key.
func (d *Doc) Raw(key string) (json.RawMessage, bool) {
	i := d.find(key)
	if i < 0 {
		return nil, false
	}
	m := d.members[i]
	return json.RawMessage(d.b[m.valStart:m.valEnd]), true
}

func (d *Doc) find(key string) int {
	for i, m := range d.members {
		if m.key == key {
			return i
		}
	}
	return -1
}

// Set replaces key's value, or appends key at the end of the object. The
// value is marshalled compactly (configs hold scalars and short arrays).
func (d *Doc) Set(key string, value any) error {
	v, err := json.Marshal(value)
	if err != nil {
		return err
	}
	if i := d.find(key); i >= 0 {
		m := d.members[i]
		if bytes.Equal(d.b[m.valStart:m.valEnd], v) {
			return nil
		}
		d.splice(m.valStart, m.valEnd, v)
		return nil
	}
	k, _ := json.Marshal(key)
	var ins []byte
	if len(d.members) == 0 {
		close := bytes.LastIndexByte(d.b, '}')
		ins = append(append(append(append([]byte("\n"), d.indent...), k...), d.sep...), v...)
		ins = append(ins, '\n')
		d.splice(close, close, ins)
	} else {
		last := d.members[len(d.members)-1]
		if d.inline {
			ins = append(append(append([]byte(", "), k...), d.sep...), v...)
		} else {
			ins = append(append(append(append([]byte(",\n"), d.indent...), k...), d.sep...), v...)
		}
		d.splice(last.valEnd, last.valEnd, ins)
	}
	// Re-index: offsets after the splice moved.
	nd, err := ParseDoc(d.b)
	if err != nil {
		return err
	}
	*d = *nd
	return nil
}

func (d *Doc) splice(start, end int, with []byte) {
	delta := len(with) - (end - start)
	nb := make([]byte, 0, len(d.b)+delta)
	nb = append(append(append(nb, d.b[:start]...), with...), d.b[end:]...)
	d.b = nb
	for i := range d.members {
		m := &d.members[i]
		if m.keyStart >= end {
			m.keyStart += delta
		}
		if m.valStart >= end {
			m.valStart += delta
			m.valEnd += delta
		} else if m.valStart == start && m.valEnd == end {
			m.valEnd = start + len(with)
		}
	}
}
