// Package failpoint is a test hook for crash tests: it lets a test kill a
// real edgectl process at an exact moment, as kill -9 or a power cut would.
//
// EDGECTL_FAILPOINT=NAME[:N][,NAME[:N]...] makes the process SIGKILL itself
// the N-th time (default 1) it reaches Hit(NAME). Without the variable Hit
// costs one atomic load. It is not a user feature: nothing documents it
// outside tests and docs/patch.md's description of how the guarantee is
// tested.
package failpoint

import (
	"strconv"
	"strings"
	"sync"

	"github.com/edgectl/edgectl/internal/envconfig"
)

// Env is the environment variable read once at the first Hit (defined in
// internal/envconfig with the others).
var Env = envconfig.Failpoint.Name

var (
	once   sync.Once
	mu     sync.Mutex
	armed  map[string]int // name → the hit that kills
	counts map[string]int
)

func parse(spec string) map[string]int {
	m := map[string]int{}
	for _, f := range strings.Split(spec, ",") {
		name, n, _ := strings.Cut(strings.TrimSpace(f), ":")
		if name == "" {
			continue
		}
		k := 1
		if n != "" {
			v, err := strconv.Atoi(n)
			if err != nil || v < 1 {
				continue
			}
			k = v
		}
		m[name] = k
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// Hit marks the point NAME; if EDGECTL_FAILPOINT arms it for this hit, the
// process dies here without running deferred functions or flushing
// anything.
func Hit(name string) {
	once.Do(func() {
		armed = parse(envconfig.Failpoint.Get())
		counts = map[string]int{}
	})
	if armed == nil {
		return
	}
	mu.Lock()
	counts[name]++
	die := armed[name] == counts[name]
	mu.Unlock()
	if die {
		kill()
	}
}
