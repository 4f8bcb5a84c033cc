package rknnrt

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// The helper protocol, both directions over the helper's stdin and stdout:
// a frame is one JSON object on one line (Header, at most MaxHeader bytes
// with its '\n'), then exactly Header.Bytes bytes of payload: the tensors
// the header lists, in that order, each little-endian float32 in row-major
// order. docs/rknn.md "On the board" has the exchange:
//
//	host → helper  {"op":"load","shards":[…],"outputs":[…]}      once, first
//	helper → host  {"op":"ready","runtime":"…","timings":[…]}    or an error frame, then exit
//	host → helper  {"op":"run","id":N,"tensors":[…],"bytes":B}   + B bytes
//	helper → host  {"op":"result","id":N,"tensors":[…],"timings":[…],"ms":T,"bytes":B} + B bytes
//	               or {"op":"error","id":N,"shard":K,"message":"…"}
//	host → helper  {"op":"quit"}                                  the helper releases and exits 0
//
// The helper also exits at end of input (its server is gone).

// Ops.
const (
	OpLoad   = "load"
	OpReady  = "ready"
	OpRun    = "run"
	OpResult = "result"
	OpError  = "error"
	OpQuit   = "quit"
)

// MaxHeader bounds a header line: a helper that writes more is broken.
const MaxHeader = 1 << 20

// Header is a frame's JSON line; each op uses the fields the exchange
// above shows.
type Header struct {
	Op      string       `json:"op"`
	ID      uint64       `json:"id,omitempty"`
	Bytes   int64        `json:"bytes,omitempty"`
	Shards  []ShardSpec  `json:"shards,omitempty"`  // load
	Outputs []string     `json:"outputs,omitempty"` // load: the model outputs a result returns
	Tensors []TensorSpec `json:"tensors,omitempty"` // run, result: the payload's tensors
	Timings []Timing     `json:"timings,omitempty"` // ready (load), result (run): one per shard, in run order
	MS      float64      `json:"ms,omitempty"`      // result: the helper's time for the whole chain
	Runtime string       `json:"runtime,omitempty"` // ready: what runs the shards, with its version
	Shard   *int         `json:"shard,omitempty"`   // error: the shard that failed, when one did
	Message string       `json:"message,omitempty"` // error
}

// ShardSpec is one shard the helper loads: its compiled file, the NPU
// core it is pinned to, and the tensors it reads and writes by name.
type ShardSpec struct {
	Index   int          `json:"index"`
	Path    string       `json:"path"`
	Core    int          `json:"core"`
	Inputs  []TensorSpec `json:"inputs"`
	Outputs []TensorSpec `json:"outputs"`
}

// TensorSpec names a tensor and its shape (float32 on the wire).
type TensorSpec struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
}

// Timing is one shard's load or run time on its core.
type Timing struct {
	Index int     `json:"index"`
	Core  int     `json:"core"`
	MS    float64 `json:"ms"`
}

// WriteFrame writes h (with Bytes set to len(payload)) and payload.
func WriteFrame(w io.Writer, h Header, payload []byte) error {
	h.Bytes = int64(len(payload))
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(append(b, '\n'))
	bw.Write(payload)
	return bw.Flush()
}

// ReadFrame reads one frame, refusing a header over MaxHeader and a
// payload over maxPayload bytes (what the reader expects at most), so a
// broken peer cannot make it allocate without bound.
func ReadFrame(r *bufio.Reader, maxPayload int64) (Header, []byte, error) {
	var h Header
	line, err := readLine(r)
	if err != nil {
		return h, nil, err
	}
	if err := json.Unmarshal(line, &h); err != nil {
		return h, nil, fmt.Errorf("frame header %q is not JSON: %v", clipBytes(line, 120), err)
	}
	if h.Bytes < 0 || h.Bytes > maxPayload {
		return h, nil, fmt.Errorf("%s frame announces %d payload bytes, more than the %d expected", h.Op, h.Bytes, maxPayload)
	}
	payload := make([]byte, h.Bytes)
	if _, err := io.ReadFull(r, payload); err != nil {
		return h, nil, fmt.Errorf("%s frame: payload of %d bytes cut short: %w", h.Op, h.Bytes, err)
	}
	return h, payload, nil
}

// readLine reads up to '\n' (dropped), at most MaxHeader bytes.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxHeader {
			return nil, fmt.Errorf("frame header longer than %d bytes: the peer does not speak the helper protocol", MaxHeader)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, fmt.Errorf("frame header %q cut short: %w", clipBytes(line, 120), io.ErrUnexpectedEOF)
		default:
			return nil, err
		}
	}
}

func clipBytes(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// Elements is the number of values a shape holds (1 for a scalar []),
// or -1 when a dimension is negative or the product overflows.
func Elements(shape []int) int {
	n := 1
	for _, d := range shape {
		if d < 0 || (d > 0 && n > math.MaxInt32/d) {
			return -1
		}
		n *= d
	}
	return n
}

// PutFloats appends v as little-endian float32 bytes to b.
func PutFloats(b []byte, v []float32) []byte {
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// Floats decodes little-endian float32 bytes (len(b) a multiple of 4).
func Floats(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
