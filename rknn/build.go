package rknn

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/edgectl/edgectl/format/rknnchain"
	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/container"
	"github.com/edgectl/edgectl/internal/progress"
	"github.com/edgectl/edgectl/pulsar2"
)

// DefaultBuildTimeout bounds one shard's compile: the toolkit is slow on
// thousands of tiny tile operators, but an hour is a hang.
const DefaultBuildTimeout = 30 * time.Minute

// BuildOptions configure `edgectl rknn build`.
type BuildOptions struct {
	Dir     string        // the chain: OUT of edgectl rknn shard
	Image   string        // a container image with rknn-toolkit2 (unless Native)
	Runtime string        // docker or podman; default: whichever is on PATH, docker first
	Native  bool          // run an installed toolkit: Python with rknn.api
	Python  string        // Native's interpreter (path or name on PATH); default python3
	Target  string        // target_platform; default: the manifest's (rk3588)
	Timeout time.Duration // per shard; default DefaultBuildTimeout
	DryRun  bool
	// OnEvent hears the build: each shard's start and done, the toolkit's
	// log lines (progress.ToolLog), edgectl's notes and warnings.
	OnEvent progress.Func
}

// BuildResult describes a finished (or dry) build.
type BuildResult struct {
	Dir            string       `json:"dir"`
	DryRun         bool         `json:"dry_run,omitempty"`
	Runtime        string       `json:"runtime"` // docker, podman or native
	Image          string       `json:"image,omitempty"`
	Python         string       `json:"python,omitempty"` // native: the interpreter, resolved
	ToolkitVersion string       `json:"rknn_toolkit_version,omitempty"`
	Target         string       `json:"target_platform"`
	Script         string       `json:"script"`   // the generated build script
	Job            string       `json:"job"`      // its job file (JSON)
	Commands       [][]string   `json:"commands"` // one process per shard, in order
	Shards         []ShardBuild `json:"shards,omitempty"`
	Warnings       []string     `json:"warnings,omitempty"`
	Duration       float64      `json:"duration_seconds,omitempty"`
}

// ShardBuild is one compiled shard.
type ShardBuild struct {
	File    string  `json:"file"`
	RKNN    string  `json:"rknn"`
	SHA256  string  `json:"sha256"`
	Bytes   int64   `json:"bytes"`
	Core    int     `json:"core"`
	Seconds float64 `json:"seconds"`
}

// RuntimeNative is BuildResult.Runtime for a build with --native.
const RuntimeNative = "native"

// workName is the base name of a build's work directory, a temporary
// inside the chain's directory (same file system: the .rknn files are
// renamed out of it).
const workName = "rknn-build"

// targetPlatform is what rknn.config(target_platform=…) takes for the
// RKNPU2 chips.
var targetPlatform = regexp.MustCompile(`^(?:rk3588|rk3576|rk3568|rk3566|rk3562|rv1103|rv1106|rv1103b|rv1106b|rk2118)$`)

