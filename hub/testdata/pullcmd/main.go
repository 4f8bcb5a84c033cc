// Command pullcmd is the smallest program that pulls with package hub: the
// kill -9 test builds it, kills it mid-download, and runs it again.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/edgectl/edgectl/hub"
)

func main() {
	c, err := hub.NewClient(hub.FromEnv())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	snap, err := c.Snapshot(context.Background(), os.Args[1], "main", hub.SnapshotOptions{Jobs: 2})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(snap)
}
