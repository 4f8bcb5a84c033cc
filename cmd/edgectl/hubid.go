package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/edgectl/edgectl/hub"
	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/units"
	"github.com/edgectl/edgectl/serve"
)

// hubModelFiles are what `run` and `serve` pull of a Hub repository: the
// safetensors checkpoint the CPU engine runs, its configs and tokenizer (the
// files prep imports). GGUF exports, ONNX and pickled weights stay behind:
// a repo with a dozen quantizations must not download them all.
var hubModelFiles = []string{
	"*.json", "*.safetensors", "*.jinja", "tokenizer.model", "*.tiktoken", "merges.txt", "vocab.txt",
}

// hubRef reports whether arg is meant as a Hub id: ORG/NAME[@REV] that is
// not a path on disk. A path that exists always wins; ids need the ORG/
// (exactly one '/') so that a mistyped file name is not looked up on the Hub.
func hubRef(arg string) (repo, rev string, ok bool) {
	if _, err := os.Lstat(arg); err == nil {
		return "", "", false
	}
	id, _, _ := strings.Cut(arg, "@") // a revision may hold '/' (refs/pr/1)
	if strings.Count(id, "/") != 1 || strings.HasPrefix(arg, ".") || strings.HasPrefix(arg, "~") {
		return "", "", false
	}
	repo, rev, err := hub.ParseRef(arg)
	if err != nil {
		return "", "", false
	}
	return repo, rev, true
}

// resolveModel turns a MODEL argument into a local path: an existing path
// as is; a Hub id from the Hugging Face cache when it holds it (no network),
// else pulled into it first, as `ollama run` does. Offline
// (HF_HUB_OFFLINE=1) and not cached is an error with exit code 12.
// Anything else comes back unchanged for the loader to report.
func resolveModel(ctx context.Context, io *cli.IO, arg string) (string, error) {
	repo, rev, ok := hubRef(arg)
	if !ok {
		return arg, nil
	}
	c, err := hub.NewClient(hub.FromEnv())
	if err != nil {
		return "", err
	}
	if snap, err := c.Cached(repo, rev); err == nil && hasWeights(snap) {
		io.Logf("%s: %s (Hugging Face cache)", arg, snap.Dir)
		return snap.Dir, nil
	}
	// Progress as `pull` draws it, on stderr: with --json, stdout belongs to
	// the command's own document or events.
	prog := newEventView(io, false)
	io.Logf("%s is not a local path: pulling it from the Hub into the Hugging Face cache", arg)
	snap, err := c.Snapshot(ctx, repo, rev, hub.SnapshotOptions{Include: hubModelFiles, OnEvent: prog.on})
	prog.finish()
	if errors.Is(err, context.Canceled) {
		return "", fmt.Errorf("pull of %s interrupted: partial downloads are kept, run the same command again to resume: %w", arg, err)
	}
	if err != nil {
		if errors.Is(err, errkind.NotFound) {
			return "", fmt.Errorf("%s is neither a file or directory here nor a model on the Hub: %w", arg, err)
		}
		return "", err
	}
	if !hasWeights(snap) {
		return "", fmt.Errorf("%s@%s has no safetensors checkpoint to run (a GGUF-only or compiled repo?): `edgectl pull %s --include FILE` the file you want and give its path",
			snap.Repo, snap.Commit[:min(12, len(snap.Commit))], snap.Repo)
	}
	io.Logf("%s@%s → commit %s: %s downloaded", snap.Repo, snap.Revision, snap.Commit[:min(12, len(snap.Commit))], units.Bytes(snap.Downloaded()))
	return snap.Dir, nil
}

// hasWeights reports whether a snapshot holds weights: a cached snapshot
// pulled with --include '*.json' is completed by a pull instead of failing
// to load.
func hasWeights(snap *hub.Snapshot) bool {
	for _, f := range snap.Files {
		switch path.Ext(f.Path) {
		case ".safetensors", ".gguf", ".h1b", ".axmodel":
			return true
		}
	}
	return false
}

// resolveModelSpecs resolves the Hub ids among serve's --models values
// (PATH, NAME=PATH, ORG/NAME[@REV], NAME=ORG/NAME[@REV]) to snapshot
// directories; a value that is neither an existing path nor a Hub id is a
// usage error.
func resolveModelSpecs(ctx context.Context, io *cli.IO, specs []string) ([]string, error) {
	out := make([]string, 0, len(specs))
	for _, s := range specs {
		name, p := serve.ParseModelSpec(s)
		_, err := os.Stat(p)
		if err == nil {
			out = append(out, s)
			continue
		}
		if _, _, ok := hubRef(p); !ok {
			return nil, usagef("--models %s: %v (give a directory, a model file, NAME=PATH, or a Hub id ORG/NAME)", s, err)
		}
		dir, err := resolveModel(ctx, io, p)
		if err != nil {
			return nil, err
		}
		if name != "" {
			dir = name + "=" + dir
		}
		out = append(out, dir)
	}
	return out, nil
}
