package toolcall

import "encoding/json"

// objScan follows one JSON object as it streams in, byte by byte: its
// nesting, its strings, and where its top-level members' values begin
// and end, so a call's name is known as soon as it is written and its
// arguments can be streamed while they are written. It checks structure
// only (strings, brackets); json.Valid judges the whole at the end.
type objScan struct {
	buf   []byte
	depth int
	inStr bool
	esc   bool
	// whole: the object is the arguments (MistralArgs); else a call
	// object {"name": …, "arguments"/"parameters": …}.
	whole   bool
	nameKey string // the member naming the function ("name")

	exp      expect
	keyStart int    // the key string being read
	key      string // the member whose value is being read
	valStart int

	name      string
	nameOK    bool
	argsStart int // -1: not begun
	argsEnd   int // -1: not ended
	done      bool
}

// expect is what a call object's top level waits for.
type expect uint8

const (
	eKey   expect = iota // a key (or the closing brace)
	eColon               // the colon after it
	eValue               // the value
	eIn                  // inside the value
	eComma               // a comma or the closing brace
)

func newObjScan(whole bool, nameKey string) *objScan {
	o := &objScan{whole: whole, nameKey: nameKey, argsStart: -1, argsEnd: -1}
	if whole {
		o.argsStart = 0
	}
	return o
}

// feed takes the next byte (the first is the object's '{'); false once
// the byte cannot belong to the object: it closed, or a bracket closed
// more than opened.
func (o *objScan) feed(b byte) bool {
	if o.done {
		return false
	}
	i := len(o.buf)
	o.buf = append(o.buf, b)
	if o.inStr {
		switch {
		case o.esc:
			o.esc = false
		case b == '\\':
			o.esc = true
		case b == '"':
			o.inStr = false
			if o.depth == 1 && !o.whole {
				switch o.exp {
				case eKey:
					if json.Unmarshal(o.buf[o.keyStart:i+1], &o.key) != nil {
						o.key = ""
					}
					o.exp = eColon
				case eIn:
					o.member(i + 1)
				}
			}
		}
		return true
	}
	top := o.depth == 1 && !o.whole
	switch b {
	case ' ', '\t', '\n', '\r':
		return true
	case '"':
		o.inStr = true
		if top {
			switch o.exp {
			case eKey:
				o.keyStart = i
			case eValue:
				o.begin(i)
			}
		}
	case '{', '[':
		if top && o.exp == eValue {
			o.begin(i)
		}
		o.depth++
	case '}', ']':
		o.depth--
		switch {
		case o.depth < 0:
			return false
		case o.depth == 0:
			if top && o.exp == eIn { // a number or literal ends with the object
				o.member(i)
			}
			if o.whole {
				o.argsEnd = i + 1
			}
			o.done = true
		case o.depth == 1 && !o.whole && o.exp == eIn:
			o.member(i + 1)
		}
	case ':':
		if top && o.exp == eColon {
			o.exp = eValue
		}
	case ',':
		if top {
			if o.exp == eIn {
				o.member(i)
			}
			o.exp = eKey
		}
	default:
		if top && o.exp == eValue { // a number or literal
			o.begin(i)
		}
	}
	return true
}

// begin marks where the current member's value starts.
func (o *objScan) begin(at int) {
	o.exp, o.valStart = eIn, at
	if isArgsKey(o.key) && o.argsStart < 0 {
		o.argsStart = at
	}
}

// member ends the current member's value at end.
func (o *objScan) member(end int) {
	o.exp = eComma
	switch {
	case o.key == o.nameKey && !o.nameOK:
		o.nameOK = json.Unmarshal(o.buf[o.valStart:end], &o.name) == nil && o.name != ""
	case isArgsKey(o.key) && o.argsStart == o.valStart && o.argsEnd < 0:
		o.argsEnd = end
	}
}

func isArgsKey(k string) bool { return k == "arguments" || k == "parameters" }

// streamable reports whether the arguments are being written as a JSON
// container, whose bytes can go out as they come; a string of JSON
// (double-encoded arguments) or a bare value is only known at its end.
func (o *objScan) streamable() bool {
	return o.argsStart >= 0 && o.argsStart < len(o.buf) && (o.buf[o.argsStart] == '{' || o.buf[o.argsStart] == '[')
}

// argsSoFar is the end of the arguments' bytes so far.
func (o *objScan) argsSoFar() int {
	if o.argsEnd >= 0 {
		return o.argsEnd
	}
	return len(o.buf)
}
