package pulsar2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/edgectl/edgectl/format/axllm"
	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/container"
	"github.com/edgectl/edgectl/internal/pathguard"
	"github.com/edgectl/edgectl/internal/progress"
)

// BuildOptions configure one compiler run. Zero values pick the defaults.
type BuildOptions struct {
	ModelDir string // Hugging Face checkpoint directory
	OutDir   string // must not exist; created atomically

	Chip    string // AX650 (default; also for AX8850), AX620E, LAMBERT
	Image   string // e.g. pulsar2:5.2; default: the newest local pulsar2:<version>
	Runtime string // docker or podman; default: whichever is on PATH, docker first
	Builder string // llm_build or llm_build2; default: from `pulsar2 version`
	// Pulsar2Bin runs an installed pulsar2 (a path or a name on PATH)
	// instead of the container image; Image and Runtime are then unused.
	Pulsar2Bin string

	KVCacheLen int    // 128·k−1; default: config.json kv_cache_len, else 2047
	PrefillLen int    // prefill chunk; default 128
	MaxPrefill int    // largest prefill group (multiple of PrefillLen); default (kv+1)/2
	Parallel   int    // compiler threads; default min(8, CPUs)
	WeightType string // -w; default s4 for GPTQ/AWQ int4, else s8
	CheckLevel int    // -c: 0 none, 1 layer check, 2 "1+1"

	Shim ShimOptions // hooks to mount; --chip LAMBERT turns on AliasLambert

	ModelName     string // axllm model_name; default: the repo id or directory name
	TokenizerType string // axllm tokenizer_type; default: from model_type
	SystemPrompt  string

	DryRun bool
	// Log receives the compiler's log, line by line, and edgectl's notes.
	Log io.Writer
	// OnEvent, if set, hears the progress of edgectl's own long writes
	// (step "embedding": bytes of the bf16 embedding).
	OnEvent progress.Func
}

// minCosSim is the similarity below which pulsar2's own check (-c 1) is
// reported as a warning.
const minCosSim = 0.98

// BuildResult describes a finished (or dry) build.
type BuildResult struct {
	OutDir        string        `json:"out_dir"`
	DryRun        bool          `json:"dry_run,omitempty"`
	Runtime       string        `json:"runtime"`               // docker, podman or native (--pulsar2-bin)
	Pulsar2Bin    string        `json:"pulsar2_bin,omitempty"` // the native compiler, symlinks resolved
	Image         string        `json:"image"`
	PulsarVersion string        `json:"pulsar2_version,omitempty"`
	Builder       string        `json:"builder"`
	Command       []string      `json:"command"` // the full container command line
	Chip          string        `json:"chip"`
	KVCacheLen    int           `json:"kv_cache_len"`
	PrefillLen    int           `json:"prefill_len"`
	PrefillGroups []int         `json:"prefill_groups,omitempty"`
	WeightType    string        `json:"weight_type"`
	Shim          []string      `json:"shim,omitempty"`
	Markers       []string      `json:"markers,omitempty"`  // success markers seen in the log
	ShimLog       []string      `json:"shim_log,omitempty"` // lines the shim printed
	Layout        *axllm.Layout `json:"layout,omitempty"`   // what pulsar2 wrote
	Config        *axllm.Config `json:"axllm_config,omitempty"`
	Tokenizer     string        `json:"tokenizer,omitempty"` // url_tokenizer_model
	Warnings      []string      `json:"warnings,omitempty"`
	Duration      float64       `json:"duration_seconds,omitempty"`
}

