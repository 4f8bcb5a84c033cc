// Command prepmain runs prep.Run with its events as JSON lines on stdout,
// so tests can kill a real prep process mid-pipeline (SIGKILL: no cleanup
// runs) and check that the next run resumes.
//
//	prepmain SOURCE TARGET OUT CACHE_DIR [IMAGE]
package main

import (
	"context"
	"encoding/json"
	"os"
	"sync"

	"github.com/edgectl/edgectl/internal/progress"
	"github.com/edgectl/edgectl/prep"
)

func main() {
	a := os.Args[1:]
	o := prep.Options{Source: a[0], Target: a[1], Out: a[2], CacheDir: a[3]}
	if len(a) > 4 {
		o.Image = a[4]
	}
	var mu sync.Mutex
	enc := json.NewEncoder(os.Stdout)
	events := func(e progress.Event) {
		if e.Event == progress.ToolLog {
			return // the compiler's log: not an event
		}
		if e.Err != nil {
			e.Error = e.Err.Error()
		}
		mu.Lock()
		defer mu.Unlock()
		enc.Encode(e)
	}
	if _, err := prep.Run(context.Background(), events, o); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
}
