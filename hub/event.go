package hub

// Event reports what a Snapshot is doing. The command layer draws progress
// bars from it or prints it as a JSON line (--json), so its JSON form is
// part of edgectl's output contract.
type Event struct {
	Event    string `json:"event"` // start, file_start, progress, retry, file_done, warning
	Repo     string `json:"repo,omitempty"`
	Revision string `json:"revision,omitempty"`
	Commit   string `json:"commit,omitempty"`
	File     string `json:"file,omitempty"`
	Bytes    int64  `json:"bytes,omitempty"` // file bytes on disk so far
	Total    int64  `json:"total,omitempty"` // file size (start: size of all selected files)
	Files    int    `json:"files,omitempty"` // start: number of selected files
	Cached   bool   `json:"cached,omitempty"`
	Resumed  int64  `json:"resumed_from,omitempty"` // bytes found in the .incomplete blob
	Attempt  int    `json:"attempt,omitempty"`
	DelayMS  int64  `json:"delay_ms,omitempty"`
	Message  string `json:"message,omitempty"`
}

// Event names.
const (
	EventStart     = "start"
	EventFileStart = "file_start"
	EventProgress  = "progress"
	EventRetry     = "retry"
	EventFileDone  = "file_done"
	EventWarning   = "warning"
)
