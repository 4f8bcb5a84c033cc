package hub

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/edgectl/edgectl/internal/atomicfile"
)

// What is in a Hub cache, as huggingface_hub's scan_cache_dir sees it
// (`hf cache scan`, `huggingface-cli scan-cache`): each model repository
// folder, its revisions (snapshots/<commit>) and the refs naming them, and
// sizes in which a blob that several snapshots link to counts once. `edgectl
// ls` lists it and `edgectl rm` plans deletions over it (cache_delete.go).
// Only directory listings are trusted, never a symlink's target: a link that
// leads out of its repository's blobs/ is reported and not counted.

// CacheInfo is one Hub cache directory.
type CacheInfo struct {
	Dir        string       `json:"dir"`
	Repos      []CachedRepo `json:"repos"`
	SizeOnDisk int64        `json:"size_on_disk"` // every blob a snapshot links to, once
	Warnings   []string     `json:"warnings,omitempty"`
}

// CachedRepo is one model repository folder, models--ORG--NAME.
type CachedRepo struct {
	Repo       string           `json:"repo"`
	Path       string           `json:"path"`
	SizeOnDisk int64            `json:"size_on_disk"` // its snapshots' blobs, each once
	Files      int              `json:"files"`        // distinct blobs its snapshots link to
	Modified   time.Time        `json:"modified"`     // newest of those blobs
	Revisions  []CachedRevision `json:"revisions"`    // newest first
	// Unreferenced counts blobs no snapshot links to (an interrupted
	// download's .incomplete file, a revision removed by hand): on disk,
	// not part of SizeOnDisk, freed when the repository is removed.
	Unreferenced int64 `json:"unreferenced,omitempty"`
}

// CachedRevision is one snapshot of a repository.
type CachedRevision struct {
	Commit   string    `json:"commit"`
	Refs     []string  `json:"refs"` // branches and tags that point at it (main, v1.0, refs/pr/3)
	Path     string    `json:"path"` // snapshots/<commit>
	Files    int       `json:"files"`
	Size     int64     `json:"size"`     // its files' bytes, each blob once
	Modified time.Time `json:"modified"` // the snapshot directory's, as huggingface_hub reports it
	blobs    map[string]int64
}

// ScanCache lists the model repositories in the Hub cache dir. A missing
// dir is an empty cache. Folders that are not model repositories in
// huggingface_hub's layout are reported in Warnings (datasets and spaces
// are skipped silently: edgectl serves models).
func ScanCache(dir string) (*CacheInfo, error) {
	info := &CacheInfo{Dir: dir, Repos: []CachedRepo{}}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return info, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the Hub cache %s: %w", dir, err)
	}
	for _, e := range ents {
		name := e.Name()
		switch {
		case name == ".locks" || strings.HasPrefix(name, "datasets--") || strings.HasPrefix(name, "spaces--"):
			continue
		case isTempName(name):
			if pid, _ := atomicfile.IsTemp(name); atomicfile.OwnerAlive(pid) {
				continue // an edgectl rm at work
			}
			info.Warnings = append(info.Warnings, fmt.Sprintf("%s: left by an interrupted edgectl rm (no model); the next edgectl rm in this cache removes it", filepath.Join(dir, name)))
			continue
		case !strings.HasPrefix(name, "models--"):
			info.Warnings = append(info.Warnings, fmt.Sprintf("%s: not a repository folder of the Hub cache; left alone", filepath.Join(dir, name)))
			continue
		}
		r, warn, err := scanRepo(dir, name)
		info.Warnings = append(info.Warnings, warn...)
		if err != nil {
			info.Warnings = append(info.Warnings, err.Error())
			continue
		}
		info.Repos = append(info.Repos, *r)
		info.SizeOnDisk += r.SizeOnDisk
	}
	sort.Slice(info.Repos, func(i, j int) bool { return info.Repos[i].Repo < info.Repos[j].Repo })
	return info, nil
}

func isTempName(name string) bool {
	_, ok := atomicfile.IsTemp(name)
	return ok
}

// repoOfFolder is the repository id of a cache folder models--ORG--NAME.
func repoOfFolder(folder string) (string, error) {
	rest, _ := strings.CutPrefix(folder, "models--")
	repo := strings.Replace(rest, "--", "/", 1)
	if err := checkRepoID(repo); err != nil {
		return "", fmt.Errorf("%s: not a model repository folder (models--ORG--NAME); left alone", folder)
	}
	return repo, nil
}

