// Command fakepulsar2 stands in for a natively installed pulsar2 (the
// seed's LXC with the compiler's Python package) in pulsar2's tests. It
// runs the same fake compiler as fakedocker (package fakecompiler) on the
// machine's own paths and environment, and records how it was started.
//
// Environment:
//
//	FAKE_PULSAR2_LOG     append one JSON line per invocation: argv, PYTHONPATH,
//	                     whether its first entry holds sitecustomize.py (the shim),
//	                     FLOAT_MATMUL_USE_CONV_EU
//	FAKE_PULSAR2_VERSION the version it reports (default 5.2)
//	FAKE_PULSAR2_FAIL, FAKE_PULSAR2_COS: see fakecompiler
package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/edgectl/edgectl/pulsar2/testdata/fakecompiler"
)

// Call is one line of FAKE_PULSAR2_LOG.
type Call struct {
	Argv       []string `json:"argv"`
	PythonPath string   `json:"pythonpath"`
	ShimFirst  bool     `json:"shim_first"`
	ConvEU     string   `json:"float_matmul_use_conv_eu"`
}

func main() {
	shim := ""
	if first, _, _ := strings.Cut(os.Getenv("PYTHONPATH"), string(os.PathListSeparator)); first != "" {
		if _, err := os.Stat(filepath.Join(first, "sitecustomize.py")); err == nil {
			shim = first
		}
	}
	if p := os.Getenv("FAKE_PULSAR2_LOG"); p != "" {
		b, _ := json.Marshal(Call{Argv: os.Args, PythonPath: os.Getenv("PYTHONPATH"), ShimFirst: shim != "",
			ConvEU: os.Getenv("FLOAT_MATMUL_USE_CONV_EU")})
		if f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			f.Write(append(b, '\n'))
			f.Close()
		}
	}
	version := os.Getenv("FAKE_PULSAR2_VERSION")
	if version == "" {
		version = "5.2"
	}
	h := fakecompiler.Host{
		Env: os.Getenv,
		// A native compiler sees the real file system; edgectl passes
		// absolute paths.
		Path: func(p string) (string, bool) {
			if !filepath.IsAbs(p) {
				return "", false
			}
			_, err := os.Stat(p)
			return p, err == nil
		},
		ShimDir: shim,
	}
	fakecompiler.Main(h, version, os.Args[1:])
}
