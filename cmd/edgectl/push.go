package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/edgectl/edgectl/internal/cli"
)

func init() { register(newPushCmd) }

type pushOptions struct {
	Dir      string
	Ref      string
	Insecure bool
}

func newPushCmd(io *cli.IO) *cobra.Command {
	return newPushCmdWith(io, runPush)
}

func newPushCmdWith(io *cli.IO, runF func(context.Context, *cli.IO, *pushOptions) error) *cobra.Command {
	o := &pushOptions{}
	cmd := &cobra.Command{
		Use:   "push OUT REF",
		Short: "Push a prep artifact directory to an OCI registry",
		Long: `Pushes OUT/ (written by ` + "`edgectl prep`" + `) to an OCI registry as an image with
one zstd tar layer per file, each annotated with its path, size and sha256, and
the prep manifest in the image manifest's annotations. OUT/ must still match its
manifest.json. Identical OUT/ directories push to the same digest.

Credentials come from the docker config (~/.docker/config.json, DOCKER_CONFIG)
and credential helpers, as for docker and crane: run ` + "`docker login REGISTRY`" + ` first.
The reference to pull by digest is printed on stdout.

Exit codes: 0 ok, 1 error, 11 access denied, 10 not found, 15 network, 16 registry busy.`,
		Example: `  edgectl push out/tiny localhost:5000/models/tiny:v1
  edgectl push out/qwen3-ax650 ghcr.io/acme/qwen3-ax650:2026-11 --json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir, o.Ref = args[0], args[1]
			return runF(cmd.Context(), io, o)
		},
	}
	cmd.Flags().BoolVar(&o.Insecure, "insecure", false, "allow plain HTTP to a registry other than localhost")
	return cmd
}

func runPush(ctx context.Context, io *cli.IO, o *pushOptions) error {
	res, err := pushDir(ctx, newEventView(io, true), o.Dir, o.Ref, o.Insecure)
	if err != nil {
		return err
	}
	if !io.JSON {
		io.Printf("%s\n", res.Ref)
	}
	return nil
}
