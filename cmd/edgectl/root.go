package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/clip"
	"github.com/edgectl/edgectl/internal/errkind"
)

// run executes edgectl with args and returns the process exit code. Tests call
// it directly with an IO over buffers.
func run(ctx context.Context, io *cli.IO, args []string) int {
	return execute(ctx, io, newRootCmd(io), args)
}

// execute runs root with args and turns its error into an exit code: the
// code of the errkind the error carries (exitcode.go), never one guessed
// from its text.
func execute(ctx context.Context, io *cli.IO, root *cobra.Command, args []string) int {
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	code := exitCode(err) // usage errors are marked where cobra makes them (usage.go)
	var silent *silentError
	if !errors.As(err, &silent) {
		msg := clip.Message(err.Error()) // one line; a 10 KB path or id is clipped with its length
		if io.JSON {
			io.Event(map[string]any{"event": "error", "error": msg, "exit_code": code})
		}
		fmt.Fprintf(io.ErrOut, "edgectl: %s\n", msg)
	}
	return code
}

// silentError is an error the command has already explained (doctor's
// verdict, for example): it exits with its kind's code and prints nothing.
type silentError struct{ err error }

func (e *silentError) Error() string { return e.err.Error() }
func (e *silentError) Unwrap() error { return e.err }

func newRootCmd(io *cli.IO) *cobra.Command {
	root := &cobra.Command{
		Use:   "edgectl",
		Short: "Take a Hugging Face checkpoint to a model that runs on an edge NPU, and serve it",
		Long: `edgectl pulls Hugging Face checkpoints, repairs the faults that make vendor
NPU toolchains fail, packs ternary and int4 weights, drives the Axera pulsar2
compiler, and serves the result over OpenAI- and Ollama-compatible APIs.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			io.Settle()
			return validateFlags(cmd)
		},
		Args: cobra.ArbitraryArgs, // so cobra leaves unknown commands to RunE
		RunE: rootRun,
	}
	root.PersistentFlags().BoolVar(&io.JSON, "json", false, "machine-readable output on stdout (logs stay on stderr)")
	root.PersistentFlags().BoolVarP(&io.Quiet, "quiet", "q", false, "no logs or progress bars")
	root.SetOut(io.Out)
	root.SetErr(io.ErrOut)
	root.SetIn(io.In)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return errkind.Wrap(errkind.Usage, err) })

	for _, add := range commands {
		root.AddCommand(add(io))
	}
	typeArgErrors(root)
	checkNumericFlags(root) // flags_numeric.go: NaN, ±Inf and out-of-range values are usage errors
	return root
}

// commands is filled by each subcommand file's init, so adding a command
// touches only its own file.
var commands []func(*cli.IO) *cobra.Command

func register(f func(*cli.IO) *cobra.Command) { commands = append(commands, f) }
