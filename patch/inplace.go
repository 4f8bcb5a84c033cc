package patch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/edgectl/edgectl/format/safetensors"
	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/failpoint"
)

// An --in-place patch replaces several files (shards, their index, two
// configs) that must change together. It runs as a small transaction so a
// kill -9 or power cut at any instant leaves a directory the next run
// finishes:
//
//  1. prepare: the journal is created (exclusively: it is also the lock)
//     saying "prepare" and who owns it;
//  2. every new file is written beside its original as .NAME.edgectl-staged
//     and fsynced;
//  3. the journal is replaced, atomically, by one saying "switch" with the
//     list of files — the commit point;
//  4. for each file, index last: NAME.orig is made a hard link of the
//     original (the original stays in place, so the model keeps loading),
//     then the staged file is renamed over NAME;
//  5. the journal is removed.
//
// Resume, run first by the next in-place patch, rolls a "prepare" journal
// back (deletes the staged files: nothing was switched) and a "switch"
// journal forward (a staged file still present is switched, one already
// renamed is done). Both are idempotent, so a kill during Resume is safe
// too. Staged files are not temporaries: atomicfile.CleanStale never
// removes them, only Resume does.

// JournalName is the journal of an in-place patch, in the model directory.
const JournalName = ".edgectl-patch.journal"

const stagedSuffix = ".edgectl-staged"

const (
	statePrepare = "prepare"
	stateSwitch  = "switch"
)

type journal struct {
	Version int            `json:"version"`
	PID     int            `json:"pid"`
	State   string         `json:"state"`
	Files   []journalEntry `json:"files,omitempty"`
}

type journalEntry struct {
	Name   string `json:"name"`   // the file replaced, relative to the directory
	Staged string `json:"staged"` // its new content until the switch
	Backup bool   `json:"backup"` // this run creates NAME.orig (none existed)
}

// held lists the directories this process is patching in place, so that a
// journal with our own PID (a container's PID 1 run again) is told apart
// from one we hold.
var held sync.Map

func stagedName(name string) string {
	return filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+stagedSuffix)
}

// Resumed says what Resume did.
type Resumed struct {
	Journal string   `json:"journal"`
	Action  string   `json:"action"` // "rolled forward" or "rolled back"
	Files   []string `json:"files,omitempty"`
}

// BusyError is a directory another live edgectl is patching in place.
type BusyError struct {
	Dir, Journal string
	PID          int
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("%s: another edgectl (pid %d) is patching it in place (%s); wait for it to finish", e.Dir, e.PID, e.Journal)
}

// readJournal returns the journal of dir (nil when there is none), or a
// BusyError when a live process (or a transaction of ours) owns it. A
// journal that does not parse (it never should: it appears whole) is
// treated as a prepare, which only deletes staged files.
func readJournal(dir string) (*journal, error) {
	path := filepath.Join(dir, JournalName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	j := &journal{}
	if json.Unmarshal(b, j) != nil || (j.State != statePrepare && j.State != stateSwitch) {
		return &journal{State: statePrepare}, nil
	}
	_, ours := held.Load(absDir(dir))
	if ours || (j.PID > 0 && j.PID != os.Getpid() && atomicfile.OwnerAlive(j.PID)) {
		return j, &BusyError{Dir: dir, Journal: path, PID: j.PID}
	}
	return j, nil
}

// CheckPending fails when dir holds an in-place patch that is running or
// was interrupted: reading it now would see a half-switched checkpoint.
func CheckPending(dir string) error {
	j, err := readJournal(dir)
	if err != nil || j == nil {
		return err
	}
	return fmt.Errorf("%s: an `edgectl patch --in-place` run was interrupted (%s is left): run that patch command again with --in-place to finish it", dir, filepath.Join(dir, JournalName))
}

// Resume finishes or undoes an interrupted in-place patch of dir. It
// returns nil when there was none.
func Resume(dir string) (*Resumed, error) {
	j, err := readJournal(dir)
	if err != nil || j == nil {
		return nil, err
	}
	r := &Resumed{Journal: filepath.Join(dir, JournalName)}
	if j.State == stateSwitch {
		r.Action = "rolled forward"
		if err := rollForward(dir, j.Files); err != nil {
			return nil, err
		}
		for _, e := range j.Files {
			r.Files = append(r.Files, e.Name)
		}
	} else {
		r.Action = "rolled back"
		if r.Files, err = removeStaged(dir); err != nil {
			return nil, err
		}
	}
	if err := os.Remove(r.Journal); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		return nil, err
	}
	return r, nil
}

