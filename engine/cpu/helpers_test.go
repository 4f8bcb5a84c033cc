package cpu

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/edgectl/edgectl/engine"
)

func loadModel(t testing.TB, path string) *model {
	t.Helper()
	em, err := New().Load(context.Background(), path, engine.LoadOptions{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { em.Close() })
	return em.(*model)
}

// quantTestValues is input for the activation-quantization kernels: normal
// values, exact ties (k+0.5 of both signs, which round away from zero),
// integers, and values that go beyond ±127 at the larger scales.
func quantTestValues(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		switch i % 5 {
		case 0:
			x[i] = float32(rng.NormFloat64())
		case 1:
			x[i] = float32(rng.IntN(255)-127) + 0.5
		case 2:
			x[i] = -float32(rng.IntN(128)) - 0.5
		case 3:
			x[i] = float32(rng.IntN(255) - 127)
		default:
			x[i] = float32(rng.NormFloat64() * 40)
		}
	}
	return x
}
