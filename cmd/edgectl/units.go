package main

import "github.com/edgectl/edgectl/internal/cli"

// Older names for cli.Bytes, still used by files being written in parallel;
// to be folded into cli.Bytes once they land.
var (
	humanBytes = cli.Bytes
	pullSize   = cli.Bytes
)
