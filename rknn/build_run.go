package rknn

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/edgectl/edgectl/internal/container"
	"github.com/edgectl/edgectl/internal/envconfig"
	"github.com/edgectl/edgectl/pulsar2"
)

// Paths inside the container: the chain (read-only) and the work
// directory the script, its job file and the .rknn files live in.
const (
	ctrChain = "/edgectl/chain"
	ctrWork  = "/edgectl/work"
)

// toolkit is where rknn-toolkit2 runs: a container image under docker or
// podman, or an installed Python (native).
type toolkit struct {
	runtime  string // docker, podman or native
	image    string
	python   string // native: the interpreter, resolved
	uid, gid int
}

func newToolkit(opts BuildOptions) (*toolkit, error) {
	if opts.Native {
		if opts.Image != "" || opts.Runtime != "" {
			return nil, &BuildError{BuildError: pulsar2.BuildError{Kind: FailInput, Msg: "--native runs an installed toolkit: --image and --runtime do not apply", Fix: "drop --native to build in the image, or drop --image/--runtime"}}
		}
		py := cmp.Or(opts.Python, "python3")
		p, err := exec.LookPath(py)
		if err != nil {
			return nil, &BuildError{BuildError: pulsar2.BuildError{Kind: FailRuntime, Msg: fmt.Sprintf("--native: %s not found", py),
				Fix: "install Python 3 with rknn-toolkit2 (pip install rknn_toolkit2-*.whl), pass --python PATH, or build in a container image (--image)"}}
		}
		if p, err = filepath.Abs(p); err != nil {
			return nil, err
		}
		return &toolkit{runtime: RuntimeNative, python: p}, nil
	}
	if opts.Python != "" {
		return nil, &BuildError{BuildError: pulsar2.BuildError{Kind: FailInput, Msg: "--python names a native interpreter: it needs --native", Fix: "add --native, or drop --python to build in the image"}}
	}
	if opts.Image == "" {
		return nil, &BuildError{BuildError: pulsar2.BuildError{Kind: FailInput, Msg: "no toolkit: rknn build needs an image with rknn-toolkit2, or --native",
			Fix: "pass --image IMG (an image with rknn-toolkit2 installed), or --native to use this machine's python3 with rknn.api"}}
	}
	rt, err := container.Lookup(opts.Runtime)
	if errors.Is(err, container.ErrUnknownRuntime) {
		return nil, &BuildError{BuildError: pulsar2.BuildError{Kind: FailInput, Msg: fmt.Sprintf("--runtime %q", opts.Runtime), Fix: "use docker or podman"}}
	}
	if err != nil {
		return nil, &BuildError{BuildError: pulsar2.BuildError{Kind: FailRuntime, Msg: err.Error(), Fix: "install Docker or Podman, or use an installed toolkit with --native"}}
	}
	return &toolkit{runtime: rt, image: opts.Image, uid: os.Getuid(), gid: os.Getgid()}, nil
}

// where names the toolkit for people.
func (t *toolkit) where() string {
	if t.runtime == RuntimeNative {
		return t.python
	}
	return t.runtime + " " + t.image
}

// paths map a file name in the chain's directory and in the work
// directory to the path the toolkit opens.
func (t *toolkit) paths(dir, work string) (in, out func(string) string) {
	if t.runtime == RuntimeNative {
		return func(n string) string { return filepath.Join(dir, n) }, func(n string) string { return filepath.Join(work, n) }
	}
	return func(n string) string { return ctrChain + "/" + n }, func(n string) string { return ctrWork + "/" + n }
}

// command is the full command line that compiles shard i.
func (t *toolkit) command(dir, work, name string, i int) []string {
	_, out := t.paths(dir, work)
	script := []string{out(scriptName), out(jobName), strconv.Itoa(i)}
	if t.runtime == RuntimeNative {
		return append([]string{t.python}, script...)
	}
	return container.Run{Runtime: t.runtime, Name: name, NoNetwork: true, Image: t.image, UID: t.uid, GID: t.gid,
		Mounts:  []container.Mount{{Host: dir, Path: ctrChain, ReadOnly: true}, {Host: work, Path: ctrWork}},
		Command: append([]string{"python3"}, script...)}.Argv()
}

