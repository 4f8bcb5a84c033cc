// Package hubtest is a fake Hugging Face Hub for tests: a real HTTP server
// speaking the Hub's protocol (model API with ?blobs=true, resolve with
// redirects to a second "CDN" server, X-Repo-Commit/ETag/X-Linked-* headers,
// Range, X-Error-Code errors, gated and private repos) with faults to inject
// (429 with Retry-After, 5xx, connections cut mid-body, corrupt bytes,
// throttling). It shares no code with package hub, so it checks the client
// against an independent reading of the protocol.
package hubtest

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// File is one file of a repository.
type File struct {
	Path    string
	Content Content
	LFS     bool // stored in LFS: ETag is its sha256, served from the CDN
	// SHA256, when set, is announced instead of hashing Content: for files
	// declared larger than a test can hash (or should ever download).
	SHA256 string
	dig    *digests
}

// Repo is a model repository.
type Repo struct {
	ID      string
	Gated   bool // files need a token that was granted access (Server.Token)
	Private bool // everything needs Server.Token; anonymous callers get RepoNotFound
	refs    map[string]string
	trees   map[string][]*File
}

// Faults are injected on the requests that serve a file's bytes (the CDN
// for LFS files, the Hub for the others). Counters count down per request.
type Faults struct {
	RateLimit    int   // answer 429 with Retry-After this many times
	RetryAfter   int   // seconds sent in Retry-After
	ServerErrors int   // answer 503 this many times
	Cuts         int   // cut the connection mid-body this many times …
	CutAfter     int64 // … after this many body bytes
	Stalls       int   // go silent mid-body (connection left open) this many times …
	StallAfter   int64 // … after this many body bytes
	Corrupt      int   // serve bytes with one flipped this many times
	IgnoreRange  bool  // answer 200 with the whole file to ranged requests
	BytesPerSec  int64 // throttle the body
	// ExtraBytes keeps streaming this many bytes past the file's end, on
	// every request, without a Content-Length (chunked), as a broken or
	// hostile mirror would.
	ExtraBytes int64
	// ContentLength, when set, is announced instead of the true length on
	// every request (the body is what it would be otherwise).
	ContentLength int64
}

// Request is one request either server received.
type Request struct {
	Server string // "hub" or "cdn"
	Method string
	Path   string
	Range  string
	Auth   string
}

// Server is the fake Hub and its CDN.
type Server struct {
	Hub *httptest.Server
	CDN *httptest.Server
	// Token is the token that can read private and gated repos.
	Token string
	// NoBlobs ignores ?blobs=true, like an older mirror: clients must HEAD
	// each file for its ETag and size. Set it before use.
	NoBlobs bool
	// TruncateSiblings answers an empty siblings list, as the Hub's cache
	// sometimes does for large repos; the tree API stays complete.
	TruncateSiblings bool
	// TreePageSize is the page size of the tree API (default 1000).
	TreePageSize int

	mu      sync.Mutex
	repos   map[string]*Repo
	renamed map[string]string
	faults  map[string]*Faults // by file path
	log     []Request
	served  map[string]int64 // body bytes served per file path
	total   atomic.Int64
	active  atomic.Int64     // bodies being sent
	blobs   map[string]*File // by sha256, for the CDN
}

// New starts a fake Hub and CDN; Close stops both.
func New() *Server {
	s := &Server{
		repos: map[string]*Repo{}, renamed: map[string]string{}, faults: map[string]*Faults{},
		served: map[string]int64{}, blobs: map[string]*File{}, Token: "hf_granted",
	}
	s.Hub = httptest.NewServer(http.HandlerFunc(s.serveHub))
	s.CDN = httptest.NewServer(http.HandlerFunc(s.serveCDN))
	return s
}

// Close stops both servers.
func (s *Server) Close() {
	s.Hub.Close()
	s.CDN.Close()
}

// CDNURL is the signed URL the Hub redirects an LFS file with this sha256 to.
func (s *Server) CDNURL(sha256hex string) string {
	return s.CDN.URL + "/repos/" + sha256hex[:2] + "/" + sha256hex + "?X-Amz-Signature=" + sha256hex[:16] + "&response-content-disposition=attachment"
}

// URL is the Hub endpoint (HF_ENDPOINT).
func (s *Server) URL() string { return s.Hub.URL }