// rollForward switches every entry still staged. It is idempotent: an
// entry whose staged file is gone was switched already.
func rollForward(dir string, files []journalEntry) error {
	for _, e := range files {
		target := filepath.Join(dir, e.Name)
		staged := filepath.Join(dir, e.Staged)
		if _, err := os.Lstat(staged); errors.Is(err, fs.ErrNotExist) {
			if _, err := os.Lstat(target); err != nil {
				return fmt.Errorf("%s: cannot finish the interrupted in-place patch: both %s and its new version %s are gone; restore it from %s.orig or the original download", dir, e.Name, e.Staged, e.Name)
			}
			continue
		}
		if e.Backup {
			if err := keepOriginal(target); err != nil {
				return err
			}
			failpoint.Hit("patch.backup")
		}
		if err := os.Rename(staged, target); err != nil {
			return fmt.Errorf("switch %s: %w", target, err)
		}
		failpoint.Hit("patch.rename")
	}
	dirs := map[string]bool{}
	for _, e := range files {
		dirs[filepath.Dir(filepath.Join(dir, e.Name))] = true
	}
	for d := range dirs {
		if err := atomicfile.SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// keepOriginal makes target.orig the original, unless it exists already.
// A hard link keeps target in place meanwhile; where links are impossible
// (FAT, some network filesystems) the original is renamed instead and the
// journal covers the instant target is missing.
func keepOriginal(target string) error {
	backup := target + ".orig"
	if _, err := os.Lstat(backup); err == nil {
		return nil
	}
	if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) {
		return nil // nothing to keep (a rename fallback already moved it)
	}
	if err := os.Link(target, backup); err == nil {
		return nil
	}
	if err := os.Rename(target, backup); err != nil {
		return fmt.Errorf("keep backup %s: %w", backup, err)
	}
	return nil
}

// removeStaged deletes every staged file in dir (a rolled-back prepare).
func removeStaged(dir string) ([]string, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range es {
		n := e.Name()
		if strings.HasPrefix(n, ".") && strings.HasSuffix(n, stagedSuffix) {
			if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return removed, err
			}
			removed = append(removed, strings.TrimSuffix(n[1:], stagedSuffix))
		}
	}
	return removed, nil
}

// inPlace is a running in-place transaction on dir.
type inPlace struct {
	dir       string
	files     []journalEntry
	switching bool // the commit point passed: never roll back from here
	done      bool
}

// beginInPlace finishes any interrupted patch, then takes the directory:
// the journal is created exclusively, so two edgectl processes never patch
// one directory at once.
func beginInPlace(dir string) (*inPlace, error) {
	if _, err := Resume(dir); err != nil {
		return nil, err
	}
	if _, err := atomicfile.CleanStale(dir, JournalName); err != nil {
		return nil, err
	}
	b, _ := json.Marshal(journal{Version: 1, PID: os.Getpid(), State: statePrepare})
	path := filepath.Join(dir, JournalName)
	if err := createWhole(path, append(b, '\n')); err != nil {
		if errors.Is(err, fs.ErrExist) {
			if _, err = readJournal(dir); err == nil {
				err = fmt.Errorf("%s: another edgectl began patching it in place (%s); run again when it is done", dir, path)
			}
		}
		return nil, err
	}
	held.Store(absDir(dir), true)
	failpoint.Hit("patch.lock")
	return &inPlace{dir: dir}, nil
}

