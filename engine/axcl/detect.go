package axcl

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/format/axllm"
)

// IsModelDir reports whether dir is a compiled ax-llm model directory: a
// `<prefix>_post.axmodel` next to an ax-llm (not Hugging Face) config.json.
func IsModelDir(dir string) bool { _, err := readModelDir(dir); return err == nil }

// readModelDir checks dir the way axllm will, through format/axllm (the
// one parser of ax-llm configs), so a broken directory fails with its
// explanation instead of a vendor "Key not found".
func readModelDir(dir string) (*axllm.Config, error) {
	if !axllm.HasPostModel(dir) {
		return nil, fmt.Errorf("%s: not a compiled ax-llm directory (no %s): %w", dir, axllm.PostModelGlob, engine.ErrUnsupported)
	}
	c, err := axllm.ReadConfig(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return c, nil
}

// Footprint is the bytes of compiled layers: what the model occupies in the
// NPU's CMM pool, near enough to budget with before the first load.
func Footprint(dir string) int64 {
	var n int64
	ms, _ := filepath.Glob(filepath.Join(dir, "*.axmodel"))
	for _, m := range ms {
		if fi, err := os.Stat(m); err == nil {
			n += fi.Size()
		}
	}
	return n
}