// AddRepo creates or updates a repository: files become a new commit that
// "main" points to. It returns the commit.
func (s *Server) AddRepo(id string, files ...*File) (*Repo, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[id]
	if r == nil {
		r = &Repo{ID: id, refs: map[string]string{}, trees: map[string][]*File{}}
		s.repos[id] = r
	}
	h := sha1.New()
	fmt.Fprintf(h, "%s %d", id, len(r.trees))
	for _, f := range files {
		f.dig = &digests{}
		if f.SHA256 != "" {
			f.dig.once.Do(func() { f.dig.sha256 = f.SHA256 })
		}
		fmt.Fprintf(h, "\x00%s", f.Path)
		if f.LFS {
			sum, _ := f.dig.get(f.Content)
			s.blobs[sum] = f
		}
	}
	commit := hex.EncodeToString(h.Sum(nil))
	r.trees[commit] = files
	r.refs["main"] = commit
	return r, commit
}

// Tag points a revision name (branch, tag, refs/pr/N) of repo at commit.
func (s *Server) Tag(repo, rev, commit string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos[repo].refs[rev] = commit
}

// SetGated and SetPrivate change a repo's access.
func (s *Server) SetGated(repo string, v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos[repo].Gated = v
}

func (s *Server) SetPrivate(repo string, v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos[repo].Private = v
}

// Rename makes old answer with relative redirects to new, as the Hub does
// for renamed repositories.
func (s *Server) Rename(old, new string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renamed[old] = new
}

// SetFaults installs faults for a file path (in every repo).
func (s *Server) SetFaults(path string, f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[path] = &f
}

// Served is the number of body bytes served for a file path.
func (s *Server) Served(path string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served[path]
}

// TotalServed is the number of file body bytes served.
func (s *Server) TotalServed() int64 { return s.total.Load() }

// Requests returns the request log.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// ResetLog clears the request log and byte counters, once no body is
// being sent (so a late handler cannot count into the new period).
func (s *Server) ResetLog() {
	s.WaitIdle()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = nil
	s.served = map[string]int64{}
	s.total.Store(0)
}

func (s *Server) record(server string, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, Request{Server: server, Method: r.Method, Path: r.URL.EscapedPath(), Range: r.Header.Get("Range"), Auth: r.Header.Get("Authorization")})
}

func hubError(w http.ResponseWriter, status int, code, msg string) {
	if code != "" {
		w.Header().Set("X-Error-Code", code)
	}
	w.Header().Set("X-Error-Message", msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func (s *Server) serveHub(w http.ResponseWriter, r *http.Request) {
	s.record("hub", r)
	p := r.URL.EscapedPath()
	switch {
	case strings.HasPrefix(p, "/api/models/") && strings.Contains(p, "/tree/"):
		s.serveTree(w, r, strings.TrimPrefix(p, "/api/models/"))
	case strings.HasPrefix(p, "/api/models/"):
		s.serveInfo(w, r, strings.TrimPrefix(p, "/api/models/"))
	case strings.HasPrefix(p, "/api/resolve-cache/models/"):
		s.serveResolveCache(w, r, strings.TrimPrefix(p, "/api/resolve-cache/models/"))
	case strings.Contains(p, "/resolve/"):
		s.serveResolve(w, r, p)
	default:
		hubError(w, http.StatusNotFound, "", "not found")
	}
}

// lookup finds repo id and resolves rev, answering the errors the Hub
// answers. ok=false means a response was written.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request, id, rev string) (repo *Repo, commit string, files []*File, ok bool) {
	s.mu.Lock()
	repo = s.repos[id]
	var access bool
	if repo != nil {
		access = !repo.Private || r.Header.Get("Authorization") == "Bearer "+s.Token
		commit = repo.refs[rev]
		if commit == "" && repo.trees[rev] != nil {
			commit = rev
		}
		files = repo.trees[commit]
	}
	s.mu.Unlock()
	if repo == nil || !access {
		// The Hub does not tell a private repo from a missing one; anonymous
		// callers get 401, authenticated ones 404.
		status := http.StatusNotFound
		if r.Header.Get("Authorization") == "" {
			status = http.StatusUnauthorized
		}
		hubError(w, status, "RepoNotFound", "Repository Not Found for url: "+r.URL.String())
		return nil, "", nil, false
	}
	if commit == "" {
		hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return nil, "", nil, false
	}
	return repo, commit, files, true
}

func (s *Server) renamedTo(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.renamed[id]
	return n, ok
}

// serveInfo answers GET /api/models/{repo}/revision/{rev}.
func (s *Server) serveInfo(w http.ResponseWriter, r *http.Request, p string) {
	i := strings.LastIndex(p, "/revision/")
	if i < 0 {
		hubError(w, http.StatusNotFound, "", "not found")
		return
	}
	id := p[:i]
	rev, err := url.PathUnescape(p[i+len("/revision/"):])
	if err != nil || strings.Contains(p[i+len("/revision/"):], "/") {
		hubError(w, http.StatusBadRequest, "", "bad revision")
		return
	}
	if n, ok := s.renamedTo(id); ok {
		http.Redirect(w, r, "/api/models/"+n+"/revision/"+url.PathEscape(rev)+"?"+r.URL.RawQuery, http.StatusTemporaryRedirect)
		return
	}
	repo, commit, files, ok := s.lookup(w, r, id, rev)
	if !ok {
		return
	}
	blobs := r.URL.Query().Get("blobs") == "true" && !s.NoBlobs
	var sibs []map[string]any
	for _, f := range files {
		sib := map[string]any{"rfilename": f.Path}
		if blobs {
			sum, git := f.dig.get(f.Content)
			if f.LFS {
				ptr := lfsPointer(sum, f.Content.Size())
				sib["blobId"] = GitBlobSHA1(ptr)
				sib["size"] = f.Content.Size()
				sib["lfs"] = map[string]any{"sha256": sum, "size": f.Content.Size(), "pointerSize": len(ptr)}
			} else {
				sib["blobId"] = git
				sib["size"] = f.Content.Size()
			}
		}
		sibs = append(sibs, sib)
	}
	sort.Slice(sibs, func(a, b int) bool { return sibs[a]["rfilename"].(string) < sibs[b]["rfilename"].(string) })
	if s.TruncateSiblings {
		sibs = []map[string]any{}
	}
	gated := any(false)
	if repo.Gated {
		gated = "manual"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": repo.ID, "modelId": repo.ID, "sha": commit, "private": repo.Private, "gated": gated,
		"siblings": sibs, "lastModified": time.Unix(1700000000, 0).UTC().Format(time.RFC3339),
	})
}