// versionCommand asks pip which rknn-toolkit2 the toolkit has.
func (t *toolkit) versionCommand() []string {
	pip := []string{"-m", "pip", "show", "rknn-toolkit2"}
	if t.runtime == RuntimeNative {
		return append([]string{t.python}, pip...)
	}
	return container.Run{Runtime: t.runtime, NoNetwork: true, Image: t.image, Command: append([]string{"python3"}, pip...)}.Argv()
}

var pipVersion = regexp.MustCompile(`(?m)^Version:\s*(\S+)`)

// version runs `pip show rknn-toolkit2` where the build will run.
func (t *toolkit) version(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	argv := t.versionCommand()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = envconfig.ChildEnv()
	b, err := cmd.CombinedOutput()
	out := string(b)
	if m := pipVersion.FindStringSubmatch(out); m != nil && err == nil {
		return m[1], nil
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	sc := &logScanner{tail: strings.Split(strings.TrimSpace(out), "\n")}
	if code, cerr := container.ExitCode(err); cerr == nil {
		if be := t.startFailure(code, sc); be != nil {
			return "", be
		}
	}
	kind, fix := FailImage, "use an image with rknn-toolkit2 installed (pip install rknn_toolkit2-*.whl from Rockchip's rknn-toolkit2 releases)"
	if t.runtime == RuntimeNative {
		kind, fix = FailRuntime, "install rknn-toolkit2 into that Python (pip install rknn_toolkit2-*.whl), or pass --python with one that has it"
	}
	return "", &BuildError{BuildError: pulsar2.BuildError{Kind: kind, Msg: fmt.Sprintf("%s has no rknn-toolkit2: `%s` said %q", t.where(), pulsar2.ShellQuote(argv), firstLine(out)), Fix: fix}}
}

// run compiles one shard: argv under a timeout, its merged output
// streamed line by line to out and through the scanner. A timeout or a
// cancel stops the container by name (killing the CLI alone would leave it
// running) or the native process group.
func (t *toolkit) run(ctx context.Context, argv []string, timeout time.Duration, out func(string)) (*logScanner, error) {
	sc := &logScanner{}
	proc := container.Process{Argv: argv, Env: envconfig.ChildEnv(), Timeout: timeout, WaitDelay: 10 * time.Second}
	if t.runtime == RuntimeNative {
		proc.GroupSignal = syscall.SIGKILL
	} else {
		proc.Runtime, proc.Name = t.runtime, argv[slices.Index(argv, "--name")+1]
	}
	err := proc.Stream(ctx, func(line string) {
		sc.add(line)
		out(line)
	})
	var se *container.StartError
	if errors.As(err, &se) {
		return sc, &BuildError{BuildError: pulsar2.BuildError{Kind: FailRuntime, Msg: se.Error(), Fix: "check that " + argv[0] + " runs"}}
	}
	return sc, err
}

// startFailure explains an exit that means the toolkit never ran: the
// runtime without its daemon, a missing image, a container or interpreter
// that did not start. Nil when the exit is the toolkit's own.
func (t *toolkit) startFailure(code int, sc *logScanner) *BuildError {
	mk := func(kind, msg, fix string, line string) *BuildError {
		return &BuildError{BuildError: pulsar2.BuildError{Kind: kind, Msg: msg, Fix: fix, Line: line, Tail: sc.tail}}
	}
	if t.runtime == RuntimeNative {
		if code == 126 || code == 127 {
			return mk(FailRuntime, fmt.Sprintf("%s could not run (exit %d)", t.python, code), "check that --python names a working Python 3", sc.lastErr)
		}
		return nil
	}
	for _, l := range sc.tail {
		switch {
		case container.DaemonDown(l):
			return mk(FailRuntime, t.runtime+" cannot reach its daemon", "start it (systemctl start docker) and make sure you may use it (the docker group, or rootless podman)", l)
		case container.ImageMissing(l):
			return mk(FailImage, "image "+t.image+" is not available", "load or pull it first (docker load -i IMAGE.tar, docker pull IMAGE): edgectl runs it with no network", l)
		}
	}
	if container.DidNotStart(code) {
		return mk(FailRuntime, fmt.Sprintf("the container did not start (exit %d)", code), "run the printed command by hand to see why", sc.lastErr)
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