// Build compiles every shard of opts.Dir with rknn-toolkit2, one process
// per shard, and adds the .rknn files and the manifest's record of them
// all together or not at all. Errors a build can explain are *BuildError.
func Build(ctx context.Context, opts BuildOptions) (*BuildResult, error) {
	start := time.Now()
	emit := opts.OnEvent.Emit
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, &BuildError{BuildError: pulsar2.BuildError{Kind: FailInput, Msg: err.Error()}}
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real // the mount source must be the directory itself
	}
	m, err := rknnchain.Read(dir)
	if err != nil {
		return nil, &BuildError{BuildError: pulsar2.BuildError{Kind: FailInput, Msg: err.Error()}}
	}
	target := cmp.Or(opts.Target, m.Build.TargetPlatform, "rk3588")
	if !targetPlatform.MatchString(target) {
		return nil, &BuildError{BuildError: pulsar2.BuildError{Kind: FailInput, Msg: fmt.Sprintf("--target %q is not an rknn-toolkit2 target platform", target),
			Fix: "use rk3588 (the shards' tile budget and cores are the RK3588's), or another RKNPU2 chip: rk3576, rk3568, rk3566, rk3562"}}
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = DefaultBuildTimeout
	}
	if timeout < 0 {
		return nil, &BuildError{BuildError: pulsar2.BuildError{Kind: FailInput, Msg: fmt.Sprintf("--timeout %s is negative", timeout), Fix: "pass a duration such as 30m"}}
	}
	for _, s := range m.Shards {
		if _, err := os.Stat(filepath.Join(dir, s.File)); err != nil {
			return nil, &BuildError{Shard: s.File, BuildError: pulsar2.BuildError{Kind: FailInput, Msg: fmt.Sprintf("%v: the manifest lists it", err), Fix: "shard the model again (edgectl rknn shard MODEL.onnx -o OUT)"}}
		}
	}
	tk, err := newToolkit(opts)
	if err != nil {
		return nil, err
	}
	res := &BuildResult{Dir: dir, DryRun: opts.DryRun, Runtime: tk.runtime, Image: tk.image, Python: tk.python, Target: target, Script: buildScript}
	if target != "rk3588" {
		res.warn(emit, fmt.Sprintf("target %s: the shards were tiled for the RK3588's 32 KB scratchpad and 3 cores; another chip may need other --sram-kb and --cores", target))
	}

	work := filepath.Join(dir, strings.Replace(atomicfile.TempPattern(workName), "*", "XXXXXX", 1))
	if !opts.DryRun {
		// A killed build left its work directory in the chain's.
		if _, err := atomicfile.CleanStale(dir, workName); err != nil {
			return nil, err
		}
		if work, err = os.MkdirTemp(dir, atomicfile.TempPattern(workName)); err != nil {
			return nil, &BuildError{BuildError: pulsar2.BuildError{Kind: FailInput, Msg: fmt.Sprintf("%v: the chain's directory must be writable", err)}}
		}
		defer os.RemoveAll(work)
	}
	in, out := tk.paths(dir, work)
	job, err := makeJob(m, target, in, out)
	if err != nil {
		return nil, err
	}
	res.Job = string(job)
	name := container.Name("edgectl-rknn")
	for i := range m.Shards {
		res.Commands = append(res.Commands, tk.command(dir, work, fmt.Sprintf("%s-%02d", name, i), i))
	}
	if opts.DryRun {
		return res, nil
	}
	if err := os.WriteFile(filepath.Join(work, scriptName), []byte(buildScript), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(work, jobName), job, 0o644); err != nil {
		return nil, err
	}
	if res.ToolkitVersion, err = tk.version(ctx); err != nil {
		return nil, err
	}
	emit(progress.Event{Event: progress.Log, Message: fmt.Sprintf("%s: rknn-toolkit2 %s, target %s, %d shards, one process each", tk.where(), res.ToolkitVersion, target, len(m.Shards))})

	for i, s := range m.Shards {
		step := "build " + s.File
		emit(progress.Event{Event: progress.Start, Step: step})
		emit(progress.Event{Event: progress.Log, Step: step, Message: pulsar2.ShellQuote(res.Commands[i])})
		t0 := time.Now()
		sc, err := tk.run(ctx, res.Commands[i], timeout, func(line string) {
			emit(progress.Event{Event: progress.ToolLog, Step: step, Message: line})
		})
		if be := judgeShard(sc, err, ctx, timeout, m.Build.DisableRules, tk); be != nil {
			be.Shard = s.File
			emit(progress.Event{Event: progress.Error, Step: step, Err: be})
			return res, be
		}
		if err != nil { // cancelled
			return res, err
		}
		sb, err := shardOutput(work, s)
		if err != nil {
			return res, err
		}
		sb.Seconds = time.Since(t0).Seconds()
		res.Shards = append(res.Shards, sb)
		if sc.version != "" && sc.version != res.ToolkitVersion {
			res.warn(emit, fmt.Sprintf("%s: the toolkit says it is %s, pip says %s: the manifest records %s", s.File, sc.version, res.ToolkitVersion, sc.version))
			res.ToolkitVersion = sc.version
		}
		for _, r := range sc.fired {
			if slices.Contains(m.Build.DisableRules, r) {
				res.warn(emit, fmt.Sprintf("%s: rknn-toolkit2 %s applied %s although disable_rules lists it: this version does not honour disable_rules and may have fused the tiles back; re-shard with --barrier pill or both", s.File, res.ToolkitVersion, r))
			}
		}
		emit(progress.Event{Event: progress.Done, Step: step, DurationMS: time.Since(t0).Milliseconds()})
	}
	if err := commit(dir, work, m, res); err != nil {
		return res, err
	}
	res.Duration = time.Since(start).Seconds()
	return res, nil
}

func (r *BuildResult) warn(emit func(progress.Event), w string) {
	r.Warnings = append(r.Warnings, w)
	emit(progress.Event{Event: progress.Warning, Message: w})
}

// shardOutput checks and hashes the .rknn the toolkit wrote for s.
func shardOutput(work string, s rknnchain.ShardEntry) (ShardBuild, error) {
	name := rknnName(s.File)
	p := filepath.Join(work, name)
	f, err := os.Open(p)
	if err != nil {
		return ShardBuild{}, &BuildError{Shard: s.File, BuildError: pulsar2.BuildError{Kind: FailOutput, Msg: "rknn-toolkit2 reported success but wrote no " + name,
			Fix: "run the printed command by hand and read its log; if it repeats, try another rknn-toolkit2 version"}}
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return ShardBuild{}, err
	}
	if n == 0 {
		return ShardBuild{}, &BuildError{Shard: s.File, BuildError: pulsar2.BuildError{Kind: FailOutput, Msg: "rknn-toolkit2 wrote an empty " + name, Fix: "build again; if it repeats, try another rknn-toolkit2 version"}}
	}
	return ShardBuild{File: s.File, RKNN: name, SHA256: hex.EncodeToString(h.Sum(nil)), Bytes: n, Core: s.Core}, nil
}

