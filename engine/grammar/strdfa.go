package grammar

// The inside of a JSON string as a byte-level DFA: escapes (\uXXXX with
// no surrogate halves, so every escape is one code point and decodes
// exactly), UTF-8 validity as RFC 3629 states it (no overlong forms, no
// surrogates, nothing above U+10FFFF), no raw control characters. It is a
// table so the vocabulary trie can precompute, per trie node, from which
// DFA states a whole subtree stays inside the string (vocab.go): that is
// what makes masks cheap while the model writes a string.

// String DFA states. A state with strNoEsc added is the same state in a
// string that may not hold escapes (an object key beside declared names,
// where "\u0061" would spell a declared "a" the key trie cannot see).
const (
	sNormal = iota // between characters
	sEsc           // after '\'
	sU1            // after \u
	sU2            // after \uX (X not d/D)
	sU2lo          // after \uD: 0-7 only, so no surrogate half
	sU3            // after \uXX
	sU4            // after \uXXX
	sC1            // one continuation byte (80-BF) left
	sC2            // two left, the next 80-BF
	sC2a           // after E0: A0-BF, then one
	sC2b           // after ED: 80-9F (no surrogates), then one
	sC3            // after F1-F3: 80-BF, then two
	sC3a           // after F0: 90-BF, then two
	sC3b           // after F4: 80-8F, then two
	nStr

	strNoEsc = nStr     // offset of the escape-free variant
	nStrAll  = 2 * nStr // states of both variants (a uint32 bitmask holds them)
	strClose = 0xFE     // the closing quote (only from sNormal)
	strDead  = 0xFF     // no string continues with this byte
)

// strNext[s][b] is the state after byte b in state s, strClose or strDead.
var strNext = func() (t [nStrAll][256]uint8) {
	for v := 0; v < 2; v++ {
		off := uint8(v * nStr)
		for s := 0; s < nStr; s++ {
			for b := 0; b < 256; b++ {
				t[int(off)+s][b] = strDead
			}
		}
		set := func(s int, lo, hi byte, to uint8) {
			for b := int(lo); b <= int(hi); b++ {
				t[int(off)+s][b] = off + to
			}
		}
		hex := func(s int, to uint8) {
			set(s, '0', '9', to)
			set(s, 'a', 'f', to)
			set(s, 'A', 'F', to)
		}
		// sNormal: printable ASCII and DEL, UTF-8 lead bytes, '\', '"'.
		set(sNormal, 0x20, 0x7F, sNormal)
		set(sNormal, 0xC2, 0xDF, sC1)
		set(sNormal, 0xE0, 0xE0, sC2a)
		set(sNormal, 0xE1, 0xEC, sC2)
		set(sNormal, 0xED, 0xED, sC2b)
		set(sNormal, 0xEE, 0xEF, sC2)
		set(sNormal, 0xF0, 0xF0, sC3a)
		set(sNormal, 0xF1, 0xF3, sC3)
		set(sNormal, 0xF4, 0xF4, sC3b)
		t[int(off)+sNormal]['"'] = strClose
		if v == 0 {
			t[sNormal]['\\'] = sEsc
		} else {
			t[int(off)+sNormal]['\\'] = strDead
		}
		for _, c := range []byte(`"\/bfnrt`) {
			set(sEsc, c, c, sNormal)
		}
		set(sEsc, 'u', 'u', sU1)
		hex(sU1, sU2)
		set(sU1, 'd', 'd', sU2lo)
		set(sU1, 'D', 'D', sU2lo)
		hex(sU2, sU3)
		set(sU2lo, '0', '7', sU3)
		hex(sU3, sU4)
		hex(sU4, sNormal)
		set(sC1, 0x80, 0xBF, sNormal)
		set(sC2, 0x80, 0xBF, sC1)
		set(sC2a, 0xA0, 0xBF, sC1)
		set(sC2b, 0x80, 0x9F, sC1)
		set(sC3, 0x80, 0xBF, sC2)
		set(sC3a, 0x90, 0xBF, sC2)
		set(sC3b, 0x80, 0x8F, sC2)
	}
	return t
}()

// strStartsChar reports whether a byte accepted in state s begins a new
// character (what minLength and maxLength count: code points).
func strStartsChar(s uint8) bool { return s == sNormal || s == sNormal+strNoEsc }
