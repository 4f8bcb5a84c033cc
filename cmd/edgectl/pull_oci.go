package main

import (
	"context"
	"path"
	"strings"

	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/progress"
	"github.com/edgectl/edgectl/internal/units"
	"github.com/edgectl/edgectl/prep/oci"
)

// runPullOCI fetches a prep artifact from a registry into localDir (default:
// ./NAME, NAME the repository's last path element), verifying every digest.
func runPullOCI(ctx context.Context, io *cli.IO, ref, localDir string) error {
	r, err := oci.ParseRef(ref, false)
	if err != nil {
		return errkind.Wrap(errkind.Usage, err)
	}
	if localDir == "" {
		localDir = path.Base(r.Context().RepositoryStr())
	}
	view := newEventView(io, true)
	view.json(progress.Event{Event: progress.Start, Step: "pull", Ref: strings.TrimPrefix(ref, "oci://")})
	res, err := oci.Pull(ctx, ref, localDir, oci.Options{OnEvent: view.on})
	view.finish()
	if err != nil {
		return err
	}
	ev := progress.Event{Event: progress.Done, Step: "pull", Ref: res.Ref, Digest: res.Digest, Out: res.Dir, Files: res.Files, Bytes: res.Bytes}
	if res.UpToDate {
		ev.Event, ev.Reason = progress.Skip, "up to date"
	}
	if view.json(ev) {
		return nil
	}
	if res.UpToDate {
		io.Logf("%s already holds %s", res.Dir, res.Ref)
	} else {
		io.Logf("%s → %s: %d files, %s, every digest verified", res.Ref, res.Dir, res.Files, units.Bytes(res.Bytes))
	}
	io.Printf("%s\n", res.Dir)
	return nil
}
