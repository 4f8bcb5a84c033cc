package hub

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/errkind"
)

// Deleting from the Hub cache, as huggingface_hub's delete_revisions does
// (`hf cache delete`): a whole repository, or one revision of it — its
// snapshot, the refs that name it, and the blobs no other snapshot links
// to. Plan first (what goes, how much is freed: what rm shows before it
// asks), then Execute, which plans again under the download locks so a
// blob another snapshot came to use meanwhile stays.
//
// Nothing is ever half visible: a repository folder is renamed in one step
// to an edgectl temporary in the cache root, a snapshot to one in its
// repository folder (beside snapshots/, so neither edgectl nor
// huggingface_hub takes it for a revision), before it is deleted; a
// revision's refs go before its snapshot, and its blobs, which nothing then
// links to, after. A kill -9 leaves only the temporary (swept by the next
// rm) and unreferenced blobs (counted by ScanCache, freed with the
// repository).

// DeletePlan is what removing a repository or one revision takes.
type DeletePlan struct {
	Cache   string   `json:"cache"`
	Repo    string   `json:"repo"`
	Commits []string `json:"commits"`        // the revisions that go
	Refs    []string `json:"refs,omitempty"` // the refs that named them
	Whole   bool     `json:"whole_repo"`     // no revision is left: the repository folder goes
	Freed   int64    `json:"freed"`          // bytes given back
	// Paths are the snapshot directories that go (the repository folder
	// when Whole): where a server would have loaded the model from.
	Paths []string `json:"paths"`

	revision string
	blobs    []string
}

// PlanDelete plans removing repo from the Hub cache at cacheDir: every
// revision when revision is "", else the one revision it names (a commit,
// an unambiguous commit prefix of 7 or more digits, or a ref such as main).
// Removing the last revision removes the repository. A repo id or revision
// that could name a path outside the repository (`..`, `/x`) is a usage
// error; one that is not cached is errkind.NotFound.
func PlanDelete(cacheDir, repo, revision string) (*DeletePlan, error) {
	if err := checkRepoID(repo); err != nil {
		return nil, errkind.Wrap(errkind.Usage, err)
	}
	if revision != "" && (strings.Contains(revision, "..") || strings.HasPrefix(revision, "/") ||
		strings.Contains(revision, "\\") || !filepath.IsLocal(filepath.FromSlash(revision))) {
		return nil, errkind.Errorf(errkind.Usage, "revision %q is not a branch, tag or commit", revision)
	}
	rc := newRepoCache(cacheDir, repo)
	fi, err := os.Lstat(rc.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errkind.Errorf(errkind.NotFound, "%s is not in the Hub cache %s: edgectl ls lists what is", repo, cacheDir)
	}
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is a symlink or a file, not a folder: edgectl rm deletes only what lies inside the Hub cache %s; remove it yourself", rc.dir, cacheDir)
	}
	r, _, err := scanRepo(cacheDir, rc.folder)
	if err != nil {
		return nil, err
	}
	return plan(rc, r, revision)
}

// plan works out a DeletePlan from a scan of the repository.
func plan(rc repoCache, r *CachedRepo, revision string) (*DeletePlan, error) {
	p := &DeletePlan{Cache: rc.root, Repo: r.Repo, revision: revision, Commits: []string{}}
	var gone *CachedRevision
	if revision != "" {
		i, err := findRevision(r, revision)
		if err != nil {
			return nil, err
		}
		gone = &r.Revisions[i]
	}
	if gone == nil || len(r.Revisions) == 1 {
		p.Whole, p.Paths = true, []string{rc.dir}
		p.Freed = r.SizeOnDisk + r.Unreferenced
		for _, rev := range r.Revisions {
			p.Commits = append(p.Commits, rev.Commit)
			p.Refs = append(p.Refs, rev.Refs...)
		}
		return p, nil
	}
	p.Commits, p.Refs, p.Paths = []string{gone.Commit}, gone.Refs, []string{gone.Path}
	kept := map[string]bool{}
	for _, rev := range r.Revisions {
		if rev.Commit != gone.Commit {
			for b := range rev.blobs {
				kept[b] = true
			}
		}
	}
	for b, n := range gone.blobs {
		if !kept[b] {
			p.blobs = append(p.blobs, b)
			p.Freed += n
		}
	}
	slices.Sort(p.blobs)
	return p, nil
}

// findRevision picks the revision rev names: a commit, a ref, or a commit
// prefix of at least 7 hex digits that only one snapshot has.
func findRevision(r *CachedRepo, rev string) (int, error) {
	var byPrefix []int
	for i, c := range r.Revisions {
		if c.Commit == rev || slices.Contains(c.Refs, rev) {
			return i, nil
		}
		if len(rev) >= 7 && strings.HasPrefix(c.Commit, rev) {
			byPrefix = append(byPrefix, i)
		}
	}
	switch len(byPrefix) {
	case 1:
		return byPrefix[0], nil
	case 0:
		return 0, errkind.Errorf(errkind.NotFound, "%s@%s is not in the Hub cache (no snapshot has that commit or ref): edgectl ls lists the cached revisions", r.Repo, rev)
	}
	return 0, errkind.Errorf(errkind.Usage, "%s@%s: %d cached commits start with %s; give more digits", r.Repo, rev, len(byPrefix), rev)
}

// Execute carries the plan out. It refuses (errkind.Busy) while a download
// into the repository holds one of its locks, and plans again under those
// locks, so what it deletes is what is unused now.
func (p *DeletePlan) Execute() error {
	rc := newRepoCache(p.Cache, p.Repo)
	unlock, err := lockRepo(rc)
	if err != nil {
		return err
	}
	defer unlock()
	atomicfile.CleanStale(p.Cache) // what an earlier rm killed midway left
	atomicfile.CleanStale(rc.dir)
	fi, err := os.Lstat(rc.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed meanwhile: nothing left to do
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is no longer a folder: left alone", rc.dir)
	}
	r, _, err := scanRepo(p.Cache, rc.folder)
	if err != nil {
		return err
	}
	now := p
	if p.revision != "" {
		if i, err := findRevision(r, p.revision); err != nil || r.Revisions[i].Commit != p.Commits[0] {
			return nil // that revision is already gone
		}
		if now, err = plan(rc, r, p.revision); err != nil {
			return err
		}
	}
	if now.Whole {
		if err := atomicfile.Remove(rc.dir, p.Cache); err != nil {
			return diskErr(err, rc.dir)
		}
		os.RemoveAll(filepath.Join(p.Cache, ".locks", rc.folder))
		return nil
	}
	commit := now.Commits[0]
	for _, ref := range now.Refs {
		if err := os.Remove(rc.ref(ref)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := atomicfile.Remove(rc.snapshotDir(commit), rc.dir); err != nil {
		return err
	}
	os.RemoveAll(filepath.Join(rc.dir, ".no_exist", commit))
	var errs []error
	for _, b := range now.blobs {
		if err := os.Remove(b); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s@%s is removed, but some of the blobs only it used are not (nothing links to them now; rm %s frees them with the repository): %w", p.Repo, commit[:12], p.Repo, err)
	}
	return nil
}
