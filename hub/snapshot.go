package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/edgectl/edgectl/internal/clip"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/pathguard"
	"github.com/edgectl/edgectl/internal/progress"
)

// SnapshotOptions selects files and says where they go.
type SnapshotOptions struct {
	Include []string // fnmatch globs; none means every file
	Exclude []string // fnmatch globs
	Jobs    int      // files downloaded at once (default 4)
	// LocalDir, when set, also materializes the files as real files there
	// (not symlinks), with huggingface_hub's .cache/huggingface metadata.
	LocalDir string
	// OnEvent hears progress; it is called from several goroutines.
	OnEvent progress.Func
}

// Snapshot is a revision of a repository, present on disk.
type Snapshot struct {
	Repo     string       `json:"repo"`
	Revision string       `json:"revision"`
	Commit   string       `json:"commit"`
	Dir      string       `json:"dir"`                 // snapshots/<commit>, or LocalDir when given
	CacheDir string       `json:"cache_dir,omitempty"` // snapshots/<commit> in the cache
	Files    []FileResult `json:"files"`
	// Missing lists literal --include names the revision does not have;
	// .no_exist markers record them in the cache.
	Missing []string `json:"missing,omitempty"`
	Offline bool     `json:"offline,omitempty"` // answered from the cache without the network
}

// Downloaded is the number of bytes received over the network.
func (s *Snapshot) Downloaded() (n int64) {
	for _, f := range s.Files {
		n += f.Downloaded
	}
	return n
}

// Snapshot makes the selected files of repo at revision ("" = main) present
// in the cache and returns where they are. Files already cached are not
// downloaded again; interrupted downloads resume.
func (c *Client) Snapshot(ctx context.Context, repo, revision string, opts SnapshotOptions) (*Snapshot, error) {
	if revision == "" {
		revision = defaultRevision
	}
	if err := checkRepoID(repo); err != nil {
		return nil, err
	}
	if strings.Contains(revision, "..") || strings.HasPrefix(revision, "/") {
		return nil, fmt.Errorf("revision %s is not a branch, tag or commit", clip.Quote(revision))
	}
	include, err := compilePatterns(opts.Include)
	if err != nil {
		return nil, err
	}
	exclude, err := compilePatterns(opts.Exclude)
	if err != nil {
		return nil, err
	}
	if err := guardLocalDir(opts.LocalDir, c.cfg.CacheDir); err != nil {
		return nil, err
	}
	emit := opts.OnEvent
	if emit == nil {
		emit = func(progress.Event) {}
	}
	ctx = withRetryEvents(ctx, repo, emit) // the listing's retries are heard too
	rc := newRepoCache(c.cfg.CacheDir, repo)

	var snap *Snapshot
	if c.cfg.Offline {
		snap, err = c.fromCache(rc, repo, revision, include, exclude, "HF_HUB_OFFLINE is set")
	} else {
		snap, err = c.online(ctx, rc, repo, revision, include, exclude, opts, emit)
	}
	if err != nil {
		return nil, err
	}
	if opts.LocalDir != "" {
		dir, err := filepath.Abs(opts.LocalDir)
		if err != nil {
			return nil, err
		}
		if err := materialize(ctx, snap, dir); err != nil {
			return nil, err
		}
		snap.Dir = dir
	}
	return snap, nil
}