// Build compiles opts.ModelDir with pulsar2 in its container and leaves an
// axllm-loadable directory at opts.OutDir. Errors are *BuildError (bad
// input or a failed tool, see its Unwrap) for everything the build can
// explain.
func Build(ctx context.Context, opts BuildOptions) (*BuildResult, error) {
	start := time.Now()
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	// The compiler gets the model directory mounted; an output inside it
	// (or around it) would be written into what it reads.
	if opts.OutDir != "" {
		if err := pathguard.Dir(opts.OutDir, opts.ModelDir); err != nil {
			return nil, err
		}
	}
	p, err := preparePlan(opts)
	if err != nil {
		return nil, err
	}
	for _, n := range p.notes {
		fmt.Fprintf(logw, "edgectl: %s\n", n)
	}
	for _, w := range p.warnings {
		fmt.Fprintf(logw, "edgectl: warning: %s\n", w)
	}
	if opts.OutDir == "" {
		return nil, inputErr("no output directory given", "pass -o OUT")
	}
	outAbs, err := filepath.Abs(opts.OutDir)
	if err != nil {
		return nil, inputErr(err.Error(), "")
	}
	if _, err := os.Lstat(outAbs); err == nil {
		if _, err := p.stop(opts, inputErr(fmt.Sprintf("%s already exists", opts.OutDir), "choose another -o or remove it")); err != nil {
			return nil, err
		}
		fmt.Fprintf(logw, "edgectl: warning: %s\n", p.warnings[len(p.warnings)-1])
	}
	if opts.Pulsar2Bin != "" {
		return buildNative(ctx, opts, p, outAbs, start, logw)
	}
	rt, err := resolveRuntime(opts.Runtime)
	if err != nil {
		return nil, err
	}
	image := opts.Image
	if image == "" {
		if image, err = localImage(ctx, rt); err != nil {
			return nil, err
		}
	}
	res, err := p.result(opts, outAbs, logw, image+" has", func() (string, error) { return probeVersion(ctx, rt, image) })
	if err != nil {
		return nil, err
	}
	res.Runtime, res.Image = rt, image
	name := container.Name("edgectl-pulsar2")
	return p.produce(outAbs, res, opts, start, logw, compiler{
		command: func(outPath, shimHost string) []string {
			return append([]string{rt}, p.containerArgs(rt, image, name, res.Builder, outPath, shimHost)...)
		},
		run: func(command []string) (*logScanner, error) { return runContainer(ctx, rt, name, command, logw) },
		judge: func(sc *logScanner, runErr error) error {
			return judgeRun(sc, runErr, rt, res.Builder, image)
		},
	})
}

// result is what a build reports, before it runs: the plan's settings and
// the builder --builder names or, without one, the one for the pulsar2
// version probe finds (logged as "edgectl: WHO pulsar2 VERSION": "IMAGE
// has", "BIN is").
func (p *plan) result(opts BuildOptions, outAbs string, logw io.Writer, who string, probe func() (string, error)) (*BuildResult, error) {
	res := &BuildResult{OutDir: outAbs, DryRun: opts.DryRun, Chip: p.chip, Builder: opts.Builder,
		KVCacheLen: p.kv, PrefillLen: p.prefill, PrefillGroups: p.groups, WeightType: p.weightType,
		Shim: p.shim.Hooks(), Warnings: p.warnings}
	switch res.Builder {
	case "":
		v, err := probe()
		if err != nil {
			return nil, err
		}
		res.PulsarVersion, res.Builder = v, BuilderFor(v)
		fmt.Fprintf(logw, "edgectl: %s pulsar2 %s: using %s\n", who, v, res.Builder)
	case BuilderLLMBuild, BuilderLLMBuild2:
	default:
		return nil, inputErr(fmt.Sprintf("--builder %q", opts.Builder), "use llm_build (Pulsar2 ≤ 5) or llm_build2 (6.0+)")
	}
	return res, nil
}

// compiler is how a build runs pulsar2: in a container or installed
// natively. Everything around the run is the same (produce).
type compiler struct {
	command func(outPath, shimHost string) []string // the full command line
	run     func(command []string) (*logScanner, error)
	judge   func(sc *logScanner, runErr error) error // the failure kind, or nil
}

