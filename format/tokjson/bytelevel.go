package tokjson

// GPT-2's byte-level BPE spells every byte as a printable rune
// (bytes_to_unicode in the original encoder.py): printable Latin-1 bytes
// map to themselves, the other 68 bytes to U+0100 onwards in byte order.
// Vocabularies of byte-level tokenizers (GPT-2, Llama 3, Qwen) are written
// in that alphabet; these tables convert between it and raw bytes.
var (
	byteToRune [256]rune
	runeToByte = make(map[rune]byte, 256)
)

func init() {
	n := rune(0)
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		r := rune(b)
		if !printable {
			r = 256 + n
			n++
		}
		byteToRune[b] = r
		runeToByte[r] = byte(b)
	}
}

// ByteLevelEncode spells raw bytes in the byte-level alphabet.
func ByteLevelEncode(b []byte) string {
	rs := make([]rune, len(b))
	for i, c := range b {
		rs[i] = byteToRune[c]
	}
	return string(rs)
}

// ByteLevelRune is the alphabet's rune for one byte.
func ByteLevelRune(b byte) rune { return byteToRune[b] }

// ByteLevelDecode turns a byte-level token back into raw bytes; ok is false
// when the token has a rune outside the alphabet (an added token, or a
// tokenizer that is not byte-level).
func ByteLevelDecode(tok string) (b []byte, ok bool) {
	b = make([]byte, 0, len(tok))
	for _, r := range tok {
		c, ok := runeToByte[r]
		if !ok {
			return nil, false
		}
		b = append(b, c)
	}
	return b, true
}