// serveTree answers GET /api/models/{repo}/tree/{rev}?recursive=true, one
// page at a time with a Link: rel="next" header (cursor = offset here).
func (s *Server) serveTree(w http.ResponseWriter, r *http.Request, p string) {
	i := strings.LastIndex(p, "/tree/")
	id := p[:i]
	rev, err := url.PathUnescape(p[i+len("/tree/"):])
	if err != nil || r.URL.Query().Get("recursive") != "true" {
		hubError(w, http.StatusBadRequest, "", "this fake serves recursive listings only")
		return
	}
	_, _, files, ok := s.lookup(w, r, id, rev)
	if !ok {
		return
	}
	// Directories appear as entries too.
	var entries []map[string]any
	dirs := map[string]bool{}
	for _, f := range files {
		for d := path.Dir(f.Path); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			entries = append(entries, map[string]any{"type": "directory", "path": d, "oid": strings.Repeat("0", 40), "size": 0})
		}
		sum, git := f.dig.get(f.Content)
		e := map[string]any{"type": "file", "path": f.Path, "size": f.Content.Size()}
		if f.LFS {
			ptr := lfsPointer(sum, f.Content.Size())
			e["oid"] = GitBlobSHA1(ptr)
			e["lfs"] = map[string]any{"oid": sum, "size": f.Content.Size(), "pointerSize": len(ptr)}
		} else {
			e["oid"] = git
		}
		entries = append(entries, e)
	}
	sort.Slice(entries, func(a, b int) bool { return entries[a]["path"].(string) < entries[b]["path"].(string) })
	size := s.TreePageSize
	if size <= 0 {
		size = 1000
	}
	start, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	start = min(max(start, 0), len(entries))
	end := min(start+size, len(entries))
	if end < len(entries) {
		next := s.Hub.URL + r.URL.EscapedPath() + "?recursive=true&cursor=" + strconv.Itoa(end)
		w.Header().Set("Link", "<"+next+">; rel=\"next\"")
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(entries[start:end])
}

func lfsPointer(sum string, size int64) []byte {
	return fmt.Appendf(nil, "version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n", sum, size)
}