// produce writes the build into a fresh directory beside outAbs and
// publishes it only when pulsar2 succeeded and the output checks pass; a
// dry run only fills in the command.
func (p *plan) produce(outAbs string, res *BuildResult, opts BuildOptions, start time.Time, logw io.Writer, c compiler) (*BuildResult, error) {
	if opts.DryRun {
		shimHost := ""
		if p.shim.Any() {
			// The real run writes the shim to a fresh temporary directory.
			shimHost = filepath.Join(filepath.Dir(outAbs), strings.Replace(atomicfile.TempPattern(shimName(outAbs)), "*", "XXXXXX", 1))
		}
		res.Command = c.command(outAbs, shimHost)
		return res, nil
	}

	// A killed build left its half-written output and shim beside OUT.
	if _, err := atomicfile.CleanStale(filepath.Dir(outAbs), filepath.Base(outAbs), shimName(outAbs)); err != nil {
		return nil, err
	}
	out, err := atomicfile.CreateDir(outAbs)
	if err != nil {
		return nil, inputErr(err.Error(), "")
	}
	defer out.Abort()
	shimHost := ""
	if p.shim.Any() {
		// Beside the output, not in /tmp: a runtime that can mount the
		// output can mount this (snap-confined docker has its own /tmp).
		shimHost, err = os.MkdirTemp(filepath.Dir(outAbs), atomicfile.TempPattern(shimName(outAbs)))
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(shimHost)
		if _, err := WriteShim(shimHost, p.shim); err != nil {
			return nil, err
		}
	}
	res.Command = c.command(out.Path, shimHost)
	fmt.Fprintf(logw, "edgectl: %s\n", ShellQuote(res.Command))

	sc, runErr := c.run(res.Command)
	res.Markers, res.ShimLog = sc.markers, sc.shim
	if err := c.judge(sc, runErr); err != nil {
		return res, err
	}
	if sc.cosLine != "" && sc.minCos < minCosSim {
		w := fmt.Sprintf("pulsar2's check found a layer with cos_sim %.4f < %.2f (%s): the compiled model may be wrong; try -w s8 or bf16 weights", sc.minCos, minCosSim, strings.TrimSpace(sc.cosLine))
		res.Warnings = append(res.Warnings, w)
		fmt.Fprintf(logw, "edgectl: warning: %s\n", w)
	}
	if err := p.finish(out.Path, res, opts); err != nil {
		return res, err
	}
	if err := out.Commit(); err != nil {
		return res, err
	}
	res.Duration = time.Since(start).Seconds()
	return res, nil
}

// shimName is the base name of the shim directory a build of out mounts
// (a temporary beside out, never in /tmp: see Build).
func shimName(out string) string { return filepath.Base(out) + ".shim" }

func resolveRuntime(want string) (string, error) {
	rt, err := container.Lookup(want)
	if errors.Is(err, container.ErrUnknownRuntime) {
		return "", inputErr(fmt.Sprintf("--runtime %q", want), "use docker or podman")
	}
	if err != nil {
		return "", &BuildError{Kind: FailRuntime, Msg: err.Error(), Fix: "install Docker or Podman; pulsar2 ships only as a container image"}
	}
	return rt, nil
}

// daemonTrouble recognizes a runtime that cannot reach its daemon or may
// not use it, which would otherwise look like a compiler or image failure.
func daemonTrouble(rt, out string) *BuildError {
	if !container.DaemonDown(out) {
		return nil
	}
	return &BuildError{Kind: FailRuntime, Msg: fmt.Sprintf("%s cannot reach its daemon: %s", rt, firstLines(out, 1)),
		Fix: "start it (`systemctl start docker`) and make sure you may use it (the docker group, or rootless podman)"}
}

func imageErr(image, out string) *BuildError {
	return &BuildError{Kind: FailImage, Msg: fmt.Sprintf("image %s is not available (%s)", image, firstLines(out, 2)),
		Fix: "load it with `docker load -i ax_pulsar2_${VER}.tar.gz` (huggingface.co/AXERA-TECH/Pulsar2) and pass --image pulsar2:${VER}"}
}

// localImage picks the newest pulsar2:<version> the runtime has.
func localImage(ctx context.Context, rt string) (string, error) {
	out, err := exec.CommandContext(ctx, rt, "image", "ls", "--format", "{{.Repository}}:{{.Tag}}").CombinedOutput()
	if be := daemonTrouble(rt, string(out)); be != nil {
		return "", be
	}
	if err != nil {
		return "", &BuildError{Kind: FailRuntime, Msg: fmt.Sprintf("`%s image ls` failed: %s", rt, firstLines(string(out), 2)),
			Fix: "check that the " + rt + " daemon runs and you may use it (docker group or sudo)"}
	}
	img := newestImage(string(out))
	if img == "" {
		return "", &BuildError{Kind: FailImage, Msg: "no pulsar2:<version> image found locally",
			Fix: "load it with `docker load -i ax_pulsar2_${VER}.tar.gz` (huggingface.co/AXERA-TECH/Pulsar2), or pass --image"}
	}
	return img, nil
}

// probeVersion runs `pulsar2 version` in the image.
func probeVersion(ctx context.Context, rt, image string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	argv := container.Run{Runtime: rt, Image: image, Command: []string{"pulsar2", "version"}}.Argv()
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	s := string(out)
	if be := daemonTrouble(rt, s); be != nil {
		return "", be
	}
	if container.ImageMissing(s) {
		return "", imageErr(image, s)
	}
	if err != nil {
		return "", &BuildError{Kind: FailImage, Msg: fmt.Sprintf("`pulsar2 version` failed in %s: %v: %s", image, err, firstLines(s, 3)),
			Fix: "check the image is a pulsar2 image, or pass --builder to skip the version probe"}
	}
	v, err := ParseVersion(s)
	if err != nil {
		return "", &BuildError{Kind: FailImage, Msg: err.Error(), Fix: "pass --builder llm_build or llm_build2"}
	}
	return v, nil
}

