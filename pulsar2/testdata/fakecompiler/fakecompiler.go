// Package fakecompiler is the pulsar2 command line shared by the test
// fakes: fakedocker runs it inside a pretend container, fakepulsar2 runs
// it as an installed (native) compiler. It checks the arguments of
// `pulsar2 version` and `pulsar2 llm_build|llm_build2` the way the real
// compiler's argparse would, prints its log lines and writes a realistic
// output tree, and fails on demand:
//
//	FAKE_PULSAR2_FAIL    tile | groupn | group_size | fp32 | oom | silent | hang
//	FAKE_PULSAR2_COS     the cos_sim the -c check prints (default 1.0)
package fakecompiler

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Host is where the compiler runs: a container or the machine itself.
type Host struct {
	Env     func(string) string         // the compiler's environment
	Path    func(string) (string, bool) // a path the compiler sees → the real one
	ShimDir string                      // the edgectl shim on PYTHONPATH (real path), "" if none
}

// Main runs `pulsar2 CMD...` (cmd excludes "pulsar2") as the given version
// and exits the way the compiler would on failure.
func Main(h Host, version string, cmd []string) {
	if len(cmd) == 0 {
		die(2, "usage: pulsar2 [-h] {version,build,run,llm_build} ...")
	}
	switch cmd[0] {
	case "version":
		fmt.Printf("version: %s\ncommit: 3f2a91c7\n", version)
	case "llm_build", "llm_build2":
		if major, _ := strconv.Atoi(strings.Split(version, ".")[0]); (cmd[0] == "llm_build2") != (major >= 6) {
			die(2, "usage: pulsar2 [-h] {version,build,run,llm_build%s} ...\npulsar2: error: argument command: invalid choice: '%s'", map[bool]string{true: "2", false: ""}[major >= 6], cmd[0])
		}
		llmBuild(h, cmd[0], cmd[1:])
	default:
		die(2, "pulsar2: error: invalid choice: %q", cmd[0])
	}
}

