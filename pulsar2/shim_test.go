package pulsar2

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeCompiler is a small stand-in for the compiler's Python packages: a
// backend package with an AX8860 backend and no lambert, and a conv_common
// module nested inside another package, as pulsar2 nests it.
var fakeCompiler = map[string]string{
	"backend/__init__.py": "from .ax8860 import AX8860Backend\n",
	"backend/ax8860/__init__.py": `
LOADS = globals().get("LOADS", 0) + 1
class AX8860Backend(object):
    name = "ax8860"
`,
	"backend/ax8860/tiler.py":     "KIND = 'tiler'\n",
	"backend/ax8860_backend.py":   "KIND = 'flat'\n",
	"yamain/__init__.py":          "",
	"yamain/frontend/__init__.py": "",
	"yamain/frontend/conv_common.py": `
import enum
class DataType(enum.Enum):
    FP32 = 0
    FP16 = 5
    BF16 = 6
    INT4 = 9
DTYPES = {"BF16": 6, "FP16": 5, DataType.BF16: 6}

def get_group_info(n, fail=None):
    if fail == "groupn":
        assert False, "invalid groupN %d for weight" % n
    if fail == "other":
        assert False, "kernel too large"
    return (n, 1)

def get_ifm_dtype(key):
    return DTYPES[key]

def caller(n, fail=None):
    return get_group_info(n, fail)

class Tiler(object):
    def get_group_info(self, n):
        assert False, "invalid groupN in class"
    @staticmethod
    def get_ifm_dtype(key):
        return DTYPES[key]
`,
	"yamain/other.py": `
def get_group_info(n):
    assert False, "invalid groupN untargeted"
`,
	"plainmod.py": "VALUE = 42\n",
}

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// pythons lists the interpreters to test the shim with: python3 and the
// paths in EDGECTL_TEST_PYTHONS (colon-separated), so CI can cover every
// version the shim supports (3.8-3.12). Each is resolved to its real executable (version
// manager shims are slow) and each version listed once; the probe runs once per process.
func pythons(t *testing.T) []string {
	t.Helper()
	pythonsOnce.Do(func() {
		seen := map[string]bool{}
		cands := []string{"python3"}
		cands = append(cands, filepath.SplitList(os.Getenv("EDGECTL_TEST_PYTHONS"))...)
		for _, n := range cands {
			p, err := exec.LookPath(n)
			if err != nil {
				continue
			}
			out, err := exec.Command(p, "-c", "import sys; assert sys.version_info >= (3, 8); print(sys.version.split()[0], sys.executable)").Output()
			ver, real, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
			if err != nil || real == "" || seen[ver] {
				continue
			}
			seen[ver] = true
			pythonList = append(pythonList, real)
			pythonVersion[real] = ver
		}
	})
	if len(pythonList) == 0 {
		t.Skip("python3 not on PATH")
	}
	return pythonList
}

var (
	pythonsOnce   sync.Once
	pythonList    []string
	pythonVersion = map[string]string{}
)

// forEachPython runs f once per interpreter as a subtest.
func forEachPython(t *testing.T, f func(t *testing.T, py string)) {
	for _, py := range pythons(t) {
		t.Run("python"+pythonVersion[py], func(t *testing.T) { f(t, py) })
	}
}

// runPy runs script with PYTHONPATH=paths and returns the JSON the script
// prints as its last stdout line, plus stderr.
func runPy(t *testing.T, py string, paths []string, env []string, script string) (map[string]any, string) {
	t.Helper()
	cmd := exec.Command(py, "-c", script)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+strings.Join(paths, string(os.PathListSeparator)), "PYTHONDONTWRITEBYTECODE=1")
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("python3 failed: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var res map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("script output %q: %v\nstderr:\n%s", out.String(), err, errb.String())
	}
	return res, errb.String()
}

func setupShim(t *testing.T, opts ShimOptions) (shimDir, pkgDir string) {
	t.Helper()
	root := t.TempDir()
	shimDir, pkgDir = filepath.Join(root, "shim"), filepath.Join(root, "pkgs")
	if _, err := WriteShim(shimDir, opts); err != nil {
		t.Fatal(err)
	}
	writeTree(t, pkgDir, fakeCompiler)
	return shimDir, pkgDir
}

