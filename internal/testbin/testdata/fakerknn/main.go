// Command fakerknn stands in for rknn-toolkit2 in rknn build's tests: run
// as docker or podman it is a container runtime whose one image has the
// toolkit; run as python3 it is an installed toolkit. Either way it
// carries out the generated build script's intent — rknn.config from the
// job file, load_onnx of the shard, build, export_rknn — by reading the
// script's JSON job file (and checking the script makes those calls), and
// prints the toolkit's log lines, real failure texts included.
//
// Environment:
//
//	FAKE_RKNN_LOG     append one JSON line per invocation (Call)
//	FAKE_RKNN_IMAGES  comma-separated images that exist (default rknn-toolkit2:2.3.2)
//	FAKE_RKNN_VERSION the version pip reports (default: the image's tag, or 2.3.2)
//	FAKE_RKNN_MISSING "1": pip finds no rknn-toolkit2
//	FAKE_RKNN_FAIL    "N:MODE": shard N fails: regtask | fused | fuse-ok | opset | oom | hang | silent
//	FAKE_RKNN_STATE   a directory for the pid files `docker kill NAME` reads
package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Call is one line of FAKE_RKNN_LOG. For a shard build, Config and Load
// are what the script hands rknn.config and rknn.load_onnx.
type Call struct {
	Prog   string         `json:"prog"`
	Argv   []string       `json:"argv"`
	Shard  int            `json:"shard,omitempty"`
	Config map[string]any `json:"config,omitempty"`
	Load   map[string]any `json:"load_onnx,omitempty"`
}

type job struct {
	TargetPlatform    string   `json:"target_platform"`
	FloatDType        string   `json:"float_dtype"`
	OptimizationLevel *int     `json:"optimization_level"`
	DisableRules      []string `json:"disable_rules"`
	Shards            []struct {
		ONNX          string   `json:"onnx"`
		RKNN          string   `json:"rknn"`
		Inputs        []string `json:"inputs"`
		InputSizeList [][]int  `json:"input_size_list"`
		Outputs       []string `json:"outputs"`
	} `json:"shards"`
}

