package axllm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// VerifyError lists everything wrong with a compiled directory.
type VerifyError struct {
	Dir      string
	Problems []string
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("%s is not loadable by axllm: %s", e.Dir, strings.Join(e.Problems, "; "))
}

// Verify checks that dir is loadable by `axllm run|serve` as it is: the
// config.json parses with every required key, one layer file per
// axmodel_num and nothing beyond, the post model, the embedding of exactly
// tokens_embed_num × tokens_embed_size × 2 bytes, the tokenizer file and a
// complete post_config.json. It returns the config; the error is a
// *VerifyError.
func Verify(dir string) (*Config, error) {
	c, err := ReadConfig(filepath.Join(dir, ConfigName))
	if err != nil {
		return nil, &VerifyError{Dir: dir, Problems: []string{err.Error()}}
	}
	var probs []string
	need := func(rel, what string) bool {
		if rel == "" {
			probs = append(probs, what+" not set")
			return false
		}
		if _, err := os.Stat(resolve(dir, rel)); err != nil {
			probs = append(probs, fmt.Sprintf("%s %s missing", what, rel))
			return false
		}
		return true
	}
	for i := 0; i < c.AxmodelNum; i++ {
		need(c.LayerFile(i), "layer")
	}
	if _, err := os.Stat(filepath.Join(dir, c.LayerFile(c.AxmodelNum))); err == nil {
		probs = append(probs, fmt.Sprintf("%s exists but axmodel_num is %d: the config and the build disagree", c.LayerFile(c.AxmodelNum), c.AxmodelNum))
	}
	need(c.FilenamePostAxmodel, "post model")
	if need(c.FilenameTokensEmbed, "embedding") {
		n, _ := fileSize(resolve(dir, c.FilenameTokensEmbed))
		if want := EmbedBytes(c.TokensEmbedNum, c.TokensEmbedSize); n != want {
			probs = append(probs, fmt.Sprintf("embedding %s is %d bytes, want tokens_embed_num × tokens_embed_size × 2 = %d × %d × 2 = %d (ax-llm#62: a mismatch fails silently)",
				c.FilenameTokensEmbed, n, c.TokensEmbedNum, c.TokensEmbedSize, want))
		}
	}
	if strings.Contains(c.URLTokenizerModel, "://") {
		probs = append(probs, fmt.Sprintf("url_tokenizer_model %q is a URL; axllm reads a local tokenizer file", c.URLTokenizerModel))
	} else {
		need(c.URLTokenizerModel, "tokenizer")
	}
	if post := postConfigName(c); need(post, "post config") {
		if _, err := ReadPostConfig(resolve(dir, post)); err != nil {
			probs = append(probs, err.Error())
		}
	}
	if len(probs) > 0 {
		return c, &VerifyError{Dir: dir, Problems: probs}
	}
	return c, nil
}
