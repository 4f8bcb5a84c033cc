package prep

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/edgectl/edgectl/format/axllm"
	"github.com/edgectl/edgectl/format/gguf"
	"github.com/edgectl/edgectl/format/h1b"
	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/safetensors"
)

// verifyOut checks a finished artifact directory the way its loader opens
// it, with the format packages' own readers (prep sits above them and below
// the engines, so it cannot ask an engine): headers parse, every byte range
// a header names lies inside its file, the tensors the config implies are
// there, and the tokenizer beside the model parses. The data itself was
// checked in the source (validate) and hashed into the manifest.
func verifyOut(dir, target string) error {
	var probs []string
	switch target {
	case TargetCPU:
		cfg, err := hfconfig.Load(filepath.Join(dir, "config.json"))
		if err != nil {
			return err
		}
		probs = append(probs, checkConfig(cfg)...)
		if len(probs) > 0 {
			break
		}
		ck, err := safetensors.OpenCheckpoint(dir)
		if err != nil {
			return err
		}
		probs = append(probs, checkTensors(ck, cfg, true)...)
		ck.Close()
		tp, _ := checkTokenizer(dir, cfg.Text().VocabSize)
		probs = append(probs, tp...)
	case TargetGGUF, TargetH1B:
		p, err := onlyFile(dir, "."+target)
		if err != nil {
			return err
		}
		if target == TargetGGUF {
			g, err := gguf.Open(p)
			if err != nil {
				return err
			}
			g.Close()
		} else {
			h, err := h1b.Open(p)
			if err != nil {
				return err
			}
			h.Close()
		}
		if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err == nil {
			tp, _ := checkTokenizer(dir, int(^uint(0)>>1))
			probs = append(probs, tp...)
		}
	case TargetAX650:
		if _, err := axllm.Verify(dir); err != nil {
			return err
		}
	}
	if len(probs) > 0 {
		return fmt.Errorf("%s", strings.Join(probs, "; "))
	}
	return nil
}

// onlyFile finds the one file with extension ext directly in dir.
func onlyFile(dir, ext string) (string, error) {
	m, err := filepath.Glob(filepath.Join(dir, "*"+ext))
	if err != nil {
		return "", err
	}
	if len(m) != 1 {
		return "", fmt.Errorf("%s holds %d %s files, want 1", dir, len(m), ext)
	}
	return m[0], nil
}
