// Command edgectl takes a Hugging Face checkpoint to a model that runs on an
// edge NPU, and serves it there. Each subcommand lives in its own file and is
// a thin layer over a library package.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/edgectl/edgectl/internal/cli"
)

// signalGrace is how long a command has, after SIGINT or SIGTERM cancelled
// its context, to finish cleanly (serve drains, run prints its summary)
// before the process exits anyway: a command stuck where it does not look
// at its context (a read from a terminal, a blocking open, a hostile model's
// work) must not keep the process alive.
const signalGrace = time.Second

func main() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, cli.System(), os.Args[1:]) }()
	os.Exit(waitExit(done, sigs, cancel, signalGrace))
}

// waitExit returns the exit code: the command's own when it ends by itself;
// after a signal, its own if it then succeeds within grace, else 128+signo
// (130 for SIGINT, 143 for SIGTERM) once grace is over or at a second
// signal, whichever comes first.
func waitExit(done <-chan int, sigs <-chan os.Signal, cancel func(), grace time.Duration) int {
	var sig os.Signal
	select {
	case code := <-done:
		return code
	case sig = <-sigs:
	}
	cancel()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case code := <-done:
		if code == exitOK {
			return code
		}
	case sig = <-sigs:
	case <-timer.C:
	}
	return signalCode(sig)
}

// signalCode is the shell's convention for a process ended by sig.
func signalCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 128 + int(syscall.SIGINT)
}
