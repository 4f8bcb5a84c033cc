package main

import (
	"bytes"
	"context"
	"errors"
	goio "io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/errkind"
)

// TestUsageErrorsAreTyped: every way cobra rejects a command line exits 2,
// and the error reaching execute carries exitUsage itself.
func TestUsageErrorsAreTyped(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"doctr"}, `unknown command "doctr" (did you mean doctor?)`},
		{[]string{"doctor", "--nope", "x"}, "unknown flag: --nope"},
		{[]string{"doctor", "-Z", "x"}, "unknown shorthand flag"},
		{[]string{"run", "m", "--threads", "many"}, `invalid argument "many"`},
		{[]string{"doctor", "x", "--target"}, "flag needs an argument"},
		{[]string{"doctor"}, "accepts 1 arg(s), received 0"},
		{[]string{"doctor", "a", "b"}, "accepts 1 arg(s), received 2"},
		{[]string{"serve", "extra"}, `unknown command "extra"`},
		{[]string{"prep", "src", "--target", "cpu"}, `required flag(s) "output" not set`},
	} {
		var out, errOut bytes.Buffer
		io := &cli.IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
		root := newRootCmd(io)
		root.SetArgs(c.args)
		err := root.ExecuteContext(context.Background())
		if !errors.Is(err, errkind.Usage) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: error %v (%T); want a usage error (errkind.Usage) saying %q", c.args, err, err, c.says)
		}
		if code, _, stderr := runCLI(t, c.args...); code != exitUsage || !strings.Contains(stderr, c.says) {
			t.Errorf("%q: exit %d, stderr %q; want 2", c.args, code, stderr)
		}
	}
}

// TestErrorTextDoesNotDecideTheExitCode: a command failing with a message
// that merely reads like cobra's exits 1, not 2.
func TestErrorTextDoesNotDecideTheExitCode(t *testing.T) {
	var errOut bytes.Buffer
	io := &cli.IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &errOut}
	root := newRootCmd(io)
	root.AddCommand(&cobra.Command{Use: "lookalike", RunE: func(*cobra.Command, []string) error {
		return errors.New(`model config: unknown flag "x" in requires at least one invalid argument`)
	}})
	if code := execute(context.Background(), io, root, []string{"lookalike"}); code != exitError {
		t.Fatalf("exit %d, want 1 (stderr %q)", code, errOut.String())
	}
}

func TestNoCommandPrintsHelp(t *testing.T) {
	code, out, stderr := runCLI(t)
	if code != 0 || !strings.Contains(out, "Available Commands:") || stderr != "" {
		t.Fatalf("edgectl: exit %d stdout %q stderr %q", code, out, stderr)
	}
}

// TestOneNamePerFlag: a shorthand means the same long flag in every
// command, and no command shows a deprecated spelling in its help.
func TestOneNamePerFlag(t *testing.T) {
	deprecated := map[string]string{"out": "output"}
	byShort := map[string]string{}
	where := map[string]string{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if now, ok := deprecated[f.Name]; ok && !f.Hidden {
				t.Errorf("%s shows --%s; the name is --%s", c.CommandPath(), f.Name, now)
			}
			if f.Shorthand == "" || f.Hidden {
				return
			}
			if prev, ok := byShort[f.Shorthand]; ok && prev != f.Name {
				t.Errorf("-%s is --%s in %s but --%s in %s", f.Shorthand, prev, where[f.Shorthand], f.Name, c.CommandPath())
			}
			byShort[f.Shorthand], where[f.Shorthand] = f.Name, c.CommandPath()
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(&cli.IO{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}))
	if byShort["o"] != "output" {
		t.Fatalf("-o is --%s, want --output", byShort["o"])
	}
}

// TestPrepOutIsADeprecatedAlias: prep takes -o/--output; --out still works
// (the required check included), warns, and is missing from the help.
func TestPrepOutIsADeprecatedAlias(t *testing.T) {
	for _, spelling := range []string{"-o", "--output", "--out", "--out="} {
		var got *prepOptions
		var errOut bytes.Buffer
		io := &cli.IO{Out: &bytes.Buffer{}, ErrOut: &errOut}
		cmd := newPrepCmdWith(io, func(_ context.Context, _ *cli.IO, o *prepOptions) error {
			got = o
			return nil
		})
		args := []string{"src", "--target", "cpu", spelling, "dir"}
		if strings.HasSuffix(spelling, "=") {
			args = []string{"src", "--target", "cpu", spelling + "dir"}
		}
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil || got == nil || got.Out != "dir" {
			t.Fatalf("prep %q: %v, options %+v", args, err, got)
		}
		warned := strings.Contains(errOut.String(), "--out is deprecated") && strings.Contains(errOut.String(), "use -o/--output")
		if warned != (spelling == "--out" || spelling == "--out=") {
			t.Errorf("prep %s: stderr %q", spelling, errOut.String())
		}
	}
	code, out, _ := runCLI(t, "prep", "--help")
	if code != 0 || !strings.Contains(out, "-o, --output") || strings.Contains(out, "--out ") {
		t.Fatalf("prep --help: exit %d\n%s", code, out)
	}
}

// TestDoctorColoursOnlyATerminalStdout runs doctor with stdout on a pipe and
// stderr on a terminal (the case that once got colour in a pipe), then with
// stdout on a terminal; NO_COLOR turns it off again.
func TestDoctorColoursOnlyATerminalStdout(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm")
	dir := filepath.Join(t.TempDir(), "m")
	writeGemma(t, dir)

	// doctor runs with stderr on a real terminal and stdout on that terminal
	// too or on a pipe; it returns what reached stdout.
	doctor := func(stdoutTTY bool) string {
		ptmx, tty, err := pty.Open()
		if err != nil {
			t.Skipf("no pty: %v", err)
		}
		defer ptmx.Close()
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		screen, piped := make(chan string), make(chan string)
		go func() { b, _ := goio.ReadAll(ptmx); screen <- string(b) }()
		go func() { b, _ := goio.ReadAll(r); piped <- string(b) }()
		out := w
		if stdoutTTY {
			out = tty
		}
		code := run(context.Background(), &cli.IO{In: strings.NewReader(""), Out: out, ErrOut: tty}, []string{"doctor", dir})
		tty.Close()
		w.Close()
		if code != exitFixable {
			t.Fatalf("doctor: exit %d, want %d", code, exitFixable)
		}
		if stdoutTTY {
			<-piped
			return <-screen
		}
		<-screen
		return <-piped
	}
	if got := doctor(false); strings.Contains(got, "\x1b[") || !strings.Contains(got, "fixable") {
		t.Errorf("stdout on a pipe, stderr on a terminal: stdout %q; want plain text", got)
	}
	if got := doctor(true); !strings.Contains(got, "\x1b["+cli.Yellow+"mfixable\x1b[0m") {
		t.Errorf("stdout on a terminal: %q; want the verdict in colour", got)
	}
	t.Setenv("NO_COLOR", "1")
	if got := doctor(true); strings.Contains(got, "\x1b[") || !strings.Contains(got, "fixable") {
		t.Errorf("NO_COLOR=1, stdout on a terminal: %q; want plain text", got)
	}
}
