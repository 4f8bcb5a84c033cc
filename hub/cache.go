package hub

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/clip"
)

// repoCache is one repository's folder in the huggingface_hub cache:
//
//	models--ORG--NAME/
//	  blobs/<etag>                      file contents, named by ETag (sha256 for LFS, git sha1 otherwise)
//	  blobs/<etag>.incomplete           a download in progress (resumable)
//	  refs/<revision>                   the commit a branch or tag resolved to (40 hex, no newline)
//	  snapshots/<commit>/<path>         relative symlink to ../../blobs/<etag>
//	  .no_exist/<commit>/<path>         empty marker: the file is known not to exist
//
// and the lock files huggingface_hub uses, under CACHE/.locks/models--ORG--NAME/<etag>.lock.
type repoCache struct {
	root   string // the cache directory (HF_HUB_CACHE)
	folder string // models--ORG--NAME
	dir    string // root/folder
}

var (
	repoIDRe = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_.\-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}$`) // the Hub's names are at most 96 characters
	commitRe = regexp.MustCompile(`^[0-9a-f]{40}$`)
	etagRe   = regexp.MustCompile(`^[A-Za-z0-9_\-]+$`)
	sha256Re = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// checkRepoID validates a model id as huggingface_hub does (ORG/NAME or NAME,
// no "--" or "..", which would break the cache folder name).
func checkRepoID(repo string) error {
	if !repoIDRe.MatchString(repo) || strings.Contains(repo, "--") || strings.Contains(repo, "..") ||
		strings.HasSuffix(repo, ".git") {
		return fmt.Errorf("%s is not a Hub model id: write it as ORG/NAME (letters, digits, '-', '_', '.'), e.g. Qwen/Qwen2.5-0.5B", clip.Quote(repo))
	}
	return nil
}

// IsCommit reports whether rev is a full commit hash.
func IsCommit(rev string) bool { return commitRe.MatchString(rev) }

// RepoFolderName is the cache folder of a model repository.
func RepoFolderName(repo string) string {
	return "models--" + strings.ReplaceAll(repo, "/", "--")
}

func newRepoCache(root, repo string) repoCache {
	f := RepoFolderName(repo)
	return repoCache{root: root, folder: f, dir: filepath.Join(root, f)}
}

func (r repoCache) blob(etag string) string { return filepath.Join(r.dir, "blobs", etag) }
func (r repoCache) incomplete(etag string) string {
	return filepath.Join(r.dir, "blobs", etag+".incomplete")
}
func (r repoCache) snapshotDir(commit string) string {
	return filepath.Join(r.dir, "snapshots", commit)
}
func (r repoCache) pointer(commit, file string) string {
	return filepath.Join(r.snapshotDir(commit), filepath.FromSlash(file))
}
func (r repoCache) noExist(commit, file string) string {
	return filepath.Join(r.dir, ".no_exist", commit, filepath.FromSlash(file))
}
func (r repoCache) ref(rev string) string {
	return filepath.Join(r.dir, "refs", filepath.FromSlash(rev))
}
func (r repoCache) lock(etag string) string {
	return filepath.Join(r.root, ".locks", r.folder, etag+".lock")
}

// checkRepoPath rejects sibling names that would escape the snapshot.
func checkRepoPath(name string) error {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") ||
		!filepath.IsLocal(filepath.FromSlash(name)) || path.Clean(name) != name {
		return fmt.Errorf("unsafe file name %q in the repository listing", name)
	}
	return nil
}

func checkEtag(etag string) error {
	if !etagRe.MatchString(etag) {
		return fmt.Errorf("unusable ETag %q from the Hub", etag)
	}
	return nil
}

// readRef returns the commit cached for rev, "" when none.
func (r repoCache) readRef(rev string) (string, error) {
	b, err := os.ReadFile(r.ref(rev))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	c := strings.TrimSpace(string(b))
	if !IsCommit(c) {
		return "", fmt.Errorf("%s holds %q, not a commit hash: delete it and pull again online", r.ref(rev), c)
	}
	return c, nil
}

// writeRef records that rev points at commit, touching the file only when it changes.
func (r repoCache) writeRef(rev, commit string) error {
	if rev == commit {
		return nil
	}
	if cur, err := r.readRef(rev); err == nil && cur == commit {
		return nil
	}
	p := r.ref(rev)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return diskErr(err, p)
	}
	return diskErr(atomicfile.WriteFile(p, []byte(commit), 0o644), p)
}

// link points snapshots/<commit>/<file> at blobs/<etag> with a relative
// symlink, replacing whatever was there in one rename.
func (r repoCache) link(commit, file, etag string) error {
	ptr := r.pointer(commit, file)
	dir := filepath.Dir(ptr)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return diskErr(err, ptr)
	}
	rel, err := filepath.Rel(dir, r.blob(etag))
	if err != nil {
		return err
	}
	if cur, err := os.Readlink(ptr); err == nil && cur == rel {
		return nil
	}
	tmp := ptr + ".tmp-link"
	os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err != nil {
		return diskErr(err, ptr)
	}
	if err := os.Rename(tmp, ptr); err != nil {
		os.Remove(tmp)
		return diskErr(err, ptr)
	}
	return nil
}

// markMissing writes the .no_exist marker huggingface_hub uses to remember
// that a file is absent at a commit.
func (r repoCache) markMissing(commit, file string) error {
	p := r.noExist(commit, file)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return diskErr(err, p)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return diskErr(err, p)
	}
	return f.Close()
}

func (r repoCache) isMarkedMissing(commit, file string) bool {
	_, err := os.Stat(r.noExist(commit, file))
	return err == nil
}

// blobSize returns the size of a complete blob, or -1 when absent.
func blobSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return -1
	}
	return fi.Size()
}

// cachedFile is one file found in a snapshot directory.
type cachedFile struct {
	path string // slash-separated, relative to the snapshot
	etag string // from the symlink target, "" when the snapshot holds a real file
	size int64
}

// listSnapshot walks snapshots/<commit>, the way a cache written by
// huggingface_hub (symlinks) or a symlink-less tool (real files) looks.
func (r repoCache) listSnapshot(commit string) ([]cachedFile, error) {
	root := r.snapshotDir(commit)
	var out []cachedFile
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Stat(p) // follows the symlink: a dangling one is not cached
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		cf := cachedFile{path: filepath.ToSlash(rel), size: fi.Size()}
		if t, err := os.Readlink(p); err == nil {
			cf.etag = filepath.Base(t)
		}
		out = append(out, cf)
		return nil
	})
	return out, err
}

// ParseRef splits "ORG/NAME[@REVISION]" as edgectl's commands accept it;
// the revision is "" when absent (Snapshot then uses main).
func ParseRef(ref string) (repo, revision string, err error) {
	repo, revision, hasAt := strings.Cut(ref, "@")
	if strings.Contains(ref, "://") || (hasAt && revision == "") {
		return "", "", fmt.Errorf("%s: give a Hub model as ORG/NAME[@REVISION], e.g. Qwen/Qwen2.5-0.5B@main", clip.Quote(ref))
	}
	if err := checkRepoID(repo); err != nil {
		return "", "", err
	}
	return repo, revision, nil
}
