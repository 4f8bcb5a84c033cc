package sample

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/edgectl/edgectl/engine"
)

// The sampler never panics and always answers a token of the vocabulary,
// whatever floats it is given: NaN, ±Inf, huge, negative or subnormal
// temperature, top-p, min-p and penalties, and logits holding the same.
func FuzzSample(f *testing.F) {
	nan, inf := math.NaN(), math.Inf(1)
	seed := func(temp, topP, minP, rep, freq, pres float64, topK int, logits ...float32) {
		b := make([]byte, 0, 4*len(logits))
		for _, l := range logits {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(l))
		}
		f.Add(temp, topP, minP, rep, freq, pres, topK, int64(1), b, []byte{0, 1, 1, 2})
	}
	seed(0.8, 0.95, 0.05, 1.1, 0, 0, 40, 1, 2, 3)
	seed(nan, 0.95, 0.05, 1, 0, 0, 40, 1, 2, 3) // run --temperature NaN once panicked here
	seed(inf, nan, nan, nan, nan, nan, 0, 1, float32(nan), 3)
	seed(1, 1, 1, 0, inf, math.Inf(-1), -5, float32(nan), float32(nan))
	seed(1e-320, 1e300, -1, 1e300, 1e300, 1e300, math.MaxInt, float32(inf), float32(math.Inf(-1)), float32(inf))
	seed(math.Inf(-1), -1, 2, -3, 0, 0, 1, float32(math.Inf(-1)), float32(math.Inf(-1)))
	f.Fuzz(func(t *testing.T, temp, topP, minP, rep, freq, pres float64, topK int, seed int64, raw, hist []byte) {
		logits := make([]float32, 0, len(raw)/4+1)
		for i := 0; i+4 <= len(raw) && len(logits) < 4096; i += 4 {
			logits = append(logits, math.Float32frombits(binary.LittleEndian.Uint32(raw[i:])))
		}
		if len(logits) == 0 {
			logits = append(logits, 0) // a vocabulary has at least one token
		}
		history := make([]int, len(hist))
		for i, b := range hist {
			history[i] = int(int8(b)) // negative and out-of-vocabulary ids too
		}
		s := New(engine.Sampling{Temperature: &temp, TopP: topP, MinP: minP, TopK: topK,
			RepeatPenalty: rep, FrequencyPenalty: freq, PresencePenalty: pres, Seed: &seed, RepeatLastN: int(int8(topK))})
		for range 2 {
			work := append([]float32(nil), logits...)
			if id := s.Sample(work, history); id < 0 || id >= len(logits) {
				t.Fatalf("token %d of a %d-token vocabulary", id, len(logits))
			}
		}
	})
}
