package main

import (
	"context"
	"path"
	"strings"

	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/prep"
	"github.com/edgectl/edgectl/prep/oci"
)

// pull.go hands oci:// references here.
func init() { pullOCI = runPullOCI }

// runPullOCI fetches a prep artifact from a registry into localDir (default:
// ./NAME, NAME the repository's last path element), verifying every digest.
func runPullOCI(ctx context.Context, io *cli.IO, ref, localDir string) error {
	r, err := oci.ParseRef(ref, false)
	if err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	if localDir == "" {
		localDir = path.Base(r.Context().RepositoryStr())
	}
	io.Event(prep.Event{Event: "start", Step: "pull", Ref: strings.TrimPrefix(ref, "oci://")})
	bar := io.Bar(-1, "pull "+r.String())
	res, err := oci.Pull(ctx, ref, localDir, oci.Options{
		Progress: func(done, total int64) {
			bar.ChangeMax64(total)
			bar.Set64(done)
		},
	})
	bar.Finish()
	if err != nil {
		return err
	}
	if io.JSON {
		ev := prep.Event{Event: "done", Step: "pull", Ref: res.Ref, Digest: res.Digest, Out: res.Dir, Files: res.Files, Bytes: res.Bytes}
		if res.UpToDate {
			ev.Event, ev.Reason = "skip", "up to date"
		}
		io.Event(ev)
		return nil
	}
	if res.UpToDate {
		io.Logf("%s already holds %s", res.Dir, res.Ref)
	} else {
		io.Logf("%s → %s: %d files, %s, every digest verified", res.Ref, res.Dir, res.Files, cli.Bytes(res.Bytes))
	}
	io.Printf("%s\n", res.Dir)
	return nil
}