// scanRepo reads one repository folder: refs, snapshots and the blobs the
// snapshots link to. Problems that do not stop the scan come back as
// warnings; err is for a folder that is not a repository at all.
func scanRepo(root, folder string) (r *CachedRepo, warn []string, err error) {
	repo, err := repoOfFolder(folder)
	if err != nil {
		return nil, nil, err
	}
	rc := newRepoCache(root, repo)
	fi, err := os.Lstat(rc.dir)
	if err != nil {
		return nil, nil, err
	}
	if !fi.IsDir() {
		return nil, nil, fmt.Errorf("%s is a symlink or a file, not a folder: edgectl looks only inside the cache and leaves it alone", rc.dir)
	}
	r = &CachedRepo{Repo: repo, Path: rc.dir, Revisions: []CachedRevision{}}

	refs, w := readRefs(rc)
	warn = append(warn, w...)
	snaps, err := os.ReadDir(filepath.Join(rc.dir, "snapshots"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, warn, err
	}
	all := map[string]int64{}
	for _, s := range snaps {
		switch {
		case isTempName(s.Name()):
			continue // an edgectl rm in progress (it renames a snapshot beside snapshots/, never in it)
		case !s.IsDir() || !IsCommit(s.Name()):
			warn = append(warn, fmt.Sprintf("%s: not a snapshot (snapshots/<40-hex commit>/); left alone", filepath.Join(rc.dir, "snapshots", s.Name())))
			continue
		}
		rev, w := scanRevision(rc, s.Name())
		warn = append(warn, w...)
		rev.Refs = refs[rev.Commit]
		if rev.Refs == nil {
			rev.Refs = []string{}
		}
		for b, n := range rev.blobs {
			all[b] = n
		}
		r.Revisions = append(r.Revisions, rev)
	}
	for b, n := range all {
		r.SizeOnDisk += n
		r.Files++
		if fi, err := os.Lstat(b); err == nil && fi.ModTime().After(r.Modified) {
			r.Modified = fi.ModTime()
		}
	}
	r.Unreferenced = unreferenced(rc, all)
	sort.Slice(r.Revisions, func(i, j int) bool {
		a, b := r.Revisions[i], r.Revisions[j]
		if !a.Modified.Equal(b.Modified) {
			return a.Modified.After(b.Modified)
		}
		return a.Commit < b.Commit
	})
	return r, warn, nil
}

// readRefs maps each commit to the refs that name it. Ref names may hold
// slashes (refs/pr/1 is refs/refs/pr/1 on disk).
func readRefs(rc repoCache) (map[string][]string, []string) {
	out := map[string][]string{}
	var warn []string
	dir := filepath.Join(rc.dir, "refs")
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return nil // a missing refs/ is fine; a symlink there is not followed
		}
		b, err := readAtMost(p, 128) // a commit hash: anything longer is not one
		if err != nil || !IsCommit(strings.TrimSpace(string(b))) {
			warn = append(warn, fmt.Sprintf("%s: not a commit hash; ignored", p))
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		c := strings.TrimSpace(string(b))
		out[c] = append(out[c], filepath.ToSlash(rel))
		return nil
	})
	for _, v := range out {
		sort.Strings(v)
	}
	return out, warn
}

// scanRevision sizes snapshots/<commit>: each file is a relative symlink to
// ../../blobs/<etag> (or a real file, in a cache written without symlinks).
// Links are read, never followed: a target outside the repository's blobs/
// is reported and not counted, a dangling one is not counted.
func scanRevision(rc repoCache, commit string) (CachedRevision, []string) {
	dir := rc.snapshotDir(commit)
	rev := CachedRevision{Commit: commit, Path: dir, blobs: map[string]int64{}}
	if fi, err := os.Stat(dir); err == nil {
		rev.Modified = fi.ModTime()
	}
	var warn []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		target := p
		if d.Type()&fs.ModeSymlink != 0 {
			b, ok := rc.blobOfLink(p)
			if !ok {
				warn = append(warn, fmt.Sprintf("%s: a symlink that does not lead into %s; not counted", p, filepath.Join(rc.dir, "blobs")))
				return nil
			}
			target = b
		} else if !d.Type().IsRegular() {
			return nil
		}
		fi, err := os.Lstat(target)
		if err != nil || !fi.Mode().IsRegular() {
			return nil // dangling: the file is not cached
		}
		rev.Files++
		if _, seen := rev.blobs[target]; !seen {
			rev.blobs[target] = fi.Size()
			rev.Size += fi.Size()
		}
		return nil
	})
	return rev, warn
}

// blobOfLink is the blob a snapshot symlink points at, when its target,
// taken as text relative to the link, is a file directly in blobs/.
func (r repoCache) blobOfLink(link string) (string, bool) {
	t, err := os.Readlink(link)
	if err != nil {
		return "", false
	}
	if !filepath.IsAbs(t) {
		t = filepath.Join(filepath.Dir(link), t)
	}
	t = filepath.Clean(t)
	blobs := filepath.Join(r.dir, "blobs")
	if filepath.Dir(t) != blobs || !etagRe.MatchString(filepath.Base(t)) {
		return "", false
	}
	return t, true
}

// unreferenced sums the files in blobs/ that no snapshot links to.
func unreferenced(rc repoCache, used map[string]int64) int64 {
	ents, _ := os.ReadDir(filepath.Join(rc.dir, "blobs"))
	var n int64
	for _, e := range ents {
		p := filepath.Join(rc.dir, "blobs", e.Name())
		if _, ok := used[p]; ok || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// readAtMost reads a small file, failing when it holds more than n bytes.
func readAtMost(p string, n int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, n+1))
	if err == nil && int64(len(b)) > n {
		err = fmt.Errorf("%s: more than %d bytes", p, n)
	}
	return b, err
}
