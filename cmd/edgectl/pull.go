package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/edgectl/edgectl/hub"
	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/units"
)

func init() { register(newPullCmd) }

// pullOCI pulls an oci:// artifact (pull_oci.go); a variable so a test can
// watch the hand-off.
var pullOCI = runPullOCI

type pullOptions struct {
	Ref      string // REPO[@REVISION] or oci://REF
	Include  []string
	Exclude  []string
	LocalDir string
	Jobs     int
	Retries  int
	Token    string
}

func newPullCmd(io *cli.IO) *cobra.Command {
	return newPullCmdWith(io, runPull)
}

func newPullCmdWith(io *cli.IO, runF func(context.Context, *cli.IO, *pullOptions) error) *cobra.Command {
	o := &pullOptions{}
	cmd := &cobra.Command{
		Use:   "pull REPO[@REVISION]",
		Short: "Download a Hugging Face model into the shared Hub cache (resumable, verified)",
		Long: `Downloads a model repository from the Hugging Face Hub into the same cache
huggingface_hub uses (HF_HUB_CACHE, default ~/.cache/huggingface/hub), so files
either tool already fetched are not fetched again. Interrupted downloads resume;
LFS files are checked against their sha256 before they enter the cache.

The snapshot directory is printed on stdout. Environment: HF_ENDPOINT, HF_TOKEN
(or the token file under HF_HOME), HF_HOME, HF_HUB_CACHE, HF_HUB_OFFLINE=1.

Exit codes: 10 not found, 11 gated/private (accept the licence or set HF_TOKEN),
12 offline and not cached, 13 checksum mismatch, 14 disk full, 15 network,
16 Hub busy.`,
		Example: `  edgectl pull Qwen/Qwen2.5-0.5B-Instruct
  edgectl pull meta-llama/Llama-3.2-1B@main --include '*.json' --include '*.safetensors'
  edgectl pull Qwen/Qwen3-1.7B --local-dir ./Qwen3-1.7B --jobs 8
  HF_HUB_OFFLINE=1 edgectl pull Qwen/Qwen3-1.7B   # answer from the cache only`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Ref = args[0]
			return runF(cmd.Context(), io, o)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.Include, "include", nil, "only files matching this glob (fnmatch: * also matches /); repeatable")
	f.StringArrayVar(&o.Exclude, "exclude", nil, "skip files matching this glob; repeatable")
	f.StringVar(&o.LocalDir, "local-dir", "", "also copy the files into DIR as real files (not symlinks)")
	f.IntVarP(&o.Jobs, "jobs", "j", 4, "files downloaded at once")
	f.IntVar(&o.Retries, "retries", hub.DefaultRetries, fmt.Sprintf("retries of a failed request: dropped connections, timeouts, 429, 5xx; backoff up to 30s, at most %v of waiting per request (a refused or unreachable endpoint fails at once)", hub.DefaultRetryDeadline))
	f.StringVar(&o.Token, "token", "", "Hub access token (default: HF_TOKEN, then the token file under HF_HOME)")
	return cmd
}

func runPull(ctx context.Context, io *cli.IO, o *pullOptions) error {
	if strings.HasPrefix(o.Ref, "oci://") {
		return pullOCI(ctx, io, o.Ref, o.LocalDir)
	}
	repo, rev, err := hub.ParseRef(o.Ref)
	if err != nil {
		return errkind.Wrap(errkind.Usage, err)
	}
	if o.Jobs < 1 {
		return usagef("--jobs %d: give at least 1", o.Jobs)
	}
	cfg := hub.FromEnv()
	if o.Token != "" {
		cfg.Token = o.Token
	}
	c, err := hub.NewClient(cfg)
	if err != nil {
		return err
	}
	c.Retry.Attempts = o.Retries + 1
	view := newEventView(io, true)
	snap, err := c.Snapshot(ctx, repo, rev, hub.SnapshotOptions{
		Include: o.Include, Exclude: o.Exclude, Jobs: o.Jobs, LocalDir: o.LocalDir, OnEvent: view.on,
	})
	view.finish()
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("pull of %s interrupted: partial downloads are kept, run the same command again to resume", o.Ref)
	}
	if err != nil {
		return err
	}

	for _, m := range snap.Missing {
		io.Logf("warning: %s@%s has no file %s", snap.Repo, snap.Revision, m)
	}
	if io.JSON {
		io.Event(struct {
			Event string `json:"event"`
			*hub.Snapshot
			Downloaded int64 `json:"downloaded"`
		}{"done", snap, snap.Downloaded()})
		return nil
	}
	cached := 0
	for _, f := range snap.Files {
		if f.Cached {
			cached++
		}
	}
	how := fmt.Sprintf("%s downloaded, %d of %d files from the cache", units.Bytes(snap.Downloaded()), cached, len(snap.Files))
	if snap.Offline {
		how = fmt.Sprintf("%d files from the cache (offline)", len(snap.Files))
	}
	io.Logf("%s@%s → commit %s: %s", snap.Repo, snap.Revision, snap.Commit[:min(12, len(snap.Commit))], how)
	io.Printf("%s\n", snap.Dir)
	return nil
}
