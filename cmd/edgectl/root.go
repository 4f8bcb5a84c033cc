package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/edgectl/edgectl/internal/cli"
)

// run executes edgectl with args and returns the process exit code. Tests call
// it directly with an IO over buffers.
func run(ctx context.Context, io *cli.IO, args []string) int {
	return execute(ctx, io, newRootCmd(io), args)
}

// execute runs root with args and turns its error into an exit code: the
// code the error carries (cli.CodeOf), never one guessed from its text.
func execute(ctx context.Context, io *cli.IO, root *cobra.Command, args []string) int {
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return cli.ExitOK
	}
	code := cli.CodeOf(err) // usage errors are typed where cobra makes them (usage.go)
	var silent *silentError
	if !errors.As(err, &silent) {
		if io.JSON {
			io.Event(map[string]any{"event": "error", "error": err.Error(), "exit_code": code})
		}
		fmt.Fprintf(io.ErrOut, "edgectl: %v\n", err)
	}
	return code
}

// silentError carries an exit code whose explanation the command already
// printed (doctor's verdict, for example).
type silentError struct{ code int }

func (e *silentError) Error() string { return fmt.Sprintf("exit %d", e.code) }
func (e *silentError) ExitCode() int { return e.code }

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
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return cli.Exit(cli.ExitUsage, err) })

	for _, add := range commands {
		root.AddCommand(add(io))
	}
	typeArgErrors(root)
	return root
}

// commands is filled by each subcommand file's init, so adding a command
// touches only its own file.
var commands []func(*cli.IO) *cobra.Command

func register(f func(*cli.IO) *cobra.Command) { commands = append(commands, f) }
