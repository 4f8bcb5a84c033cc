package cpu

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/edgectl/edgectl/engine"
)

// kernelSets builds the kernel table of every feature set this CPU can
// run, portable first, each SIMD set one feature more than the one before
// (amd64: avx2, avx512, avx512vnni; arm64: neon, neon-dotprod): the tests
// compare every set's kernels against the portable ones.
func kernelSets() []*kernels {
	var out []*kernels
	for _, f := range featureLadder(detectFeatures()) {
		out = append(out, newKernels(f))
	}
	return out
}

func featureLadder(cpu cpuFeatures) []cpuFeatures {
	sets := []cpuFeatures{{}}
	if cpu.avx2 {
		sets = append(sets, cpuFeatures{avx2: true})
		if cpu.avx512 {
			sets = append(sets, cpuFeatures{avx2: true, avx512: true})
			if cpu.vnni {
				sets = append(sets, cpuFeatures{avx2: true, avx512: true, vnni: true})
			}
		}
	}
	if cpu.neon {
		sets = append(sets, cpuFeatures{neon: true})
		if cpu.dotProd {
			sets = append(sets, cpuFeatures{neon: true, dotProd: true})
		}
	}
	return sets
}

// hostKernels is the table a model loads with here (the CPU's features,
// less what EDGECTL_* turns off).
func hostKernels(t testing.TB) *kernels {
	t.Helper()
	set, err := newSettings(engine.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return set.kernels()
}

// newActs is a batch of n rows of width k for kern, filled with normal
// values from rng.
func newActs(kern *kernels, rng *rand.Rand, n, k int) *acts {
	a := &acts{kern: kern}
	a.reset(n, k)
	for i := range a.f {
		a.f[i] = float32(rng.NormFloat64())
	}
	return a
}

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
