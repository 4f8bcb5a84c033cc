package main

import (
	"github.com/spf13/cobra"

	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/version"
)

func init() { register(newVersionCmd) }

func newVersionCmd(io *cli.IO) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print edgectl's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := version.Get()
			if io.JSON {
				return io.WriteJSON(v)
			}
			io.Printf("edgectl %s (%s, %s)\n", v.Version, v.GoVersion, v.Platform)
			return nil
		},
	}
}
