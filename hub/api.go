package hub

// Wire types of the Hub's model API, as `GET /api/models/{repo}/revision/{rev}?blobs=true`
// returns them. Only the fields edgectl reads are declared.

// RepoInfo is one revision of a model repository.
type RepoInfo struct {
	ID       string    `json:"id"`
	SHA      string    `json:"sha"` // the commit the revision resolves to
	Private  bool      `json:"private"`
	Gated    any       `json:"gated"` // false, "auto" or "manual"
	Siblings []Sibling `json:"siblings"`
}

// Sibling is one file of the revision. Size, BlobID and LFS are present
// only with ?blobs=true.
type Sibling struct {
	RFilename string   `json:"rfilename"`
	Size      *int64   `json:"size,omitempty"`
	BlobID    string   `json:"blobId,omitempty"` // git blob sha1: the ETag of a non-LFS file
	LFS       *LFSInfo `json:"lfs,omitempty"`
}

// LFSInfo describes a file stored in LFS; its sha256 is the file's ETag.
type LFSInfo struct {
	SHA256      string `json:"sha256"`
	Size        int64  `json:"size"`
	PointerSize int64  `json:"pointerSize"`
}

// Hub response headers that huggingface_hub reads on resolve.
const (
	headerRepoCommit  = "X-Repo-Commit"
	headerLinkedEtag  = "X-Linked-Etag"
	headerLinkedSize  = "X-Linked-Size"
	headerErrorCode   = "X-Error-Code"
	headerErrorMsg    = "X-Error-Message"
	headerRetryAfter  = "Retry-After"
	errRepoNotFound   = "RepoNotFound"
	errRevNotFound    = "RevisionNotFound"
	errEntryNotFound  = "EntryNotFound"
	errGatedRepo      = "GatedRepo"
	errDisabledRepo   = "DisabledRepo"
	maxRedirects      = 10
	defaultRevision   = "main"
	localDirMetaDir   = ".cache/huggingface"
	localDirMetaFiles = ".cache/huggingface/download"
)

// TreeEntry is one item of `GET /api/models/{repo}/tree/{rev}?recursive=true`,
// the paginated listing (Link: <…>; rel="next") that stays complete on
// repositories whose siblings list the Hub may truncate.
type TreeEntry struct {
	Type string `json:"type"` // "file" or "directory"
	Path string `json:"path"`
	OID  string `json:"oid"` // git blob sha1
	Size int64  `json:"size"`
	LFS  *struct {
		OID         string `json:"oid"` // sha256
		Size        int64  `json:"size"`
		PointerSize int64  `json:"pointerSize"`
	} `json:"lfs,omitempty"`
}

// largeRepoSiblings is huggingface_hub's LARGE_REPO_THRESHOLD: past this many
// siblings (or with none) the listing is fetched from the tree API instead.
const largeRepoSiblings = 1000
