package quant

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/progress"
)

// Output formats of Pack.
const (
	FormatTQ2_0    = "tq2_0"     // GGUF, llama.cpp TQ2_0
	FormatTQ1_0    = "tq1_0"     // GGUF, llama.cpp TQ1_0
	FormatF16      = "f16"       // GGUF, projections in F16 (no quantization)
	FormatF32      = "f32"       // GGUF, everything in F32 (no quantization)
	FormatSherry   = "sherry"    // .h1b v3
	FormatHALO2    = "halo2"     // .h1b v2
	FormatTQ1H     = "tq1h"      // .h1b v4 (base-3)
	FormatGPTQInt4 = "gptq-int4" // safetensors checkpoint, GPTQ layout
)

// Formats lists the accepted --format values.
var Formats = []string{FormatTQ2_0, FormatTQ1_0, FormatF16, FormatF32, FormatSherry, FormatHALO2, FormatTQ1H, FormatGPTQInt4}

// Options configure Pack.
type Options struct {
	Input  string // safetensors file or checkpoint directory
	Output string // .gguf / .h1b file, or a directory for gptq-int4; "-" or a device/FIFO streams (atomicfile.CreateOutput)
	// Stdout is where Output "-" writes (os.Stdout when nil).
	Stdout io.Writer
	Format string
	// Ternarize is auto (default), absmean or none; ignored by gptq-int4.
	Ternarize string
	// Threads bounds the worker count (0: GOMAXPROCS).
	Threads int
	// TokenizerPre overrides tokenizer.ggml.pre (GGUF only).
	TokenizerPre string
	// OnEvent, when set, hears Progress (input bytes consumed, step
	// "quant") and each Warning (one line; also in Result.Warnings).
	OnEvent progress.Func
}

// TensorReport describes one output tensor.
type TensorReport struct {
	Name   string  `json:"name"`
	Source string  `json:"source"`
	Type   string  `json:"type"`
	Shape  []int64 `json:"shape"`
	Method string  `json:"method,omitempty"` // how it was ternarized
}

// Result summarizes a Pack run.
type Result struct {
	Output      string         `json:"output"`
	Format      string         `json:"format"`
	Arch        string         `json:"architecture,omitempty"`
	Ternarize   string         `json:"ternarize,omitempty"`
	InputBytes  int64          `json:"input_bytes"`
	OutputBytes int64          `json:"output_bytes"`
	Seconds     float64        `json:"seconds"`
	Tensors     []TensorReport `json:"tensors"`
	Files       []string       `json:"files"`
	Warnings    []string       `json:"warnings,omitempty"`
	// StaleRemoved lists temporaries of killed earlier runs writing the
	// same outputs, removed before this one.
	StaleRemoved []string `json:"stale_removed,omitempty"`
}

// Pack converts a checkpoint into one of Formats.
func Pack(ctx context.Context, opts Options) (*Result, error) {
	if opts.Ternarize == "" {
		opts.Ternarize = TernarizeAuto
	}
	switch opts.Ternarize {
	case TernarizeAuto, TernarizeAbsmean, TernarizeNone:
	default:
		return nil, fmt.Errorf("--ternarize %q: want auto, absmean or none", opts.Ternarize)
	}
	if opts.Threads <= 0 {
		opts.Threads = runtime.GOMAXPROCS(0)
	}
	if opts.Output == "" {
		return nil, fmt.Errorf("no output path: pass -o OUT")
	}
	if opts.Format == FormatGPTQInt4 && atomicfile.IsStream(opts.Output) {
		return nil, errkind.Errorf(errkind.Usage, "-o %s: gptq-int4 writes a checkpoint directory, which cannot be streamed; name a new directory", opts.Output)
	}
	if _, err := os.Stat(opts.Input); err != nil {
		return nil, err
	}
	stale, err := guardOutputs(opts)
	if err != nil {
		return nil, err
	}
	src, err := openSource(opts.Input)
	if err != nil {
		return nil, err
	}
	defer src.close()
	if err := needsConfig(opts, src); err != nil {
		return nil, err
	}
	if err := makeOutputParents(opts); err != nil {
		return nil, err
	}
	p := &packer{opts: opts, src: src, res: &Result{Output: opts.Output, Format: opts.Format, InputBytes: src.bytes, StaleRemoved: stale},
		emit: progress.Every(progress.Interval, opts.OnEvent)}
	start := time.Now()
	switch opts.Format {
	case FormatTQ2_0, FormatTQ1_0, FormatF16, FormatF32:
		err = p.packGGUF(ctx)
	case FormatSherry, FormatHALO2, FormatTQ1H:
		if opts.Ternarize == TernarizeNone && opts.Format != FormatSherry {
			return nil, fmt.Errorf("--ternarize none needs a format with its own quantizer (tq1_0, tq2_0, sherry); %s packs ternary codes: use auto or absmean", opts.Format)
		}
		err = p.packH1B(ctx)
	case FormatGPTQInt4:
		err = p.packGPTQ(ctx)
	default:
		return nil, fmt.Errorf("--format %q: want one of %s", opts.Format, strings.Join(Formats, ", "))
	}
	if err != nil {
		return nil, err
	}
	p.res.Seconds = time.Since(start).Seconds()
	return p.res, nil
}

