package hubtest

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
)

// Content is a file's bytes, held in memory or generated on the fly so that
// multi-GiB files cost no memory.
type Content interface {
	Size() int64
	io.ReaderAt
}

// Bytes is content held in memory.
func Bytes(b []byte) Content { return bytesContent(b) }

type bytesContent []byte

func (b bytesContent) Size() int64 { return int64(len(b)) }
func (b bytesContent) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Generated is size deterministic pseudo-random bytes for seed: a 1 MiB
// random block repeated, each repetition stamped with its index so no two
// blocks are equal.
func Generated(seed uint64, size int64) Content {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	block := make([]byte, genBlock)
	for i := 0; i < genBlock; i += 8 {
		binary.LittleEndian.PutUint64(block[i:], r.Uint64())
	}
	return &generated{block: block, size: size}
}

const genBlock = 1 << 20

type generated struct {
	block []byte
	size  int64
}

func (g *generated) Size() int64 { return g.size }

func (g *generated) ReadAt(p []byte, off int64) (int, error) {
	if off >= g.size {
		return 0, io.EOF
	}
	want := len(p)
	if rest := g.size - off; int64(want) > rest {
		want = int(rest)
	}
	n := 0
	for n < want {
		pos := off + int64(n)
		idx, in := pos/genBlock, int(pos%genBlock)
		k := copy(p[n:want], g.block[in:])
		// Stamp the block index over the first 8 bytes of every block.
		if in < 8 {
			var stamp [8]byte
			binary.LittleEndian.PutUint64(stamp[:], uint64(idx)^binary.LittleEndian.Uint64(g.block))
			for j := in; j < 8 && j-in < k; j++ {
				p[n+j-in] = stamp[j]
			}
		}
		n += k
	}
	if want < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// digests of a content, computed once.
type digests struct {
	once   sync.Once
	sha256 string
	gitSHA string
}

func (d *digests) get(c Content) (sha256hex, gitSHA1 string) {
	d.once.Do(func() {
		h, g := sha256.New(), sha1.New()
		fmt.Fprintf(g, "blob %d\x00", c.Size())
		io.Copy(io.MultiWriter(h, g), io.NewSectionReader(c, 0, c.Size()))
		d.sha256, d.gitSHA = hex.EncodeToString(h.Sum(nil)), hex.EncodeToString(g.Sum(nil))
	})
	return d.sha256, d.gitSHA
}

// GitBlobSHA1 is git's object id of b, the Hub's ETag for a non-LFS file.
func GitBlobSHA1(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}