// createWhole creates path with data, failing with fs.ErrExist when it
// exists: the data is written to a temporary, fsynced, and hard-linked to
// its name, so the file appears whole or not at all. Where hard links are
// impossible it falls back to an exclusive create.
func createWhole(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, atomicfile.TempPattern(filepath.Base(path)))
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(data)
	if err := errors.Join(werr, tmp.Sync(), tmp.Close()); err != nil {
		return err
	}
	err = os.Link(tmp.Name(), path)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		var f *os.File
		if f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
			_, werr := f.Write(data)
			if err = errors.Join(werr, f.Sync(), f.Close()); err != nil {
				os.Remove(path)
			}
		}
	}
	if err != nil {
		return err
	}
	return atomicfile.SyncDir(dir)
}

// stage writes the new content of name beside it, fsynced.
func (t *inPlace) stage(name string, fill func(*os.File) error) error {
	if slices.ContainsFunc(t.files, func(e journalEntry) bool { return e.Name == name }) {
		return fmt.Errorf("%s written twice in one patch", name)
	}
	staged := stagedName(name)
	f, err := os.OpenFile(filepath.Join(t.dir, staged), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	err = fill(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	t.files = append(t.files, journalEntry{Name: name, Staged: staged})
	failpoint.Hit("patch.stage")
	return nil
}

// commit is the switch: the journal records the plan (the commit point),
// the files are switched with the index last, and the journal goes.
func (t *inPlace) commit() error {
	if t.done {
		return errors.New("patch: in-place output already committed or aborted")
	}
	if err := t.writeSwitchJournal(); err != nil {
		return err
	}
	failpoint.Hit("patch.journal")
	if err := rollForward(t.dir, t.files); err != nil {
		return fmt.Errorf("%w (the next `edgectl patch ... --in-place` finishes the switch)", err)
	}
	failpoint.Hit("patch.done")
	t.done = true
	held.Delete(absDir(t.dir))
	if err := os.Remove(filepath.Join(t.dir, JournalName)); err != nil {
		return err
	}
	return atomicfile.SyncDir(t.dir)
}

// writeSwitchJournal orders the files (the index last: it names the
// shards' tensors, so it never lists one its shard does not hold yet),
// notes which originals need a .orig, and replaces the prepare journal.
func (t *inPlace) writeSwitchJournal() error {
	slices.SortStableFunc(t.files, func(a, b journalEntry) int {
		return boolInt(filepath.Base(a.Name) == safetensors.IndexName) - boolInt(filepath.Base(b.Name) == safetensors.IndexName)
	})
	for i, e := range t.files {
		target := filepath.Join(t.dir, e.Name)
		_, errT := os.Lstat(target)
		_, errB := os.Lstat(target + ".orig")
		t.files[i].Backup = errT == nil && errors.Is(errB, fs.ErrNotExist)
	}
	b, err := json.MarshalIndent(journal{Version: 1, PID: os.Getpid(), State: stateSwitch, Files: t.files}, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(t.dir, JournalName), append(b, '\n'), 0o644); err != nil {
		return err
	}
	t.switching = true
	return nil
}

// abort undoes a transaction that has not reached its commit point. Past
// it, the journal stays for the next run to roll forward.
func (t *inPlace) abort() {
	if t.done {
		return
	}
	t.done = true
	held.Delete(absDir(t.dir))
	if t.switching {
		return
	}
	for _, e := range t.files {
		os.Remove(filepath.Join(t.dir, e.Staged))
	}
	os.Remove(filepath.Join(t.dir, JournalName))
	atomicfile.SyncDir(t.dir)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func absDir(dir string) string {
	if a, err := filepath.Abs(dir); err == nil {
		return a
	}
	return dir
}