// online resolves the revision with the Hub and downloads what is missing.
func (c *Client) online(ctx context.Context, rc repoCache, repo, revision string, include, exclude []pattern, opts SnapshotOptions, emit progress.Func) (*Snapshot, error) {
	info, err := c.RepoInfo(ctx, repo, revision)
	if k := errkind.Of(err); k == errkind.Network || k == errkind.Busy {
		// As huggingface_hub does: when the Hub cannot say what the revision
		// is, a cached snapshot of it still serves. (Only here: a failure
		// during the downloads must not pass off a partial snapshot.)
		if cached, cerr := c.fromCache(rc, repo, revision, include, exclude, "the Hub is unreachable"); cerr == nil {
			emit(progress.Event{Event: progress.Warning, Repo: repo, Revision: revision, Message: "using the cached snapshot: " + err.Error()})
			return cached, nil
		}
	}
	if err != nil {
		return nil, err
	}
	if !IsCommit(info.SHA) {
		return nil, fmt.Errorf("%s@%s: the Hub answered commit %q, not a 40-hex sha: is HF_ENDPOINT a Hugging Face Hub?", repo, revision, info.SHA)
	}
	commit := info.SHA
	if err := os.MkdirAll(rc.snapshotDir(commit), 0o755); err != nil {
		return nil, diskErr(err, rc.snapshotDir(commit))
	}
	if err := rc.writeRef(revision, commit); err != nil {
		return nil, err
	}

	siblings := info.Siblings
	if len(siblings) == 0 || len(siblings) > largeRepoSiblings {
		// The Hub may cut the siblings of large repos short; the tree API is
		// complete (huggingface_hub switches the same way).
		tree, err := c.listTree(ctx, repo, commit)
		switch {
		case err == nil:
			siblings = tree
		case !errors.Is(err, errkind.NotFound): // a mirror without the tree API keeps the siblings
			return nil, err
		}
	}
	bySpec := map[string]fileSpec{}
	var names []string
	for _, s := range siblings {
		if err := checkRepoPath(s.RFilename); err != nil {
			return nil, fmt.Errorf("%s@%s: %w", repo, revision, err)
		}
		fs := fileSpec{path: s.RFilename, size: -1}
		if s.Size != nil {
			fs.size = *s.Size
		}
		if s.LFS != nil {
			fs.etag, fs.sha256, fs.size = s.LFS.SHA256, s.LFS.SHA256, s.LFS.Size
		} else {
			fs.etag = s.BlobID
		}
		bySpec[s.RFilename] = fs
		names = append(names, s.RFilename)
	}
	snap := &Snapshot{Repo: repo, Revision: revision, Commit: commit, Dir: rc.snapshotDir(commit), CacheDir: rc.snapshotDir(commit)}
	for _, p := range include {
		if _, ok := bySpec[p.src]; p.literal() && !ok {
			if err := rc.markMissing(commit, p.src); err != nil {
				return nil, err
			}
			snap.Missing = append(snap.Missing, p.src)
		}
	}
	selected := filter(names, include, exclude)
	if len(selected) == 0 && len(names) > 0 && (len(include) > 0 || len(exclude) > 0) {
		return nil, errkind.Errorf(errkind.NotFound, "no file of %s@%s matches %s: %d files exist (see %s/%s/tree/%s)",
			repo, revision, describePatterns(include, exclude), len(names), c.cfg.Endpoint, repo, url.PathEscape(revision))
	}

	var total int64
	specs := make([]fileSpec, len(selected))
	for i, n := range selected {
		specs[i] = bySpec[n]
		total += max(specs[i].size, 0)
	}
	emit(progress.Event{Event: progress.Start, Repo: repo, Revision: revision, Commit: commit, Files: len(specs), Total: total})

	s := &session{c: c, rc: rc, repo: repo, commit: commit, emit: emit}
	results, err := s.fetchAll(ctx, specs, opts.Jobs)
	if err != nil {
		return nil, err
	}
	snap.Files = results
	return snap, nil
}

// fetchAll runs up to jobs downloads at once, largest first so one big file
// does not start last; the first failure cancels the rest.
func (s *session) fetchAll(ctx context.Context, specs []fileSpec, jobs int) ([]FileResult, error) {
	if jobs <= 0 {
		jobs = 4
	}
	order := make([]int, len(specs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return specs[order[a]].size > specs[order[b]].size })

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]FileResult, len(specs))
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		next     = make(chan int)
	)
	for range min(jobs, max(len(specs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r, err := s.fetch(ctx, specs[i])
				results[i] = r
				if err != nil {
					mu.Lock()
					if firstErr == nil || (errors.Is(firstErr, context.Canceled) && !errors.Is(err, context.Canceled)) {
						firstErr = err
					}
					mu.Unlock()
					cancel()
				}
			}
		}()
	}
feed:
	for _, i := range order {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return results, nil
}

