package hub

import (
	"fmt"
	"strings"
)

// Cached returns the snapshot of repo at revision ("" = main) that the
// cache already holds, without touching the network whatever HF_HUB_OFFLINE
// says; an errkind.Offline error when it holds none. `run` and `serve` use it
// to start a model pulled before as `ollama run` does: from disk, at once.
// (Snapshot, online, asks the Hub what the revision is now; a cached
// snapshot of a branch may be older than the branch.)
func (c *Client) Cached(repo, revision string) (*Snapshot, error) {
	if revision == "" {
		revision = defaultRevision
	}
	if err := checkRepoID(repo); err != nil {
		return nil, err
	}
	if strings.Contains(revision, "..") || strings.HasPrefix(revision, "/") {
		return nil, fmt.Errorf("revision %q is not a branch, tag or commit", revision)
	}
	return c.fromCache(newRepoCache(c.cfg.CacheDir, repo), repo, revision, nil, nil, "looking in the cache only")
}
