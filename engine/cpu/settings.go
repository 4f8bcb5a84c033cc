package cpu

import (
	"cmp"
	"fmt"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/internal/envconfig"
)

// settings are what one Load decides by: its LoadOptions, and the
// EDGECTL_* variables of the CPU engine, read here, once per Load, through
// their internal/envconfig accessors. Nothing else in the package reads
// the environment: the kernel table, weight placement and the head form
// take their choices from a settings value.
type settings struct {
	// mmap serves weights from the file mapping (LoadOptions.Mmap or
	// EDGECTL_MMAP).
	mmap bool
	// head is the LM head form: one of headForms (head4.go), or anything
	// else for the default by the layers' type (LoadOptions.Head, else
	// EDGECTL_HEAD; see model.headForm).
	head string
	// The kernel choice: EDGECTL_PUREGO (portable kernels only),
	// EDGECTL_NO_AVX512 (amd64 stops at AVX2), EDGECTL_NO_DOTPROD (arm64
	// without SDOT).
	pureGo, noAVX512, noDotProd bool
	// nativePacking keeps every ternary matrix in its file layout
	// (EDGECTL_NATIVE_PACKING); plainI2 repacks to plain I2 rows, never
	// the interleaved I2x4 (EDGECTL_I2_PLAIN). Both are for comparison.
	nativePacking, plainI2 bool
}

// newSettings checks opts and completes them from the environment.
func newSettings(opts engine.LoadOptions) (settings, error) {
	if opts.Head != "" && !isHeadForm(opts.Head) {
		return settings{}, fmt.Errorf("%w: head %q: the CPU engine keeps the LM head as %s", engine.ErrInvalidRequest, opts.Head, headForms)
	}
	return settings{
		mmap:          opts.Mmap || envconfig.Mmap.Get(),
		head:          cmp.Or(opts.Head, envconfig.Head.Get()),
		pureGo:        envconfig.PureGo.Get(),
		noAVX512:      envconfig.NoAVX512.Get(),
		noDotProd:     envconfig.NoDotProd.Get(),
		nativePacking: envconfig.NativePacking.Get(),
		plainI2:       envconfig.I2Plain.Get(),
	}, nil
}

// features is what the kernel table is built for: the CPU's features less
// those the settings turn off.
func (s settings) features(cpu cpuFeatures) cpuFeatures {
	if s.pureGo {
		return cpuFeatures{}
	}
	if s.noAVX512 {
		cpu.avx512, cpu.vnni, cpu.vbmi = false, false, false
	}
	if s.noDotProd {
		cpu.dotProd = false
	}
	return cpu
}

// kernels builds the table a model loaded with these settings runs.
func (s settings) kernels() *kernels { return newKernels(s.features(detectFeatures())) }