// RepoInfo fetches a revision's commit and file listing (with sizes, blob ids
// and LFS sha256) from the Hub.
func (c *Client) RepoInfo(ctx context.Context, repo, revision string) (*RepoInfo, error) {
	t := target{repo: repo, revision: revision}
	u := c.cfg.Endpoint + "/api/models/" + repo + "/revision/" + url.PathEscape(revision) + "?blobs=true"
	var info RepoInfo
	err := c.withRetry(ctx, t.String(), nil, func() error {
		// The listing is small: a try that takes longer than the stall
		// timeout is hung, and is retried.
		tctx, cancel := context.WithTimeout(ctx, c.stallTimeout())
		defer cancel()
		resp, err := c.do(tctx, http.MethodGet, u, nil, true)
		if err != nil {
			if ctx.Err() == nil && tctx.Err() != nil {
				return &transient{err: fmt.Errorf("no answer from %s within %v", c.cfg.Endpoint, c.stallTimeout())}
			}
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return c.statusError(resp, t)
		}
		info = RepoInfo{}
		if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &transient{err: fmt.Errorf("reading the file list of %s: %w", t, err)}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &info, nil
}

// fromCache answers from the cache alone: the revision's commit from refs/
// (or the revision itself when it is a commit), the files from its snapshot.
func (c *Client) fromCache(rc repoCache, repo, revision string, include, exclude []pattern, why string) (*Snapshot, error) {
	commit := revision
	if !IsCommit(revision) {
		var err error
		commit, err = rc.readRef(revision)
		if err != nil {
			return nil, err
		}
	}
	notCached := func(what string) error {
		return errkind.Errorf(errkind.Offline, "%s and %s is not in the cache at %s: pull it once with network access (or unset HF_HUB_OFFLINE)",
			why, what, c.cfg.CacheDir)
	}
	if commit == "" {
		return nil, notCached(repo + "@" + revision)
	}
	if _, err := os.Stat(rc.snapshotDir(commit)); err != nil {
		return nil, notCached(repo + "@" + revision)
	}
	files, err := rc.listSnapshot(commit)
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{Repo: repo, Revision: revision, Commit: commit, Dir: rc.snapshotDir(commit), CacheDir: rc.snapshotDir(commit), Offline: true}
	have := map[string]cachedFile{}
	var names []string
	for _, f := range files {
		have[f.path] = f
		names = append(names, f.path)
	}
	for _, p := range include {
		if _, ok := have[p.src]; p.literal() && !ok {
			if !rc.isMarkedMissing(commit, p.src) {
				return nil, notCached(repo + "@" + revision + ": " + p.src)
			}
			snap.Missing = append(snap.Missing, p.src)
		}
	}
	selected := filter(names, include, exclude)
	if len(selected) == 0 && len(snap.Missing) == 0 {
		return nil, notCached(fmt.Sprintf("no file of %s@%s matching %s", repo, revision, describePatterns(include, exclude)))
	}
	for _, n := range selected {
		f := have[n]
		blob := filepath.Join(rc.snapshotDir(commit), filepath.FromSlash(n))
		if f.etag != "" {
			blob = rc.blob(f.etag)
		}
		r := FileResult{Path: n, Size: f.size, Etag: f.etag, Blob: blob, Cached: true}
		if sha256Re.MatchString(f.etag) {
			r.SHA256 = f.etag
		}
		snap.Files = append(snap.Files, r)
	}
	return snap, nil
}

func describePatterns(include, exclude []pattern) string {
	var parts []string
	for _, p := range include {
		parts = append(parts, "--include "+p.src)
	}
	for _, p := range exclude {
		parts = append(parts, "--exclude "+p.src)
	}
	if len(parts) == 0 {
		return "the selection"
	}
	return strings.Join(parts, " ")
}

// guardLocalDir refuses a --local-dir that is, or lies inside, the Hub
// cache: its copies would land among the blobs and snapshot links other
// tools read. (A local dir that contains the cache, such as $HOME, is
// allowed: nothing in the cache is replaced.)
func guardLocalDir(local, cache string) error {
	if local == "" {
		return nil
	}
	err := pathguard.Dir(local, cache)
	var pe *pathguard.Error
	if errors.As(err, &pe) && pe.Reason != "it contains the input" {
		pe.Flag = "--local-dir"
		pe.Input = cache + " (the Hub cache)"
		return err
	}
	return nil
}
