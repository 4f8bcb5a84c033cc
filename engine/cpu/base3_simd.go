//go:build !purego && (amd64 || arm64)

package cpu

import "unsafe"

// The Go side of the B3 SIMD kernels (base3_amd64.s, base3_arm64.s). The
// decode ones take nc whole 320-weight chunks against q, then, when tail
// is not nil, one more chunk against tail (a b3Tail); the prefill one
// takes the short last chunk's planes from q itself.

// b3Tail is the activations of a short last chunk (K mod 320 of them) in
// a zeroed chunk, so that the SIMD kernels can take it whole: the planes
// the chunk does not have meet zeros.
type b3Tail [b3Chunk]int8

// split returns the whole chunks of q and, where K mod 320 is not zero,
// the tail copied into t.
func (t *b3Tail) split(q []int8) (nc int, tail *int8) {
	nc = len(q) / b3Chunk
	if r := q[nc*b3Chunk:]; len(r) > 0 {
		copy(t[:], r)
		tail = &t[0]
	}
	return nc, tail
}

// b3RowsKernel wraps a B3 group kernel as a rows kernel (len(out) a
// multiple of four).
func b3RowsKernel(kern func(groups *byte, q *int8, nc int, tail *int8, ngroups int, total int32, xs float32, scale *float32, out *float32)) func(groups []byte, q []int8, total int32, xs float32, scale, out []float32) {
	return func(groups []byte, q []int8, total int32, xs float32, scale, out []float32) {
		ng := len(out) / 4
		if ng == 0 || len(q) == 0 {
			clear(out) // K = 0: total is 0 too
			return
		}
		var t b3Tail
		nc, tail := t.split(q)
		_ = groups[ng*4*rowBytesFor("B3", len(q))-1]
		_ = scale[4*ng-1]
		kern(unsafe.SliceData(groups), unsafe.SliceData(q), nc, tail, ng, total, xs, unsafe.SliceData(scale), unsafe.SliceData(out))
	}
}

// b3DotKernel wraps a one-row B3 kernel as a dot (total = Σq).
func b3DotKernel(kern func(row *byte, q *int8, nc int, tail *int8) int32) func(row []byte, q []int8, total int32) int32 {
	return func(row []byte, q []int8, total int32) int32 {
		if len(q) == 0 {
			return -total
		}
		var t b3Tail
		nc, tail := t.split(q)
		_ = row[(len(q)+b3Chunk-1)/b3Chunk*256-192-1]
		return kern(unsafe.SliceData(row), unsafe.SliceData(q), nc, tail) - total
	}
}

// b3Dot4x4Kernel wraps a kernel for one group of four B3 rows and four
// tokens (nc whole chunks, then one of lastp planes) as a dot4x4
// (out[4r+t], the tokens' Σq subtracted).
func b3Dot4x4Kernel(kern func(group *byte, q *int8, k int, nc int, lastp int, out *int32)) func(group []byte, q []int8, k int, totals []int32, out *[16]int32) {
	return func(group []byte, q []int8, k int, totals []int32, out *[16]int32) {
		_ = totals[3]
		if k == 0 {
			*out = [16]int32{}
		} else {
			_ = group[4*rowBytesFor("B3", k)-1]
			_ = q[4*k-1]
			kern(unsafe.SliceData(group), unsafe.SliceData(q), k, k/b3Chunk, k%b3Chunk/64, &out[0])
		}
		for i := range out {
			out[i] -= totals[i%4]
		}
	}
}
