package pulsar2

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/edgectl/edgectl/internal/atomicfile"
)

// ShimVersion is stamped into every sitecustomize.py edgectl writes, so an
// image or directory can be checked for the shim it carries.
const ShimVersion = 1

// ShimFileName is the module Python's site machinery imports at startup.
const ShimFileName = "sitecustomize.py"

// ShimOrigFileName is where an image's own sitecustomize.py is kept when the
// shim replaces it; the shim runs it after installing its hooks.
const ShimOrigFileName = "_edgectl_orig_sitecustomize.py"

// ShimLogPrefix starts every line the shim writes to stderr.
const ShimLogPrefix = "[edgectl-shim]"

// ShimOptions selects the shim's hooks.
type ShimOptions struct {
	// AliasLambert maps backend.lambert* to backend.ax8860* and sets
	// LambertBackend = AX8860Backend (for --chip LAMBERT).
	AliasLambert bool `json:"alias_lambert"`
	// RelaxGroupN makes get_group_info return (0, 0) where it would assert
	// "invalid groupN".
	RelaxGroupN bool `json:"relax_groupn"`
	// FP32AsBF16 maps get_ifm_dtype's KeyError for FP32 to BF16 (6).
	FP32AsBF16 bool `json:"fp32_as_bf16"`
	// Gate, when set, names an environment variable that must be "1" for
	// the hooks to install (image patch sets it in its pulsar2 wrapper, so
	// other Python programs in the image are untouched).
	Gate string `json:"gate,omitempty"`
}

// Any reports whether at least one hook is enabled.
func (o ShimOptions) Any() bool { return o.AliasLambert || o.RelaxGroupN || o.FP32AsBF16 }

// Hooks lists the enabled hooks by their flag names.
func (o ShimOptions) Hooks() []string {
	var h []string
	if o.AliasLambert {
		h = append(h, "alias-lambert")
	}
	if o.RelaxGroupN {
		h = append(h, "relax-groupn")
	}
	if o.FP32AsBF16 {
		h = append(h, "fp32-as-bf16")
	}
	return h
}

//go:embed sitecustomize.py.in
var shimTemplate string

// ShimSource renders sitecustomize.py for opts.
func ShimSource(opts ShimOptions) []byte {
	pyBool := func(b bool) string {
		if b {
			return "True"
		}
		return "False"
	}
	dict := fmt.Sprintf(`{"alias_lambert": %s, "relax_groupn": %s, "fp32_as_bf16": %s, "gate": %s}`,
		pyBool(opts.AliasLambert), pyBool(opts.RelaxGroupN), pyBool(opts.FP32AsBF16), strconv.Quote(opts.Gate))
	s := strings.Replace(shimTemplate, "__EDGECTL_OPTIONS__", dict, 1)
	s = strings.Replace(s, "__EDGECTL_SHIM_VERSION__", strconv.Itoa(ShimVersion), 1)
	return []byte(s)
}

// IsShim reports whether b is a sitecustomize.py written by edgectl.
func IsShim(b []byte) bool {
	return strings.HasPrefix(string(b), "# sitecustomize.py written by edgectl")
}

// WriteShim writes DIR/sitecustomize.py (creating DIR) and returns its path.
// Put DIR on PYTHONPATH, or the file in site-packages, to activate it.
func WriteShim(dir string, opts ShimOptions) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("shim: no output directory given (use -o DIR)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("shim: %w", err)
	}
	path := filepath.Join(dir, ShimFileName)
	if b, err := os.ReadFile(path); err == nil && !IsShim(b) {
		return "", fmt.Errorf("shim: %s exists and was not written by edgectl; choose another -o or move it aside", path)
	}
	if _, err := atomicfile.CleanStale(dir, ShimFileName); err != nil {
		return "", fmt.Errorf("shim: %w", err)
	}
	if err := atomicfile.WriteFile(path, ShimSource(opts), 0o644); err != nil {
		return "", fmt.Errorf("shim: %w", err)
	}
	return path, nil
}
