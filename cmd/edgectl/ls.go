package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/envconfig"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/units"
	"github.com/edgectl/edgectl/serve"
)

func init() { register(newLsCmd) }

type lsOptions struct {
	Dirs   []string // --dir: models directories, as serve --models takes them
	Config string   // --config: serve's config file, for its models
}

func newLsCmd(io *cli.IO) *cobra.Command {
	o := &lsOptions{}
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the models on this machine: the Hugging Face cache, prep outputs, serve's model dirs",
		Long: `Lists every model edgectl can run from this machine, as ollama ls does:
each revision in the Hugging Face cache (HF_HUB_CACHE, as pull uses it), and
what serve finds in its model directories (EDGECTL_MODELS, --config's models,
--dir), prep outputs among them. FORMAT is what the engine that runs the
model says (safetensors, gguf, h1b, axmodel; "-" when none runs it). Sizes are
bytes on disk; a blob that several cached revisions share counts once in the
total. NAME is what edgectl rm takes.`,
		Example: `  edgectl ls
  edgectl ls --dir ~/models --dir /data/axmodels
  edgectl ls --json | jq '.models[] | select(.source=="hub-cache") | .name'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runLs(cmd.Context(), io, o) },
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.Dirs, "dir", nil, "also list this models directory, as serve --models takes it (repeatable; EDGECTL_MODELS are always listed)")
	f.StringVar(&o.Config, "config", "", "also list the models of this serve config file")
	return cmd
}

// modelDirs are the models directories ls and rm look in: serve's own
// (EDGECTL_MODELS, a --config file's models) and the --dir values.
func modelDirs(dirs []string, config string) ([]string, error) {
	out := envconfig.Models.Get()
	if config != "" {
		fc, err := serve.ReadConfig(config)
		if err != nil {
			return nil, errkind.Wrap(errkind.Usage, err)
		}
		out = append(out, fc.Models...)
	}
	return append(out, dirs...), nil
}

func runLs(_ context.Context, io *cli.IO, o *lsOptions) error {
	dirs, err := modelDirs(o.Dirs, o.Config)
	if err != nil {
		return err
	}
	ms, err := findLocal(dirs)
	if err != nil {
		return err
	}
	for _, w := range ms.Warnings {
		io.Logf("warning: %s", w)
	}
	if io.JSON {
		return io.WriteJSON(ms)
	}
	if len(ms.Models) == 0 {
		io.Logf("no models: the Hub cache %s is empty and no models dir holds one (edgectl pull ORG/NAME, or ls --dir DIR)", ms.Caches[0].Dir)
		return nil
	}
	tw := tabwriter.NewWriter(io.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tREVISION\tFORMAT\tSIZE\tMODIFIED\tWHERE")
	now := time.Now()
	for _, m := range ms.Models {
		where := m.Path
		if m.Source == sourceHub {
			where = "hub cache"
		} else if m.Source == sourcePrep {
			where = "prep " + m.Target + ": " + m.Path
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, orDash(m.Revision), orDash(m.Format), units.Bytes(m.Size), ago(now, m.Modified), where)
	}
	tw.Flush()
	var caches []string
	for _, c := range ms.Caches {
		caches = append(caches, c.Dir)
	}
	io.Logf("%d models, %s on disk (each file once: revisions share blobs); Hub cache %s", len(ms.Models), units.Bytes(ms.Size), strings.Join(caches, ", "))
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ago says how long before now t was, as ollama ls does.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	unit := func(n int, what string) string {
		if n == 1 {
			return "1 " + what + " ago"
		}
		return fmt.Sprintf("%d %ss ago", n, what)
	}
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return unit(int(d/time.Minute), "minute")
	case d < 24*time.Hour:
		return unit(int(d/time.Hour), "hour")
	case d < 30*24*time.Hour:
		return unit(int(d/(24*time.Hour)), "day")
	case d < 365*24*time.Hour:
		return unit(int(d/(30*24*time.Hour)), "month")
	}
	return unit(int(d/(365*24*time.Hour)), "year")
}
