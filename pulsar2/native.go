package pulsar2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/edgectl/edgectl/internal/container"
	"github.com/edgectl/edgectl/internal/envconfig"
)

// RuntimeNative is BuildResult.Runtime for a build with --pulsar2-bin.
const RuntimeNative = "native"

// buildNative is Build with an installed pulsar2 (the seed's LXC setup)
// instead of a container: the same plan, log scanning, failure kinds and
// output checks; the shim goes first on PYTHONPATH instead of a mount.
func buildNative(ctx context.Context, opts BuildOptions, p *plan, outAbs string, start time.Time, logw io.Writer) (*BuildResult, error) {
	bin, err := ResolveNative(opts.Pulsar2Bin)
	if err != nil {
		return nil, err
	}
	res, err := p.result(opts, outAbs, logw, bin+" is", func() (string, error) { return probeNativeVersion(ctx, bin) })
	if err != nil {
		return nil, err
	}
	res.Runtime, res.Pulsar2Bin = RuntimeNative, bin

	return p.produce(outAbs, res, opts, start, logw, compiler{
		command: func(outPath, shimHost string) []string {
			return p.nativeCommand(bin, res.Builder, outPath, shimHost)
		},
		run:   func(command []string) (*logScanner, error) { return runNative(ctx, command, logw) },
		judge: func(sc *logScanner, runErr error) error { return judgeNative(sc, runErr, bin, res.Builder) },
	})
}

// nativeCommand is the full command line: `env` with the compiler's
// environment, then pulsar2 with host paths. The shim goes first on
// PYTHONPATH, before whatever the user's environment already has there.
func (p *plan) nativeCommand(bin, builder, outHost, shimHost string) []string {
	cmd := []string{"env"}
	if shimHost != "" {
		pp := shimHost
		if old := envconfig.PythonPath.Get(); old != "" {
			pp += string(os.PathListSeparator) + old
		}
		cmd = append(cmd, "PYTHONPATH="+pp)
	}
	cmd = append(cmd, "FLOAT_MATMUL_USE_CONV_EU=1", bin)
	args := p.pulsarArgs(builder)
	// pulsarArgs names the container's paths; a native compiler reads the
	// model directory and writes the output where they are.
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--input_path":
			args[i+1] = p.modelDir
		case "--output_path":
			args[i+1] = outHost
		}
	}
	return append(cmd, args...)
}

// nativeEnv turns the `env NAME=VALUE… bin` prefix of a native command
// into the process environment and argv.
func nativeEnv(command []string) (env, argv []string) {
	env = envconfig.ChildEnv()
	i := 1
	for ; i < len(command) && strings.Contains(command[i], "=") && !strings.HasPrefix(command[i], "/"); i++ {
		name, _, _ := strings.Cut(command[i], "=")
		env = append(dropEnv(env, name), command[i])
	}
	return env, command[i:]
}

func dropEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

func probeNativeVersion(ctx context.Context, bin string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "version").CombinedOutput()
	s := string(out)
	if err != nil {
		return "", &BuildError{Kind: FailRuntime, Msg: fmt.Sprintf("`%s version` failed: %v: %s", bin, err, firstLines(s, 3)),
			Fix: "check that this is the compiler (it should print version: and commit: lines), or pass --builder to skip the version probe"}
	}
	v, err := ParseVersion(s)
	if err != nil {
		return "", &BuildError{Kind: FailRuntime, Msg: fmt.Sprintf("%s: %v", bin, err), Fix: "pass --builder llm_build or llm_build2"}
	}
	return v, nil
}

// runNative runs the compiler in its own process group, streaming its
// merged output to logw and through the scanner; cancelling ctx stops the
// whole group (pulsar2 --parallel forks workers).
func runNative(ctx context.Context, command []string, logw io.Writer) (*logScanner, error) {
	env, argv := nativeEnv(command)
	proc := container.Process{Argv: argv, Env: env, GroupSignal: syscall.SIGTERM}
	return streamRun(ctx, proc, logw, "check that --pulsar2-bin names an executable compiler")
}

// judgeNative is judgeRun for a compiler without a container: exit 126
// and 127 mean the compiler (or what its wrapper runs) could not be
// executed, not that a container did not start.
func judgeNative(sc *logScanner, runErr error, bin, builder string) error {
	var ee *exec.ExitError
	if errors.As(runErr, &ee) && sc.failure == nil {
		if code := ee.ExitCode(); code == 126 || code == 127 {
			return &BuildError{Kind: FailRuntime, Msg: fmt.Sprintf("%s could not run the compiler (exit %d)", bin, code), Line: sc.lastLine(), Tail: sc.tail,
				Fix: "a wrapper script runs a program that is missing or not executable: run " + bin + " version by hand, or point --pulsar2-bin at the compiler's own entry point"}
		}
	}
	return judgeRun(sc, runErr, RuntimeNative, builder, bin)
}

func (s *logScanner) lastLine() string {
	if len(s.tail) == 0 {
		return ""
	}
	return s.tail[len(s.tail)-1]
}