// serveResolve answers HEAD/GET /{repo}/resolve/{rev}/{path}.
func (s *Server) serveResolve(w http.ResponseWriter, r *http.Request, p string) {
	i := strings.Index(p, "/resolve/")
	id := strings.TrimPrefix(p[:i], "/")
	escRev, escPath, _ := strings.Cut(p[i+len("/resolve/"):], "/")
	rev, err1 := url.PathUnescape(escRev)
	file, err2 := url.PathUnescape(escPath)
	if err1 != nil || err2 != nil || file == "" {
		hubError(w, http.StatusBadRequest, "", "bad path")
		return
	}
	if n, ok := s.renamedTo(id); ok {
		http.Redirect(w, r, "/"+n+"/resolve/"+escRev+"/"+escPath, http.StatusTemporaryRedirect) // relative
		return
	}
	repo, commit, files, ok := s.lookup(w, r, id, rev)
	if !ok {
		return
	}
	w.Header().Set("X-Repo-Commit", commit)
	if repo.Gated {
		switch auth := r.Header.Get("Authorization"); {
		case auth == "":
			hubError(w, http.StatusUnauthorized, "GatedRepo", "Access to model "+id+" is restricted. You must have access to it and be authenticated to access it. Please log in.")
			return
		case auth != "Bearer "+s.Token:
			hubError(w, http.StatusForbidden, "GatedRepo", "Access to model "+id+" is restricted and you are not in the authorized list. Visit https://huggingface.co/"+id+" to ask for access.")
			return
		}
	}
	f := findFile(files, file)
	if f == nil {
		hubError(w, http.StatusNotFound, "EntryNotFound", file+" does not exist on \""+rev+"\"")
		return
	}
	sum, git := f.dig.get(f.Content)
	if f.LFS {
		// The Hub answers for the pointer (ETag) and links the real file.
		w.Header().Set("ETag", `"`+GitBlobSHA1(lfsPointer(sum, f.Content.Size()))+`"`)
		w.Header().Set("X-Linked-Etag", `"`+sum+`"`)
		w.Header().Set("X-Linked-Size", strconv.FormatInt(f.Content.Size(), 10))
		loc := s.CDNURL(sum)
		w.Header().Set("Location", loc)
		w.WriteHeader(http.StatusFound)
		return
	}
	// Regular files take a relative hop through the resolve cache, as the Hub does.
	w.Header().Set("ETag", `"`+git+`"`)
	w.Header().Set("Location", "/api/resolve-cache/models/"+id+"/"+commit+"/"+escPath)
	w.WriteHeader(http.StatusTemporaryRedirect)
}

// serveResolveCache serves a regular file's bytes.
func (s *Server) serveResolveCache(w http.ResponseWriter, r *http.Request, p string) {
	parts := strings.SplitN(p, "/", 4) // org/name/commit/path (or name/commit/path)
	var id, commit, escPath string
	if len(parts) == 4 && len(parts[2]) == 40 {
		id, commit, escPath = parts[0]+"/"+parts[1], parts[2], parts[3]
	} else if len(parts) >= 3 {
		id, commit, escPath = parts[0], parts[1], strings.Join(parts[2:], "/")
	}
	file, _ := url.PathUnescape(escPath)
	_, commit, files, ok := s.lookup(w, r, id, commit)
	if !ok {
		return
	}
	f := findFile(files, file)
	if f == nil {
		hubError(w, http.StatusNotFound, "EntryNotFound", file+" does not exist")
		return
	}
	_, git := f.dig.get(f.Content)
	w.Header().Set("X-Repo-Commit", commit)
	w.Header().Set("ETag", `"`+git+`"`)
	s.serveBytes(w, r, f)
}

func (s *Server) serveCDN(w http.ResponseWriter, r *http.Request) {
	s.record("cdn", r)
	sum := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	if r.URL.Query().Get("X-Amz-Signature") == "" {
		http.Error(w, "<Error><Code>AccessDenied</Code></Error>", http.StatusForbidden)
		return
	}
	s.mu.Lock()
	f := s.blobs[sum]
	s.mu.Unlock()
	if f == nil {
		http.Error(w, "<Error><Code>NoSuchKey</Code></Error>", http.StatusNotFound)
		return
	}
	w.Header().Set("ETag", `"cdn-`+sum[:12]+`"`) // a CDN ETag is not the Hub's: clients must not use it
	s.serveBytes(w, r, f)
}

func findFile(files []*File, path string) *File {
	for _, f := range files {
		if f.Path == path {
			return f
		}
	}
	return nil
}
