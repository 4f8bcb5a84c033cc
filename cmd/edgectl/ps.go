package main

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/envconfig"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/units"
)

func init() { register(newPsCmd) }

type psOptions struct {
	Host   string
	APIKey string
}

func newPsCmd(io *cli.IO) *cobra.Command {
	o := &psOptions{}
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List the models a running server has loaded: lane, memory, expiry",
		Long: `Asks a running edgectl serve (or any Ollama-compatible server) which models
it holds in memory (GET /api/ps), as ollama ps does: the lane each runs on,
the memory it holds (RAM on the cpu lane, NPU memory on axcl), its context
window and when keep_alive unloads it. The server is --host, else
EDGECTL_HOST, else 127.0.0.1:11434.`,
		Example: `  edgectl ps
  edgectl ps --host 192.168.1.20 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runPs(cmd.Context(), io, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Host, "host", "", "the server: HOST, HOST:PORT, :PORT or http(s)://HOST:PORT (env EDGECTL_HOST)")
	f.StringVar(&o.APIKey, "api-key", "", "the server's API key (env EDGECTL_API_KEY)")
	return cmd
}

// serverClient is the api.Client for --host (else EDGECTL_HOST) with the
// API key of --api-key (else EDGECTL_API_KEY), as run --host builds it.
func serverClient(host, key string) (*api.Client, error) {
	if key == "" {
		key = envconfig.APIKey.Get()
	}
	c, err := api.NewClient(host, key)
	if err != nil {
		if host != "" {
			return nil, usagef("--host %v", err)
		}
		return nil, errkind.Wrap(errkind.Usage, err)
	}
	return c, nil
}

// psOutput is `ps --json`: /api/ps's answer and the server asked.
type psOutput struct {
	Host string `json:"host"`
	api.ProcessResponse
}

func runPs(ctx context.Context, io *cli.IO, o *psOptions) error {
	c, err := serverClient(o.Host, o.APIKey)
	if err != nil {
		return err
	}
	ps, err := c.PS(ctx)
	if err != nil {
		return err
	}
	if io.JSON {
		return io.WriteJSON(psOutput{Host: c.URL(), ProcessResponse: *ps})
	}
	if len(ps.Models) == 0 {
		io.Logf("no model is loaded on %s", c.URL())
		return nil
	}
	tw := tabwriter.NewWriter(io.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tLANE\tSIZE\tCONTEXT\tUNTIL")
	now := time.Now()
	for _, m := range ps.Models {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Name, orDash(m.Lane), units.Bytes(m.Size), contextOf(m.ContextLength), until(now, m.ExpiresAt))
	}
	return tw.Flush()
}

func contextOf(n int) string {
	if n <= 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// until says when a model unloads, as ollama ps does; Ollama reports a
// model kept forever with a time centuries away.
func until(now, t time.Time) string {
	switch d := t.Sub(now); {
	case t.IsZero() || d > 100*365*24*time.Hour:
		return "Forever"
	case d <= 0:
		return "Stopping..."
	case d < time.Minute:
		return fmt.Sprintf("%d seconds from now", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d minutes from now", int(d/time.Minute))
	default:
		return fmt.Sprintf("%.0f hours from now", d.Hours())
	}
}
