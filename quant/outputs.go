package quant

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/pathguard"
)

// htokPath is the tokenizer sidecar written beside an .h1b output.
func htokPath(out string) string {
	return strings.TrimSuffix(out, filepath.Ext(out)) + ".htok"
}

// outputPaths lists the files (or, for gptq-int4, the one directory) a pack
// writes.
func outputPaths(opts Options) []string {
	if atomicfile.IsStream(opts.Output) {
		return []string{opts.Output} // no sidecar beside a device, FIFO or stdout
	}
	switch opts.Format {
	case FormatSherry, FormatHALO2, FormatTQ1H:
		return []string{opts.Output, htokPath(opts.Output)}
	}
	return []string{opts.Output}
}

// readsExt are the sidecar files Pack may read (config, tokenizer, chat
// template) or copy into a gptq-int4 output, beside the weights.
var readsExt = []string{".safetensors", ".json", ".jinja", ".model", ".txt", ".tiktoken"}

// inputPaths lists what Pack reads: the input itself and, in its
// directory, the weights and every sidecar it may open or copy.
func inputPaths(input string) []string {
	dir := input
	if st, err := os.Stat(input); err == nil && !st.IsDir() {
		dir = filepath.Dir(input)
	}
	in := []string{input}
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		for _, ext := range readsExt {
			if strings.HasSuffix(e.Name(), ext) {
				in = append(in, filepath.Join(dir, e.Name()))
				break
			}
		}
	}
	return in
}

// guardOutputs refuses outputs that alias the input (*pathguard.Error),
// then removes what killed runs writing the same outputs left behind.
func guardOutputs(opts Options) (removed []string, err error) {
	if opts.Format != FormatGPTQInt4 {
		if err := atomicfile.CheckOutput(opts.Output); err != nil {
			return nil, err // -o DIR, a socket: refused before any work
		}
	}
	in := inputPaths(opts.Input)
	if atomicfile.IsStream(opts.Output) {
		return nil, nil // nothing is renamed there, so nothing can be left
	}
	outs := outputPaths(opts)
	for _, out := range outs {
		if opts.Format == FormatGPTQInt4 {
			err = pathguard.Dir(out, in...)
		} else {
			err = pathguard.File(out, in...)
		}
		if err != nil {
			return nil, err
		}
	}
	names := map[string][]string{}
	for _, out := range outs {
		d := filepath.Dir(filepath.Clean(out))
		names[d] = append(names[d], filepath.Base(filepath.Clean(out)))
	}
	for d, ns := range names {
		r, err := atomicfile.CleanStale(d, ns...)
		removed = append(removed, r...)
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// makeOutputParents creates the missing directories above each output, as
// mkdir -p does, so -o may name a file in a directory that does not exist
// yet (atomicfile writes its temporary beside the output). It runs after
// guardOutputs, so the aliasing rules hold for the resolved paths.
func makeOutputParents(opts Options) error {
	for _, out := range outputPaths(opts) {
		if atomicfile.IsStream(out) {
			continue
		}
		d := filepath.Dir(filepath.Clean(out))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("-o %s: cannot create its directory %s: %w", out, d, err)
		}
	}
	return nil
}
