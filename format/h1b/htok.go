package h1b

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/edgectl/edgectl/format/internal/modelfile"
)

// HtokMagic is the .htok signature.
const HtokMagic = "HTOK"

// Tokenizer is an .htok sidecar: byte-level BPE tokens (id = position) and
// merges as (a, b, merged) token ids (rank = position).
type Tokenizer struct {
	Tokens []string
	Merges [][3]uint32
	BOS    uint32
	EOS    uint32
}

// WriteTo encodes t.
func (t *Tokenizer) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriter(w)
	var n int64
	put := func(b []byte) { m, _ := bw.Write(b); n += int64(m) }
	le := binary.LittleEndian
	hdr := make([]byte, 20)
	copy(hdr, HtokMagic)
	le.PutUint32(hdr[4:], uint32(len(t.Tokens)))
	le.PutUint32(hdr[8:], uint32(len(t.Merges)))
	le.PutUint32(hdr[12:], t.BOS)
	le.PutUint32(hdr[16:], t.EOS)
	put(hdr)
	for i, s := range t.Tokens {
		if len(s) > 0xFFFF {
			return n, fmt.Errorf("htok: token %d is %d bytes; the format allows 65535", i, len(s))
		}
		put([]byte{byte(len(s)), byte(len(s) >> 8)})
		put([]byte(s))
	}
	var m [12]byte
	for _, mg := range t.Merges {
		le.PutUint32(m[0:], mg[0])
		le.PutUint32(m[4:], mg[1])
		le.PutUint32(m[8:], mg[2])
		put(m[:])
	}
	return n, bw.Flush()
}

// DecodeTokenizer parses .htok bytes; name is used in errors.
func DecodeTokenizer(b []byte, name string) (*Tokenizer, error) {
	fail := func(off int, format string, args ...any) error {
		return fmt.Errorf("%s: byte %d: %s", name, off, fmt.Sprintf(format, args...))
	}
	if len(b) < 20 || string(b[:4]) != HtokMagic {
		return nil, fail(0, "not an .htok file (want magic %q and a 20-byte header)", HtokMagic)
	}
	le := binary.LittleEndian
	nv, nm := le.Uint32(b[4:]), le.Uint32(b[8:])
	t := &Tokenizer{BOS: le.Uint32(b[12:]), EOS: le.Uint32(b[16:])}
	// Every token takes at least 2 bytes and every merge 12: counts that
	// cannot fit are refused before the tables are allocated.
	if nv > 1<<24 || int64(nv)*2 > int64(len(b)-20) || int64(nm)*12 > int64(len(b)-20) {
		return nil, fail(4, "counts (%d tokens, %d merges) do not fit in %d bytes or exceed 2^24 tokens (the file is corrupt: re-export it)", nv, nm, len(b))
	}
	off := 20
	t.Tokens = make([]string, nv)
	for i := range t.Tokens {
		if off+2 > len(b) {
			return nil, fail(off, "file ends in token %d of %d", i, nv)
		}
		n := int(le.Uint16(b[off:]))
		if off+2+n > len(b) {
			return nil, fail(off, "token %d (%d bytes) runs past the end", i, n)
		}
		t.Tokens[i] = string(b[off+2 : off+2+n])
		off += 2 + n
	}
	if len(b)-off != int(nm)*12 {
		return nil, fail(off, "%d bytes left for %d merges (want %d)", len(b)-off, nm, nm*12)
	}
	t.Merges = make([][3]uint32, nm)
	for i := range t.Merges {
		for j := 0; j < 3; j++ {
			v := le.Uint32(b[off:])
			if v >= nv {
				return nil, fail(off, "merge %d names token %d, past the vocab of %d", i, v, nv)
			}
			t.Merges[i][j] = v
			off += 4
		}
	}
	return t, nil
}

// MaxHtokSize caps an .htok file (a 2^24-token vocabulary with merges is
// well under it).
const MaxHtokSize = 256 << 20

// ReadTokenizer reads an .htok file. It must be a regular file (or a
// symlink to one) of at most MaxHtokSize bytes; a FIFO is refused without
// blocking.
func ReadTokenizer(path string) (*Tokenizer, error) {
	b, err := modelfile.ReadFile(path, MaxHtokSize, "an .htok file")
	if err != nil {
		return nil, err
	}
	return DecodeTokenizer(b, path)
}
