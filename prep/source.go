package prep

import (
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/edgectl/edgectl/artifact"
	"github.com/edgectl/edgectl/hub"
	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/failpoint"
	"github.com/edgectl/edgectl/internal/progress"
)

// modelFiles are the files of a checkpoint the pipeline carries along:
// weights, configs, tokenizers, chat templates. READMEs, images and
// pickled PyTorch weights (*.bin, *.pt: code, not data) stay behind.
// Repos that also carry GGUF or ONNX exports do not have them downloaded:
// prep's input is the safetensors checkpoint.
var modelFiles = []string{
	"*.json", "*.safetensors", "*.jinja", "tokenizer.model", "*.tiktoken",
	"merges.txt", "vocab.txt",
}

func isModelFile(rel string) bool {
	base := path.Base(rel)
	if strings.HasPrefix(base, ".") {
		return false
	}
	for _, p := range modelFiles {
		if ok, _ := path.Match(p, base); ok {
			return true
		}
	}
	return false
}

// resolved is a source made present on disk.
type resolved struct {
	Dir    string
	Key    string // identity of the content: everything later keys chain from it
	Source artifact.Source
}

// isLocal decides whether SOURCE names a directory or a Hub repository.
// An existing directory wins, so ./org/name is never fetched by mistake.
func isLocal(src string) bool {
	if st, err := os.Stat(src); err == nil && st.IsDir() {
		return true
	}
	return strings.HasPrefix(src, ".") || strings.HasPrefix(src, "/") || strings.HasPrefix(src, "~")
}

// splitRepo splits org/name[@rev].
func splitRepo(src string) (repo, rev string, err error) {
	repo, rev, _ = strings.Cut(src, "@")
	parts := strings.Split(repo, "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", inputErr("SOURCE %q is neither an existing directory nor a Hugging Face repository org/name[@revision]", src)
	}
	return repo, rev, nil
}

// resolveLocal hashes the model files of a local directory.
func resolveLocal(c *Cache, dir string) (*resolved, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, inputErr("SOURCE %s: %v", dir, err)
	}
	if !st.IsDir() {
		return nil, inputErr("SOURCE %s is a file: prep takes a checkpoint directory or a Hub repository", dir)
	}
	names, err := artifact.ListFiles(dir)
	if err != nil {
		return nil, inputErr("SOURCE %s: %v", dir, err)
	}
	var files []artifact.FileEntry
	for _, n := range names {
		if !isModelFile(n) {
			continue
		}
		sum, size, err := c.FileSHA256(filepath.Join(dir, filepath.FromSlash(n)))
		if err != nil {
			return nil, inputErr("SOURCE %s: %v", dir, err)
		}
		files = append(files, artifact.FileEntry{Path: n, Size: size, SHA256: sum})
	}
	if len(files) == 0 {
		return nil, inputErr("SOURCE %s holds no model files (config.json, *.safetensors, tokenizer.json…)", dir)
	}
	tree := artifact.TreeDigest(files)
	abs, _ := filepath.Abs(dir)
	return &resolved{
		Dir:    dir,
		Key:    "local:" + tree,
		Source: artifact.Source{Dir: filepath.Base(abs), TreeSHA256: tree},
	}, nil
}

// resolveHub pulls repo@rev into the Hugging Face cache (a second pull
// downloads nothing; an interrupted one resumes) and names it by commit.
func resolveHub(ctx context.Context, cfg hub.Config, src string, emit progress.Func) (*resolved, error) {
	repo, rev, err := splitRepo(src)
	if err != nil {
		return nil, err
	}
	client, err := hub.NewClient(cfg)
	if err != nil {
		return nil, &stepError{step: "pull", err: err}
	}
	start := time.Now()
	emit.Emit(progress.Event{Event: progress.Start, Step: "pull", Message: repo})
	// Hub events are per file: one progress figure for the step.
	var files progress.FileSum
	snap, err := client.Snapshot(ctx, repo, rev, hub.SnapshotOptions{
		Include: modelFiles, // fnmatch: * also matches /, so subdirectories too
		OnEvent: func(e progress.Event) {
			if done, total, moved := files.Add(e); moved {
				emit.Emit(progress.Event{Event: progress.Progress, Step: "pull", Done: done, Total: total, Unit: "bytes"})
			}
			if e.Event == progress.Retry || e.Event == progress.Warning {
				emit.Emit(progress.Event{Event: progress.Log, Step: "pull", Message: e.File + ": " + e.Message})
			}
		},
	})
	if err != nil {
		err = &stepError{step: "pull", err: err}
		emit.Emit(progress.Event{Event: progress.Error, Step: "pull", Err: err})
		return nil, err
	}
	if snap.Downloaded() == 0 {
		emit.Emit(progress.Event{Event: progress.Skip, Step: "pull", Key: snap.Commit, Reason: "in the Hugging Face cache", DurationMS: time.Since(start).Milliseconds()})
	} else {
		emit.Emit(progress.Event{Event: progress.Done, Step: "pull", Key: snap.Commit, DurationMS: time.Since(start).Milliseconds()})
	}
	if len(snap.Files) == 0 {
		return nil, inputErr("%s@%s has no model files (config.json, *.safetensors, tokenizer.json…)", repo, snap.Commit)
	}
	return &resolved{
		Dir:    snap.Dir,
		Key:    "hub:" + repo + "@" + snap.Commit,
		Source: artifact.Source{Repo: repo, Revision: snap.Revision, Commit: snap.Commit},
	}, nil
}

// importOptions: import has no settings; its key is its input's (the
// source's identity).
type importOptions struct{}

// importer holds how import copies, which does not change what it
// writes: a local source is copied, so that later steps (and OUT/) never
// share inodes with files the user may edit in place; Hub blobs are
// immutable and are hard-linked instead.
type importer struct {
	link bool
}

// importStep copies the model files of the source (the step's input:
// check, before it, writes nothing) into the cache.
func importStep(local bool) Step {
	return newStep("import", 1, importOptions{}, importer{link: !local}.run)
}

func (im importer) run(ctx context.Context, sc *StepContext, _ importOptions) error {
	names, err := artifact.ListFiles(sc.In)
	if err != nil {
		return inputErr("%v", err)
	}
	if err := os.MkdirAll(sc.Out, 0o755); err != nil {
		return err
	}
	n := 0
	for _, name := range names {
		if !isModelFile(name) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		from, to := filepath.Join(sc.In, filepath.FromSlash(name)), filepath.Join(sc.Out, filepath.FromSlash(name))
		if im.link {
			err = linkOrCopy(from, to)
		} else {
			err = atomicfile.Copy(from, to, 0o644)
		}
		if err != nil {
			return err
		}
		failpoint.Hit("prep.import") // crash tests: kill -9 with the import half copied
		n++
	}
	if n == 0 {
		return errors.New("no model files to import")
	}
	sc.Logf("imported %d files", n)
	return nil
}