// runContainer runs the compiler in the container name, streaming its
// merged output to logw and through the scanner. Cancelling ctx kills the
// container by name (killing the CLI alone would leave it running).
func runContainer(ctx context.Context, rt, name string, argv []string, logw io.Writer) (*logScanner, error) {
	return streamRun(ctx, container.Process{Argv: argv, Runtime: rt, Name: name}, logw, "check the container runtime works: `"+rt+" info`")
}

// streamRun runs the compiler, its merged output streamed to logw and
// through the log scanner; startFix is the advice when it cannot start.
func streamRun(ctx context.Context, proc container.Process, logw io.Writer, startFix string) (*logScanner, error) {
	sc := &logScanner{}
	proc.WaitDelay = 30 * time.Second
	err := proc.Stream(ctx, func(line string) {
		sc.add(line)
		fmt.Fprintln(logw, line)
	})
	var se *container.StartError
	if errors.As(err, &se) {
		return sc, &BuildError{Kind: FailRuntime, Msg: se.Error(), Fix: startFix}
	}
	return sc, err
}

// judgeRun turns the exit status and the log into a verdict.
func judgeRun(sc *logScanner, runErr error, rt, builder, image string) error {
	if errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded) {
		return runErr
	}
	if be, ok := runErr.(*BuildError); ok {
		return be
	}
	code, err := container.ExitCode(runErr)
	if err != nil {
		return &BuildError{Kind: FailRuntime, Msg: err.Error(), Tail: sc.tail}
	}
	if code == 0 && (sc.failure == nil || sc.has("build")) {
		return nil
	}
	mk := func(kind, msg, fix, line string) *BuildError {
		return &BuildError{Kind: kind, Msg: msg, Fix: fix, Line: line, Tail: sc.tail}
	}
	if sc.failure != nil {
		f := sc.failure
		return mk(f.kind, fmt.Sprintf("pulsar2 %s failed: %s", builder, f.msg), f.fix, sc.failLine)
	}
	if code == 137 {
		// docker reports an OOM-killed container as exit 137 (SIGKILL).
		return mk(FailOOM, fmt.Sprintf("pulsar2 %s was killed (exit 137): out of memory", builder),
			"give the container more RAM (32 GB for 0.6B-1.7B models, more for larger ones; ax-llm#62), add swap, or lower --parallel", "")
	}
	if be := daemonTrouble(rt, strings.Join(sc.tail, "\n")); be != nil {
		return be
	}
	for _, l := range sc.tail {
		if container.ImageMissing(l) {
			return imageErr(image, l)
		}
	}
	if container.DidNotStart(code) {
		return mk(FailRuntime, fmt.Sprintf("the container did not start (exit %d)", code), "run the printed command by hand to see why", sc.lastErr)
	}
	return mk(FailCompiler, fmt.Sprintf("pulsar2 %s failed (exit %d)", builder, code),
		"see the log above; `edgectl doctor MODEL_DIR` lists checkpoint faults the compiler trips on", sc.lastErr)
}