func main() {
	prog := filepath.Base(os.Args[0])
	args := os.Args[1:]
	if prog == "python3" || prog == "python" {
		python(prog, args, func(p string) (string, bool) { return p, filepath.IsAbs(p) }, os.Getenv("FAKE_RKNN_VERSION"))
		return
	}
	logCall(Call{Prog: prog, Argv: args})
	if len(args) == 0 {
		die(125, "%s: no command", prog)
	}
	switch args[0] {
	case "kill":
		if d := os.Getenv("FAKE_RKNN_STATE"); d != "" {
			if b, err := os.ReadFile(filepath.Join(d, args[len(args)-1]+".pid")); err == nil {
				if pid, err := strconv.Atoi(string(b)); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		fmt.Println(args[len(args)-1])
	case "run":
		run(prog, args[1:])
	default:
		die(125, "%s: unknown command %q", prog, args[0])
	}
}

type mount struct{ host, ctr string }

// run is `docker run` with the flags edgectl uses; it maps the
// container's paths to the host through the bind mounts.
func run(prog string, args []string) {
	var mounts []mount
	name, network := "", ""
	i := 0
	for ; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		a := args[i]
		switch a {
		case "--rm":
		case "-v", "-e", "--name", "--user", "--security-opt", "--network":
			if i+1 >= len(args) {
				die(125, "%s: flag needs an argument: %s", prog, a)
			}
			i++
			switch a {
			case "-v":
				parts := strings.Split(args[i], ":")
				if len(parts) < 2 || !filepath.IsAbs(parts[0]) {
					die(125, "%s: invalid volume spec %q", prog, args[i])
				}
				if st, err := os.Stat(parts[0]); err != nil || !st.IsDir() {
					die(125, "%s: Error response from daemon: invalid mount config: bind source path does not exist: %s", prog, parts[0])
				}
				mounts = append(mounts, mount{parts[0], parts[1]})
			case "--name":
				name = args[i]
			case "--network":
				network = args[i]
			}
		default:
			die(125, "unknown flag: %s\nSee '%s run --help'.", a, prog)
		}
	}
	if i >= len(args) {
		die(125, "%s: \"run\" requires at least 1 argument.", prog)
	}
	if network != "none" {
		die(3, "fake: the toolkit must run with --network none, got %q", network)
	}
	image := args[i]
	images := os.Getenv("FAKE_RKNN_IMAGES")
	if images == "" {
		images = "rknn-toolkit2:2.3.2"
	}
	found := false
	for _, im := range strings.Split(images, ",") {
		found = found || im == image
	}
	if !found {
		fmt.Fprintf(os.Stderr, "Unable to find image '%s' locally\n%s: Error response from daemon: pull access denied for %s, repository does not exist or may require 'docker login'.\n", image, prog, strings.Split(image, ":")[0])
		os.Exit(125)
	}
	cmd := args[i+1:]
	if len(cmd) == 0 || cmd[0] != "python3" {
		die(127, "fake image runs only python3, got %q", cmd)
	}
	if len(cmd) > 2 && cmd[1] != "-m" && name == "" {
		die(3, "fake: edgectl must name a build's container so it can kill it")
	}
	if d := os.Getenv("FAKE_RKNN_STATE"); d != "" && name != "" {
		os.WriteFile(filepath.Join(d, name+".pid"), []byte(strconv.Itoa(os.Getpid())), 0o644)
	}
	version := os.Getenv("FAKE_RKNN_VERSION")
	if version == "" {
		_, version, _ = strings.Cut(image, ":")
	}
	hostPath := func(p string) (string, bool) {
		for _, m := range mounts {
			if p == m.ctr || strings.HasPrefix(p, m.ctr+"/") {
				return filepath.Join(m.host, strings.TrimPrefix(p, m.ctr)), true
			}
		}
		return "", false
	}
	python("python3", cmd[1:], hostPath, version)
}

// python is the toolkit's Python: `-m pip show rknn-toolkit2`, or the
// build script with its job file and shard index.
func python(prog string, args []string, host func(string) (string, bool), version string) {
	if version == "" {
		version = "2.3.2"
	}
	if len(args) >= 4 && args[0] == "-m" && args[1] == "pip" && args[2] == "show" {
		logCall(Call{Prog: prog, Argv: args})
		if os.Getenv("FAKE_RKNN_MISSING") == "1" {
			die(1, "WARNING: Package(s) not found: %s", args[3])
		}
		fmt.Printf("Name: rknn-toolkit2\nVersion: %s\nSummary: Rockchip Neural Network Toolkit2\nLocation: /usr/local/lib/python3.10/site-packages\n", version)
		return
	}
	if len(args) != 3 {
		die(2, "fake python: want SCRIPT JOB INDEX, got %q", args)
	}
	script, ok1 := host(args[0])
	jobPath, ok2 := host(args[1])
	if !ok1 || !ok2 {
		die(2, "fake python: %q or %q is not on a mount", args[0], args[1])
	}
	src, err := os.ReadFile(script)
	if err != nil {
		die(2, "python3: can't open file %q: %v", args[0], err)
	}
	for _, call := range []string{"from rknn.api import RKNN", "rknn.config(**config)", "rknn.load_onnx(model=", "rknn.build(do_quantization=False)", "rknn.export_rknn("} {
		if !strings.Contains(string(src), call) {
			die(3, "fake: the build script does not call %s", call)
		}
	}
	var j job
	b, err := os.ReadFile(jobPath)
	if err == nil {
		err = json.Unmarshal(b, &j)
	}
	if err != nil {
		die(1, "json.decoder.JSONDecodeError: %v", err)
	}
	n, err := strconv.Atoi(args[2])
	if err != nil || n < 0 || n >= len(j.Shards) {
		die(1, "IndexError: list index out of range")
	}
	s := j.Shards[n]
	config := map[string]any{"target_platform": j.TargetPlatform}
	if j.FloatDType != "" {
		config["float_dtype"] = j.FloatDType
	}
	if j.OptimizationLevel != nil {
		config["optimization_level"] = *j.OptimizationLevel
	}
	if j.DisableRules != nil {
		config["disable_rules"] = j.DisableRules
	}
	logCall(Call{Prog: prog, Argv: args, Shard: n, Config: config,
		Load: map[string]any{"model": s.ONNX, "inputs": s.Inputs, "input_size_list": s.InputSizeList, "outputs": s.Outputs}})

	mode := ""
	if f, m, ok := strings.Cut(os.Getenv("FAKE_RKNN_FAIL"), ":"); ok && f == args[2] {
		mode = m
	}
	fmt.Printf("I rknn-toolkit2 version: %s\n", version)
	fmt.Println("EDGECTL-RKNN: compiling " + s.ONNX)
	onnx, ok := host(s.ONNX)
	if !ok {
		die(1, "E load_onnx: %s is not on a mount", s.ONNX)
	}
	model, err := os.ReadFile(onnx)
	if err != nil {
		fmt.Printf("E load_onnx: Catch exception when loading onnx model: %s!\nE load_onnx: FileNotFoundError: [Errno 2] No such file or directory: '%s'\n", s.ONNX, s.ONNX)
		fmt.Println("EDGECTL-RKNN: rknn.load_onnx returned -1")
		os.Exit(11)
	}
	if mode == "opset" {
		fmt.Println("E load_onnx: Unsupport onnx opset 13, need <= 12!")
		fmt.Println("EDGECTL-RKNN: rknn.load_onnx returned -1")
		os.Exit(11)
	}
	fmt.Printf("I Loading : 100%%|██████████| %d/%d [00:00<00:00, 24979.37it/s]\r\n", len(s.Inputs), len(s.Inputs))
	fmt.Println("I rknn building ...")
	switch mode {
	case "hang":
		time.Sleep(time.Hour)
	case "oom":
		fmt.Fprintln(os.Stderr, "Killed")
		os.Exit(137)
	case "fused", "fuse-ok":
		fmt.Println("W build: Show op fuse match nodes:")
		fmt.Println("Rule: fuse_matmul_softmax_matmul_to_sdpa")
		fmt.Println("Subgraph:")
	}
	if mode == "regtask" || mode == "fused" {
		fmt.Fprintln(os.Stderr, "E RKNN: [01:23:24.972] REGTASK: The bit width of field value exceeds the limit, target: v2, offset: 0x5048, shift = 19, limit: 0x1fff, value: 0x6b90")
		fmt.Fprintln(os.Stderr, "E RKNN: [01:23:24.972] REGTASK: The bit width of field value exceeds the limit, target: v2, offset: 0x4038, shift = 0, limit: 0x1fff, value: 0x6b90")
		fmt.Println("EDGECTL-RKNN: rknn.build returned -1")
		os.Exit(12)
	}
	fmt.Println("I rknn building done.")
	if mode == "silent" {
		return
	}
	out, ok := host(s.RKNN)
	if !ok {
		die(1, "E export_rknn: %s is not on a mount", s.RKNN)
	}
	sum := sha256.Sum256(model)
	body := fmt.Sprintf("RKNN fake v%s target=%s onnx_sha256=%x\n", version, j.TargetPlatform, sum)
	if err := os.WriteFile(out, []byte(body), 0o644); err != nil {
		die(1, "E export_rknn: %v", err)
	}
	fmt.Println("EDGECTL-RKNN: wrote " + s.RKNN)
}

func logCall(c Call) {
	p := os.Getenv("FAKE_RKNN_LOG")
	if p == "" {
		return
	}
	b, _ := json.Marshal(c)
	if f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		f.Write(append(b, '\n'))
		f.Close()
	}
}

func die(code int, format string, a ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", a...)
	os.Exit(code)
}
