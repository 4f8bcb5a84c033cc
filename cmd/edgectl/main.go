// Command edgectl takes a Hugging Face checkpoint to a model that runs on an
// edge NPU, and serves it there. Each subcommand lives in its own file and is
// a thin layer over a library package.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/edgectl/edgectl/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, cli.System(), os.Args[1:])
	stop()
	os.Exit(code)
}
