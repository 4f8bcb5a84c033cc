// Command prepmain runs prep.Run with --json events on stdout, so tests can
// kill a real prep process mid-pipeline (SIGKILL: no cleanup runs) and
// check that the next run resumes.
//
//	prepmain SOURCE TARGET OUT CACHE_DIR [IMAGE]
package main

import (
	"context"
	"os"

	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/prep"
)

func main() {
	a := os.Args[1:]
	o := prep.Options{Source: a[0], Target: a[1], Out: a[2], CacheDir: a[3]}
	if len(a) > 4 {
		o.Image = a[4]
	}
	io := &cli.IO{Out: os.Stdout, ErrOut: os.Stderr, JSON: true}
	if _, err := prep.Run(context.Background(), io, o); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(cli.CodeOf(err))
	}
}