// commit moves every .rknn from the work directory beside the manifest
// and records them in it; the manifest's atomic rewrite is the commit
// point. A failure puts back what was there before (an earlier build's
// files), so the chain keeps a whole set or none.
func commit(dir, work string, m *rknnchain.Manifest, res *BuildResult) error {
	old := filepath.Join(work, "previous")
	if err := os.Mkdir(old, 0o755); err != nil {
		return err
	}
	var moved, saved []string
	undo := func() {
		for _, n := range moved {
			os.Remove(filepath.Join(dir, n))
		}
		for _, n := range saved {
			os.Rename(filepath.Join(old, n), filepath.Join(dir, n))
		}
	}
	for _, sb := range res.Shards {
		dst := filepath.Join(dir, sb.RKNN)
		if _, err := os.Lstat(dst); err == nil {
			if err := os.Rename(dst, filepath.Join(old, sb.RKNN)); err != nil {
				undo()
				return err
			}
			saved = append(saved, sb.RKNN)
		}
		if err := os.Rename(filepath.Join(work, sb.RKNN), dst); err != nil {
			undo()
			return err
		}
		moved = append(moved, sb.RKNN)
	}
	for i, sb := range res.Shards {
		m.Shards[i].RKNN, m.Shards[i].RKNNSHA256, m.Shards[i].RKNNToolkit = sb.RKNN, sb.SHA256, res.ToolkitVersion
	}
	m.Build.TargetPlatform = res.Target
	if err := rknnchain.Write(dir, m); err != nil {
		undo()
		return err
	}
	return atomicfile.SyncDir(dir)
}

// judgeShard turns one shard's exit status and log into a verdict; nil
// with a nil runErr is success.
func judgeShard(sc *logScanner, runErr error, ctx context.Context, timeout time.Duration, disabled []string, tk *toolkit) *BuildError {
	mk := func(kind, msg, fix, line string) *BuildError {
		return &BuildError{BuildError: pulsar2.BuildError{Kind: kind, Msg: msg, Fix: fix, Line: line, Tail: sc.tail}}
	}
	if errors.Is(runErr, context.DeadlineExceeded) && ctx.Err() == nil {
		return mk(FailTimeout, fmt.Sprintf("rknn-toolkit2 ran past --timeout %s and was stopped", timeout),
			"raise --timeout; the toolkit is slow on shards with thousands of tile operators: re-shard with a larger --sram-kb (fewer tiles) if it still compiles", sc.lastErr)
	}
	if runErr != nil && ctx.Err() != nil {
		return nil // cancelled: the caller returns ctx's error
	}
	if be, ok := runErr.(*BuildError); ok {
		return be
	}
	code, err := container.ExitCode(runErr)
	if err != nil {
		return mk(FailRuntime, err.Error(), "", "")
	}
	if code == 0 && sc.wrote {
		return nil
	}
	if f := sc.failure; f != nil {
		if f.kind == FailRegtask {
			if r := firedFusion(sc.fired); r != "" {
				fix := "re-shard with --barrier both: this rknn-toolkit2 applied " + r + " although disable_rules lists it"
				if !slices.Contains(disabled, r) {
					fix = "re-shard with --barrier rules or both, so rknn.config disables " + r
				}
				return mk(FailFused, fmt.Sprintf("rknn-toolkit2 fused the tiles back (rule %s) and the fused operation is over the scratchpad (REGTASK Overflow, 0xe010)", r), fix, sc.failLine)
			}
		}
		return mk(f.kind, f.msg, f.fix, sc.failLine)
	}
	if code == 137 {
		return mk(FailOOM, "rknn-toolkit2 was killed (exit 137): out of memory", "give the container (or machine) more RAM or swap, or cut smaller shards", "")
	}
	if be := tk.startFailure(code, sc); be != nil {
		return be
	}
	if code == 0 {
		return mk(FailOutput, "the build script ended without its success line", "run the printed command by hand and read its log", sc.lastErr)
	}
	step := map[int]string{10: "rknn.config", 11: "rknn.load_onnx", 12: "rknn.build", 13: "rknn.export_rknn"}[code]
	if step != "" {
		return mk(FailCompiler, fmt.Sprintf("%s failed (exit %d)", step, code), "see the toolkit's log above; docs/rknn.md lists the failures edgectl recognizes", sc.lastErr)
	}
	return mk(FailCompiler, fmt.Sprintf("rknn-toolkit2 failed (exit %d)", code), "see the toolkit's log above; docs/rknn.md lists the failures edgectl recognizes", sc.lastErr)
}

// firedFusion is the first applied rule that merges what tiling split.
func firedFusion(fired []string) string {
	for _, r := range fired {
		if slices.Contains(fusionRules, r) {
			return r
		}
	}
	return ""
}