func shimLines(stderr, hook string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, ShimLogPrefix+" "+hook+":") {
			out = append(out, l)
		}
	}
	return out
}

func wantEqual(t *testing.T, res map[string]any, key string, want any) {
	t.Helper()
	got, ok := res[key]
	if !ok {
		t.Errorf("%s: missing from script output %v", key, res)
		return
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if !bytes.Equal(gb, wb) {
		t.Errorf("%s = %s, want %s", key, gb, wb)
	}
}

func TestShimAliasLambert(t *testing.T) {
	forEachPython(t, func(t *testing.T, py string) {
		shim, pkgs := setupShim(t, ShimOptions{AliasLambert: true})
		res, stderr := runPy(t, py, []string{shim, pkgs}, nil, `
import json, importlib, sys
import backend.lambert as lam
import backend.ax8860 as ax
from backend import LambertBackend
import backend.lambert.tiler as lt
import backend.lambert_backend as lb
import backend.ax8860_backend as ab
mod = importlib.import_module("backend.lambert")
try:
    import backend.lambertx
    missing = "imported"
except ModuleNotFoundError as e:
    missing = e.name
print(json.dumps({
  "same_module": lam is ax and mod is ax,
  "loads": ax.LOADS,
  "backend_alias": LambertBackend is ax.AX8860Backend,
  "module_alias": getattr(lam, "LambertBackend", None) is ax.AX8860Backend,
  "spec_name": lam.__spec__.name,
  "submodule": lt is sys.modules["backend.ax8860.tiler"] and lt.KIND,
  "flat": lb is ab,
  "missing": missing,
}))
`)
		wantEqual(t, res, "same_module", true)
		wantEqual(t, res, "loads", 1)
		wantEqual(t, res, "backend_alias", true)
		wantEqual(t, res, "module_alias", true)
		wantEqual(t, res, "spec_name", "backend.ax8860")
		wantEqual(t, res, "submodule", "tiler")
		wantEqual(t, res, "flat", true)
		wantEqual(t, res, "missing", "backend.lambertx")
		resolved := 0
		for _, l := range shimLines(stderr, "alias-lambert") {
			if strings.Contains(l, "backend.lambert: resolved to backend.ax8860") {
				resolved++
			}
		}
		if resolved != 1 {
			t.Errorf("want one log line for the backend.lambert alias, stderr:\n%s", stderr)
		}
	})
}

// A real backend.lambert, if the image has one, wins over the alias.
func TestShimAliasKeepsRealLambert(t *testing.T) {
	forEachPython(t, func(t *testing.T, py string) {
		shim, pkgs := setupShim(t, ShimOptions{AliasLambert: true})
		writeTree(t, pkgs, map[string]string{"backend/lambert.py": "REAL = True\n"})
		res, stderr := runPy(t, py, []string{shim, pkgs}, nil, `
import json
import backend.lambert as lam
print(json.dumps({"real": getattr(lam, "REAL", False), "name": lam.__name__}))
`)
		wantEqual(t, res, "real", true)
		wantEqual(t, res, "name", "backend.lambert")
		for _, l := range shimLines(stderr, "alias-lambert") {
			if strings.Contains(l, "resolved to") {
				t.Errorf("aliased although a real backend.lambert exists: %q", l)
			}
		}
	})
}

func TestShimRelaxGroupN(t *testing.T) {
	forEachPython(t, func(t *testing.T, py string) {
		shim, pkgs := setupShim(t, ShimOptions{RelaxGroupN: true})
		res, stderr := runPy(t, py, []string{shim, pkgs}, nil, `
import json
from yamain.frontend import conv_common as cc
from yamain.frontend.conv_common import get_group_info
import yamain.other as other
def raises(f, *a):
    try:
        return ["ok", f(*a)]
    except AssertionError as e:
        return ["AssertionError", str(e)]
print(json.dumps({
  "internal": list(cc.caller(3, "groupn")),
  "imported": list(get_group_info(4, "groupn")),
  "twice": list(get_group_info(5, "groupn")),
  "normal": list(cc.caller(3)),
  "other_assert": raises(cc.get_group_info, 3, "other"),
  "method": list(cc.Tiler().get_group_info(1)),
  "untargeted": raises(other.get_group_info, 1),
  "wrapped_name": cc.get_group_info.__name__,
  "dtype_untouched": not hasattr(cc.get_ifm_dtype, "_edgectl_wrapped"),
}))
`)
		wantEqual(t, res, "internal", []any{0, 0})
		wantEqual(t, res, "imported", []any{0, 0})
		wantEqual(t, res, "twice", []any{0, 0})
		wantEqual(t, res, "normal", []any{3, 1})
		wantEqual(t, res, "other_assert", []any{"AssertionError", "kernel too large"})
		wantEqual(t, res, "method", []any{0, 0})
		wantEqual(t, res, "untargeted", []any{"AssertionError", "invalid groupN untargeted"})
		wantEqual(t, res, "wrapped_name", "get_group_info")
		wantEqual(t, res, "dtype_untouched", true)
		lines := shimLines(stderr, "relax-groupn")
		if len(lines) != 2 { // one for the module, one for the class
			t.Errorf("want 2 relax-groupn lines (module, class), got %d:\n%s", len(lines), stderr)
		}
		for _, l := range lines {
			if !strings.Contains(l, "yamain.frontend.conv_common") || !strings.Contains(l, "(0, 0)") {
				t.Errorf("log line %q does not name the module and the result", l)
			}
		}
	})
}

func TestShimFP32AsBF16(t *testing.T) {
	forEachPython(t, func(t *testing.T, py string) {
		shim, pkgs := setupShim(t, ShimOptions{FP32AsBF16: true})
		res, stderr := runPy(t, py, []string{shim, pkgs}, nil, `
import json
from yamain.frontend import conv_common as cc
def call(f, k):
    try:
        return ["ok", f(k)]
    except KeyError as e:
        return ["KeyError", str(e.args[0])]
print(json.dumps({
  "fp32_str": call(cc.get_ifm_dtype, "FP32"),
  "fp32_enum": call(cc.get_ifm_dtype, cc.DataType.FP32),
  "float32": call(cc.get_ifm_dtype, "float32"),
  "bf16": call(cc.get_ifm_dtype, "BF16"),
  "int4": call(cc.get_ifm_dtype, "INT4"),
  "static": call(cc.Tiler.get_ifm_dtype, "FP32"),
  "groupn_untouched": not hasattr(cc.get_group_info, "_edgectl_wrapped"),
}))
`)
		wantEqual(t, res, "fp32_str", []any{"ok", 6})
		wantEqual(t, res, "fp32_enum", []any{"ok", 6})
		wantEqual(t, res, "float32", []any{"ok", 6})
		wantEqual(t, res, "bf16", []any{"ok", 6})
		wantEqual(t, res, "int4", []any{"KeyError", "INT4"})
		wantEqual(t, res, "static", []any{"ok", 6})
		wantEqual(t, res, "groupn_untouched", true)
		if n := len(shimLines(stderr, "fp32-as-bf16")); n != 2 {
			t.Errorf("want 2 fp32-as-bf16 lines (module, class), got %d:\n%s", n, stderr)
		}
	})
}

// Imports the shim does not target keep their normal loaders and specs, and
// targeted modules carry the real loader once loaded.
func TestShimLeavesOtherImportsAlone(t *testing.T) {
	forEachPython(t, func(t *testing.T, py string) {
		shim, pkgs := setupShim(t, ShimOptions{AliasLambert: true, RelaxGroupN: true, FP32AsBF16: true})
		res, stderr := runPy(t, py, []string{shim, pkgs}, nil, `
import json, importlib, importlib.machinery as m, sys
import plainmod, json as j2, collections
from yamain.frontend import conv_common as cc
import backend.ax8860 as ax
importlib.reload(cc)
def real(mod):
    return type(mod.__loader__) is m.SourceFileLoader and type(mod.__spec__.loader) is m.SourceFileLoader
print(json.dumps({
  "plain": real(plainmod) and plainmod.VALUE,
  "conv_loader": real(cc),
  "backend_loader": real(ax),
  "reload_wrapped_once": not hasattr(cc.get_group_info.__wrapped__, "_edgectl_wrapped"),
  "reload_still_relaxed": list(cc.get_group_info(2, "groupn")),
  "finders": sum(1 for f in sys.meta_path if getattr(f, "_edgectl", False)),
}))
`)
		wantEqual(t, res, "plain", 42)
		wantEqual(t, res, "conv_loader", true)
		wantEqual(t, res, "backend_loader", true)
		wantEqual(t, res, "reload_wrapped_once", true)
		wantEqual(t, res, "reload_still_relaxed", []any{0, 0})
		wantEqual(t, res, "finders", 1)
		if strings.Contains(stderr, "shim-error") || strings.Contains(stderr, "Traceback") {
			t.Errorf("unexpected errors on stderr:\n%s", stderr)
		}
	})
}

// With a gate the hooks install only when the variable is 1; a second shim
// on the path does not install twice; the shadowed sitecustomize still runs.
func TestShimGateAndChain(t *testing.T) {
	forEachPython(t, func(t *testing.T, py string) {
		shim, pkgs := setupShim(t, ShimOptions{RelaxGroupN: true, Gate: "EDGECTL_PULSAR2_SHIM"})
		second := filepath.Join(t.TempDir(), "second")
		if _, err := WriteShim(second, ShimOptions{RelaxGroupN: true}); err != nil {
			t.Fatal(err)
		}
		writeTree(t, second, map[string]string{ShimOrigFileName: "import builtins\nbuiltins.EDGECTL_CHAINED = builtins.__dict__.get('EDGECTL_CHAINED', 0) + 1\n"})
		script := `
import json, sys, builtins
from yamain.frontend import conv_common as cc
f = cc.get_group_info
depth = 0
while hasattr(f, "__wrapped__"):
    f, depth = f.__wrapped__, depth + 1
print(json.dumps({
  "depth": depth,
  "finders": sum(1 for f in sys.meta_path if getattr(f, "_edgectl", False)),
  "chained": getattr(builtins, "EDGECTL_CHAINED", 0),
}))
`
		// Gate closed: the first shim does nothing, but chains to the second,
		// which is ungated and installs the hooks once.
		res, _ := runPy(t, py, []string{shim, second, pkgs}, nil, script)
		wantEqual(t, res, "depth", 1)
		wantEqual(t, res, "finders", 1)
		wantEqual(t, res, "chained", 1)
		// Gate open: the first installs; the second sees that and stands down.
		res, _ = runPy(t, py, []string{shim, second, pkgs}, []string{"EDGECTL_PULSAR2_SHIM=1"}, script)
		wantEqual(t, res, "depth", 1)
		wantEqual(t, res, "finders", 1)
		wantEqual(t, res, "chained", 1)
		// Only the gated shim: nothing installed.
		res, _ = runPy(t, py, []string{shim, pkgs}, nil, script)
		wantEqual(t, res, "depth", 0)
		wantEqual(t, res, "finders", 0)
	})
}

func TestWriteShimRefusesForeignFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ShimFileName), []byte("print('mine')\n"), 0o644)
	if _, err := WriteShim(dir, ShimOptions{AliasLambert: true}); err == nil || !strings.Contains(err.Error(), "not written by edgectl") {
		t.Fatalf("WriteShim over a foreign sitecustomize.py: err = %v", err)
	}
	// Rewriting our own file is fine, and the options land in the source.
	dir2 := t.TempDir()
	for _, o := range []ShimOptions{{AliasLambert: true}, {RelaxGroupN: true}} {
		p, err := WriteShim(dir2, o)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		if !IsShim(b) || !strings.Contains(string(b), `"relax_groupn": `+map[bool]string{true: "True", false: "False"}[o.RelaxGroupN]) {
			t.Fatalf("shim source does not carry options %+v", o)
		}
	}
}