func die(code int, format string, a ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", a...)
	os.Exit(code)
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

func logf(level, format string, a ...any) {
	ts := time.Now().Format("2006-01-02 15:04:05.000")
	fmt.Printf("%s | %-8s | yamain.command.llm_build:llm_build:%d - %s\n", ts, level, 100+len(format)%90, fmt.Sprintf(format, a...))
}

func llmBuild(h Host, builder string, args []string) {
	fs := flag.NewFlagSet("pulsar2 "+builder, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	input := fs.String("input_path", "", "")
	output := fs.String("output_path", ".", "")
	hidden := fs.String("hidden_state_type", "bf16", "")
	chip := fs.String("chip", "AX650", "")
	parallel := fs.Int("parallel", 1, "")
	weight := fs.String("w", "s8", "")
	check := fs.Int("c", 0, "")
	prefill := fs.Int("prefill_len", 0, "")
	var kv, maxCtx, step *int
	var groups multi
	if builder == "llm_build" {
		kv = fs.Int("kv_cache_len", 127, "")
		fs.Var(&groups, "last_kv_cache_len", "")
	} else {
		maxCtx = fs.Int("max_context", 128, "")
		step = fs.Int("prefill_step_size", 128, "")
	}
	if err := fs.Parse(args); err != nil {
		die(2, "usage: pulsar2 %s [-h] ...\npulsar2 %s: error: unrecognized arguments: %v", builder, builder, err)
	}
	if fs.NArg() > 0 {
		die(2, "pulsar2 %s: error: unrecognized arguments: %s", builder, strings.Join(fs.Args(), " "))
	}
	switch *chip {
	case "AX620E", "AX650", "LAMBERT":
	default:
		die(2, "pulsar2 %s: error: argument --chip: invalid choice: '%s' (choose from 'AX620E', 'AX650', 'LAMBERT')", builder, *chip)
	}
	switch *weight {
	case "fp16", "bf16", "fp32", "s8", "s4", "fp8_e5m2", "fp8_e4m3":
	default:
		die(2, "pulsar2 %s: error: argument -w/--weight_type: invalid choice: '%s'", builder, *weight)
	}
	if *hidden != "bf16" {
		die(3, "fake: edgectl must ask for bf16 hidden states, got %s", *hidden)
	}
	// Checks the real compiler does not make but edgectl promises.
	if builder == "llm_build" {
		if (*kv+1)%128 != 0 {
			die(3, "fake: kv_cache_len %d is not 128k-1", *kv)
		}
		for _, g := range groups {
			n, _ := strconv.Atoi(g)
			if n%*prefill != 0 || n > *kv {
				die(3, "fake: last_kv_cache_len %d not a multiple of prefill_len %d within kv %d", n, *prefill, *kv)
			}
		}
	} else if *maxCtx%128 != 0 || *prefill%*step != 0 {
		die(3, "fake: max_context %d / prefill_len %d / step %d inconsistent", *maxCtx, *prefill, *step)
	}
	if h.Env("FLOAT_MATMUL_USE_CONV_EU") != "1" {
		die(3, "fake: FLOAT_MATMUL_USE_CONV_EU=1 missing")
	}
	in, ok := h.Path(*input)
	if !ok {
		die(1, "FileNotFoundError: [Errno 2] No such file or directory: '%s/config.json'", *input)
	}
	out, ok := h.Path(*output)
	if !ok {
		die(3, "fake: output path %s is not on a mount; the build would be lost", *output)
	}
	var cfg struct {
		ModelType string `json:"model_type"`
		Layers    int    `json:"num_hidden_layers"`
		Hidden    int    `json:"hidden_size"`
		Vocab     int    `json:"vocab_size"`
	}
	b, err := os.ReadFile(filepath.Join(in, "config.json"))
	if err != nil {
		die(1, "FileNotFoundError: [Errno 2] No such file or directory: '%s/config.json'", *input)
	}
	json.Unmarshal(b, &cfg)
	shimDir := h.ShimDir

	logf("INFO", "Config(model_type='%s', num_hidden_layers=%d, hidden_size=%d, vocab_size=%d, chip='%s', weight_type='%s', parallel=%d)",
		cfg.ModelType, cfg.Layers, cfg.Hidden, cfg.Vocab, *chip, *weight, *parallel)
	fail := os.Getenv("FAKE_PULSAR2_FAIL")
	// The compiler's Python front end, for real: a small stand-in for its
	// backend and conv_common modules run by python3 with the container's
	// PYTHONPATH, so the shim edgectl mounted is what makes it pass.
	if *chip == "LAMBERT" {
		compilerPython(shimDir, "import importlib\nb = importlib.import_module('backend.lambert')\nimportlib.import_module('backend').LambertBackend\n")
	}
	switch fail {
	case "group_size":
		fmt.Println("Traceback (most recent call last):")
		fmt.Println(`  File "yamain/llm/quant_utils.py", line 41, in load_gptq`)
		fmt.Println("KeyError: 'group_size'")
		os.Exit(1)
	case "fp32":
		compilerPython(shimDir, "from yamain.frontend.conv_common import get_ifm_dtype, DataType\nassert get_ifm_dtype(DataType.FP32) == 6\n")
	}
	layers := cfg.Layers
	prefix := strings.ReplaceAll(cfg.ModelType, "-", "_")
	p := *prefill
	if builder == "llm_build2" {
		p = *step
	}
	for l := 0; l < layers; l++ {
		fmt.Printf("\rbuilding decode layers: %3d%%|%-20s| %d/%d", (l+1)*100/layers, strings.Repeat("#", (l+1)*20/layers), l+1, layers)
		if l == 0 {
			switch fail {
			case "tile":
				fmt.Println()
				fmt.Println("Traceback (most recent call last):")
				fmt.Println("yamain.common.error.TileFailException: tile failed for op /model/layers.0/mlp/down_proj/MatMul_output_0")
				os.Exit(1)
			case "groupn":
				fmt.Println()
				compilerPython(shimDir, "from yamain.frontend.conv_common import get_group_info\nassert get_group_info(3) == (0, 0)\n")
			case "oom":
				os.Exit(137)
			case "hang":
				time.Sleep(time.Hour)
			}
		}
		if fail != "silent" {
			write(filepath.Join(out, fmt.Sprintf("%s_p%d_l%d_together.axmodel", prefix, p, l)))
		}
	}
	fmt.Println()
	logf("SUCCESS", "prepare llm model done!")
	if fail != "silent" {
		write(filepath.Join(out, prefix+"_post.axmodel"))
	}
	fmt.Println("build llm model done!")
	if *check > 0 {
		cos := os.Getenv("FAKE_PULSAR2_COS")
		if cos == "" {
			cos = "1.0"
		}
		fmt.Println("decode layer0_gt layer0_got cos_sim is: " + cos)
		fmt.Println("check llm model done!")
	}
}

// compilerModules stand in for the compiler's obfuscated packages.
var compilerModules = map[string]string{
	"backend/__init__.py":         "from .ax8860 import AX8860Backend\n",
	"backend/ax8860/__init__.py":  "class AX8860Backend(object):\n    pass\n",
	"yamain/__init__.py":          "",
	"yamain/frontend/__init__.py": "",
	"yamain/frontend/conv_common.py": `import enum
class DataType(enum.Enum):
    FP32 = 0
    BF16 = 6
_IFM = {DataType.BF16: 6}
def get_group_info(n):
    assert n % 2 == 0, "invalid groupN %d" % n
    return (n, 1)
def get_ifm_dtype(dt):
    return _IFM[dt]
`,
}

// compilerPython runs script with python3 over compilerModules and the
// shim directory (if any), passing its output through; a failure ends the
// build the way the compiler's traceback would.
func compilerPython(shimDir, script string) {
	py, err := exec.LookPath("python3")
	if err != nil {
		die(3, "fake: python3 is needed to run the compiler stand-in")
	}
	pkgs, err := os.MkdirTemp("", "fake-pulsar2-py-")
	if err != nil {
		die(3, "fake: %v", err)
	}
	defer os.RemoveAll(pkgs)
	for name, body := range compilerModules {
		p := filepath.Join(pkgs, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	path := pkgs
	if shimDir != "" {
		path = shimDir + string(os.PathListSeparator) + pkgs
	}
	cmd := exec.Command(py, "-c", script)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+path, "PYTHONDONTWRITEBYTECODE=1")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		os.RemoveAll(pkgs) // os.Exit skips the deferred removal
		os.Exit(1)
	}
}

func write(path string) {
	if err := os.WriteFile(path, []byte("AXMODEL fake\n"), 0o644); err != nil {
		die(1, "OSError: %v", err)
	}
}