// finish turns pulsar2's output into an axllm directory and verifies it.
func (p *plan) finish(dir string, res *BuildResult, opts BuildOptions) error {
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	lay, err := axllm.DiscoverLayout(dir)
	if err != nil {
		return &BuildError{Kind: FailOutput, Msg: "pulsar2 reported no error but its output is incomplete: " + err.Error(),
			Fix: "check the log for the step that stopped; a tokens_embed_size mismatch fails silently (ax-llm#62)"}
	}
	res.Layout = lay
	if lay.Layers != p.text.NumHiddenLayers {
		return &BuildError{Kind: FailOutput, Msg: fmt.Sprintf("pulsar2 wrote %d layer files (%s) but the model has %d layers", lay.Layers, lay.Template, p.text.NumHiddenLayers),
			Fix: "rebuild; if it repeats, report the log"}
	}
	// Temporaries of the Python embedding pipeline, if the image made them.
	os.Remove(filepath.Join(dir, "model.embed_tokens.weight.float32.bin"))
	os.Remove(filepath.Join(dir, "model.embed_tokens.weight.npy"))

	ck, err := safetensors.OpenCheckpoint(p.modelDir)
	if err != nil {
		return err
	}
	defer ck.Close()
	ef, et, err := FindEmbedding(ck, p.text.Tied())
	if err != nil {
		return err
	}
	prog := progress.Writer(progress.Every(progress.Interval, opts.OnEvent), "embedding", axllm.EmbedBytes(p.vocab, p.hidden))
	fmt.Fprintf(logw, "edgectl: writing %s (%s %v → bf16)\n", axllm.EmbedFileName, et.DType, et.Shape)
	if err := WriteEmbedding(ef, et, filepath.Join(dir, axllm.EmbedFileName), prog); err != nil {
		return err
	}

	if _, err := copyTokenizer(p.modelDir, filepath.Join(dir, axllm.TokenizerDir)); err != nil {
		return inputErr(err.Error(), "")
	}
	gen, err := hfconfig.LoadGeneration(p.modelDir)
	if err != nil {
		return inputErr(err.Error(), "")
	}
	tok, err := p.writeTokenizerTxt(dir, gen)
	if err != nil {
		return err
	}
	res.Tokenizer = tok

	post := axllm.PostConfigFrom(gen)
	if err := axllm.WriteJSON(filepath.Join(dir, axllm.PostConfigName), &post); err != nil {
		return err
	}
	cfg := &axllm.Config{
		ModelName: p.modelName, TokenizerType: p.tokType, URLTokenizerModel: tok,
		TemplateFilenameAxmodel: lay.Template, AxmodelNum: lay.Layers, FilenamePostAxmodel: lay.Post,
		FilenameTokensEmbed: axllm.EmbedFileName, TokensEmbedNum: p.vocab, TokensEmbedSize: p.hidden,
		SystemPrompt: opts.SystemPrompt, PostConfigPath: axllm.PostConfigName,
		Bos: p.bos(), Eos: boolp(false), UseMmapLoadEmbed: boolp(true),
	}
	if sw := p.text.SlidingWindow; sw != nil && *sw > 0 {
		cfg.SlidingWindow = *sw
	}
	if err := axllm.WriteJSON(filepath.Join(dir, axllm.ConfigName), cfg); err != nil {
		return err
	}
	info := axllm.BuildInfo{Tool: "edgectl pulsar2 build", PulsarVersion: res.PulsarVersion, Image: res.Image, Pulsar2Bin: res.Pulsar2Bin, Builder: res.Builder,
		Chip: p.chip, KVCacheLen: p.kv, PrefillLen: p.prefill, PrefillGroups: p.groups, WeightType: p.weightType,
		Shim: p.shim.Hooks(), Source: p.modelName}
	if err := axllm.WriteJSON(filepath.Join(dir, axllm.BuildInfoName), &info); err != nil {
		return err
	}
	c, err := axllm.Verify(dir)
	if err != nil {
		return &BuildError{Kind: FailOutput, Msg: err.Error(), Fix: "rebuild; if it repeats, report the log"}
	}
	res.Config = c
	return nil
}

// writeTokenizerTxt provides url_tokenizer_model: the model directory's
// own *_tokenizer.txt, else one exported from tokenizer.json (preparePlan
// checked that one of the two works).
func (p *plan) writeTokenizerTxt(dir string, gen *hfconfig.GenerationConfig) (string, error) {
	if p.tokenizerTxt != "" {
		name := filepath.Base(p.tokenizerTxt)
		return name, atomicfile.Copy(p.tokenizerTxt, filepath.Join(dir, name), 0o644)
	}
	name := tokenizerTxtName(p.cfg.ModelType)
	stops := []int(gen.EosTokenID)
	if len(stops) == 0 {
		stops = []int(p.text.EosTokenID)
	}
	if err := axllm.WriteTokenizerTxt(filepath.Join(p.modelDir, "tokenizer.json"), filepath.Join(dir, name), stops); err != nil {
		return "", err
	}
	return name, nil
}

// bos: the tokenizer's add_bos_token, else false for the Qwen and SmolLM
// families (no BOS in their templates) and true otherwise (axllm's default).
func (p *plan) bos() *bool {
	if b := readAddBos(p.modelDir); b != nil {
		return b
	}
	return boolp(!strings.HasPrefix(p.tokType, "Qwen") && p.tokType != "SmolLM2")
}

func boolp(b bool) *bool { return &b }
