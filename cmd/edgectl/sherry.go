package main

import (
	"context"
	"fmt"
	"math"

	"github.com/spf13/cobra"

	"github.com/edgectl/edgectl/format/h1b"
	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/quant"
	"github.com/edgectl/edgectl/sherry"
)

func init() { register(newSherryCmd) }

func newSherryCmd(io *cli.IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sherry",
		Short: "Sherry 1.25-bit (.h1b v3) packing and checks",
	}
	cmd.AddCommand(newQuantPackCmd(io, quant.FormatSherry, runQuantPack))
	cmd.AddCommand(newSherryVerifyCmd(io, runSherryVerify))
	return cmd
}

type sherryVerifyOptions struct{ Path string }

func newSherryVerifyCmd(io *cli.IO, runF func(context.Context, *cli.IO, *sherryVerifyOptions) error) *cobra.Command {
	o := &sherryVerifyOptions{}
	return &cobra.Command{
		Use:   "verify FILE.h1b",
		Short: "Check a Sherry .h1b: layout, every code decodes to 3:4, scales finite and non-negative",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Path = args[0]
			return runF(cmd.Context(), io, o)
		},
	}
}

type sherryTensorStat struct {
	Name     string  `json:"name"`
	Rows     int     `json:"rows"`
	K        int     `json:"k"`
	Positive float64 `json:"positive_fraction"`
	MinScale float32 `json:"min_scale"`
	MaxScale float32 `json:"max_scale"`
}

func runSherryVerify(ctx context.Context, io *cli.IO, o *sherryVerifyOptions) error {
	f, err := h1b.Open(o.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	if f.Version != h1b.V3Sherry {
		return fmt.Errorf("%s: .h1b version %d (%s), not 3 (Sherry)", o.Path, f.Version, h1b.Packing(f.Version))
	}
	var stats []sherryTensorStat
	for _, t := range f.Tensors {
		if t.Kind != h1b.Packed {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		codes, err := f.Bytes(t)
		if err != nil {
			return err
		}
		scales, err := f.Scales(t)
		if err != nil {
			return err
		}
		st := sherryTensorStat{Name: t.Name, Rows: t.Rows, K: t.K, MinScale: float32(math.Inf(1)), MaxScale: float32(math.Inf(-1))}
		rb := sherry.RowBytes(t.K)
		q := make([]int8, t.K)
		var pos int64
		for r := 0; r < t.Rows; r++ {
			s := scales[r]
			if s != s || math.IsInf(float64(s), 0) || s < 0 {
				return fmt.Errorf("%s: byte %d: tensor %q row %d: scale %v is not a finite non-negative number", o.Path, t.ScalesOffset+4*int64(r), t.Name, r, s)
			}
			st.MinScale, st.MaxScale = min(st.MinScale, s), max(st.MaxScale, s)
			sherry.UnpackRow(q, codes[r*rb:(r+1)*rb])
			for g := 0; g < t.K; g += 4 {
				zeros := 0
				for p := 0; p < 4; p++ {
					switch {
					case q[g+p] == 0:
						zeros++
					case q[g+p] > 0:
						pos++
					}
				}
				if zeros != 1 { // cannot happen with a correct decoder; guards the codec
					return fmt.Errorf("%s: tensor %q row %d group %d decodes to %d zeros", o.Path, t.Name, r, g/4, zeros)
				}
			}
		}
		st.Positive = float64(pos) / (0.75 * float64(t.Rows) * float64(t.K))
		stats = append(stats, st)
	}
	if io.JSON {
		return io.WriteJSON(map[string]any{"path": o.Path, "ok": true, "header": f.Header, "tensors": stats})
	}
	io.Printf("%s: Sherry .h1b v3 OK — %d layers, %d packed tensors, hidden %d, ffn %d, vocab %d\n",
		o.Path, f.NumLayers, len(stats), f.HiddenSize, f.IntermediateSize, f.VocabSize)
	for _, s := range stats {
		io.Printf("  %-22s [%d×%d] +1 share %.3f, scale %.6g..%.6g\n", s.Name, s.Rows, s.K, s.Positive, s.MinScale, s.MaxScale)
	}
	return nil
}