type packer struct {
	opts Options
	src  *source
	res  *Result
	dims dims
	emit progress.Func // opts.OnEvent, progress at most every progress.Interval

	mu   sync.Mutex
	done int64 // input bytes consumed, for progress
}

func (p *packer) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.res.Warnings = append(p.res.Warnings, msg)
	p.emit.Emit(progress.Event{Event: progress.Warning, Message: msg})
}

func (p *packer) progress(n int64) {
	if p.emit == nil {
		return
	}
	p.mu.Lock() // workers report concurrently; the counts go out in order
	defer p.mu.Unlock()
	p.done += n
	p.emit(progress.Event{Event: progress.Progress, Step: "quant", Done: p.done, Total: p.src.bytes, Unit: "bytes"})
}

// chunkBytes is the input size of one parallel job (a variable so tests
// can force many chunks on small tensors).
var chunkBytes int64 = 4 << 20

// chunkRows picks rows per parallel job: about chunkBytes of input.
func chunkRows(l *linear) int {
	return max(1, min(l.rows, int(chunkBytes/max(1, l.rowInBytes()))))
}

// valueError names tensor, shape, row and element for a bad value.
func valueError(l *linear, r int, err error) error {
	var re *RowError
	if errors.As(err, &re) {
		return errkind.Errorf(errkind.Input, "tensor %q %v: row %d, %s", l.name, l.fromShape, r, re.Error())
	}
	return fmt.Errorf("tensor %q %v: row %d: %w", l.name, l.fromShape, r, err)
}

// scan reads a linear once to decide how it becomes ternary: which rows are
// already ternary (and their α), and the absmean scale. It also rejects
// NaN/Inf with the tensor, row and element.
func (p *packer) scan(ctx context.Context, l *linear) (*plan, error) {
	pl := &plan{mode: p.opts.Ternarize, tern: make([]bool, l.rows), alpha: make([]float32, l.rows), nRows: l.rows}
	cr := chunkRows(l)
	n := (l.rows + cr - 1) / cr
	err := ordered(ctx, p.opts.Threads, n, func(c int) (float64, error) {
		w := make([]float32, l.k)
		var sum float64
		for r := c * cr; r < min(l.rows, (c+1)*cr); r++ {
			l.row(r, w)
			if i := checkFinite(w); i >= 0 {
				return 0, valueError(l, r, &RowError{i, fmt.Sprintf("value %v is not finite (NaN/Inf); the checkpoint is corrupt", w[i])})
			}
			var rs float32
			pl.alpha[r], rs, pl.tern[r] = rowStats(w)
			sum += float64(rs)
		}
		return sum, nil
	}, func(_ int, s float64) error { pl.sumAbs += s; return nil })
	if err != nil {
		return nil, err
	}
	for _, t := range pl.tern {
		if t {
			pl.nTern++
		}
	}
	pl.s = AbsmeanScale(pl.sumAbs, int64(l.rows)*int64(l.k))
	return pl, nil
}

// transform streams a linear's rows through fn in parallel chunks and
// emits the packed output in row order. order[j] is the source row of
// output row j (nil: identity). fn writes outRowBytes bytes for one row
// and returns that row's scale.
func (p *packer) transform(ctx context.Context, l *linear, outRowBytes int, order []int,
	fn func(r int, w []float32, q []int8, dst []byte) (float32, error), emit func([]byte) error) ([]float32, error) {
	scales := make([]float32, l.rows)
	if l.release != nil {
		defer l.release()
	}
	cr := chunkRows(l)
	n := (l.rows + cr - 1) / cr
	// Output chunks are recycled once written: the pipeline then allocates
	// about 2×threads chunks per tensor instead of one per chunk, which
	// keeps the garbage collector (and its preemptions) out of the loop.
	var pool sync.Pool
	err := ordered(ctx, p.opts.Threads, n, func(c int) ([]byte, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r0, r1 := c*cr, min(l.rows, (c+1)*cr)
		var out []byte
		if bp, ok := pool.Get().(*[]byte); ok {
			out = *bp
		}
		if cap(out) < (r1-r0)*outRowBytes {
			out = make([]byte, cr*outRowBytes)
		}
		out = out[:(r1-r0)*outRowBytes]
		w := make([]float32, l.k)
		q := make([]int8, l.k)
		for j := r0; j < r1; j++ {
			r := j
			if order != nil {
				r = order[j]
			}
			l.row(r, w)
			s, err := fn(r, w, q, out[(j-r0)*outRowBytes:(j-r0+1)*outRowBytes])
			if err != nil {
				return nil, valueError(l, r, err)
			}
			scales[j] = s
		}
		return out, nil
	}, func(c int, b []byte) error {
		p.progress(int64(min(l.rows, (c+1)*cr)-c*cr) * l.rowInBytes())
		err := emit(b)
		b = b[:0]
		pool.Put(&b) // a pointer: storing a slice in the pool would allocate

		return err
	})
	return scales, err
}
