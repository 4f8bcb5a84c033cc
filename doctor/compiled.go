package doctor

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/edgectl/edgectl/format/axllm"
)

// checkCompiled checks a compiled ax-llm directory (pulsar2 output) against
// what axllm run|serve loads (axera.md §5, §8): the vendor's required keys
// and their types, the files they name, the embedding size, a complete
// post_config.json and 0-byte stubs. A Hugging Face checkpoint's checks do
// not apply: there are no safetensors and config.json has another schema.
func (c *checker) checkCompiled() {
	d := axllm.Describe(c.dir)
	regen := "edgectl pulsar2 axllm-config " + quote(c.dir) + " --in-place"
	cfgPath := filepath.Join(c.dir, axllm.ConfigName)
	b, readErr := os.ReadFile(cfgPath)
	switch {
	case os.IsNotExist(readErr):
		c.add(Finding{ID: "config-missing", Severity: Fixable, Message: "compiled directory without config.json; axllm reads only <dir>/config.json",
			Evidence: cfgPath + " does not exist", Fix: regen})
	case readErr != nil:
		c.add(Finding{ID: "config-unreadable", Severity: Blocking, Message: "config.json cannot be read", Evidence: readErr.Error()})
	case len(strings.TrimSpace(string(b))) == 0:
		c.add(Finding{ID: "config-empty", Severity: Fixable, Message: "config.json is a 0-byte stub; axllm fails with \"parse error … empty input\"",
			Evidence: fmt.Sprintf("%s is %d bytes", cfgPath, len(b)), Fix: regen})
	default:
		c.checkCompiledKeys(cfgPath, b, d, regen)
	}
	for _, s := range d.Stubs {
		if s == axllm.ConfigName || s == axllm.ConfigName+".orig" {
			continue // reported above, or the stub axllm-config --in-place kept
		}
		c.add(Finding{ID: "file-empty", Severity: Blocking, Message: s + " is a 0-byte stub (an incomplete download or upload)",
			Evidence: filepath.Join(c.dir, s) + " is 0 bytes", Fix: "download it again (edgectl pull ORG/NAME --include " + s + "), or rebuild with edgectl pulsar2 build"})
	}
	if d.LayoutErr != "" {
		c.add(Finding{ID: "axmodel-files", Severity: Blocking, Message: "the compiled layer files are incomplete", Evidence: d.LayoutErr,
			Fix: "download the missing *.axmodel files again, or rebuild with edgectl pulsar2 build"})
	}
	if d.Config != nil {
		c.checkCompiledFiles(d)
	}
	if d.PostErr != "" {
		c.add(Finding{ID: "post-config", Severity: Fixable, Message: "post_config.json is missing or incomplete; axllm requires all nine sampling keys (\"type must be boolean, but is null\")",
			Evidence: d.PostErr, Fix: "add the missing keys (edgectl pulsar2 build writes them from generation_config.json; with a stub config.json, " + regen + " writes a missing post_config.json too)"})
	}
	if c.opts.Log != "" {
		c.checkRuntimeLog(d)
	}
}

// checkCompiledKeys reports every missing or mistyped key, each with the
// fix, instead of the first one axllm would trip on.
func (c *checker) checkCompiledKeys(cfgPath string, b []byte, d *axllm.DirInfo, regen string) {
	probs, err := axllm.KeyProblems(b)
	if err != nil {
		c.add(Finding{ID: "config-invalid", Severity: Fixable, Message: "config.json is not a JSON object; axllm fails to parse it",
			Evidence: fmt.Sprintf("%s: %v", cfgPath, err), Fix: regen})
		return
	}
	if strings.Contains(d.ConfigErr, "Hugging Face config.json") {
		c.add(Finding{ID: "config-hf", Severity: Fixable, Message: "config.json is a Hugging Face config, not the ax-llm one axllm reads",
			Evidence: d.ConfigErr, Fix: "move it into tokenizer/ and run " + regen})
		return
	}
	for _, p := range probs {
		if p.Got == "missing" {
			c.add(Finding{ID: "config-key-missing", Severity: Fixable, Message: fmt.Sprintf("config.json lacks the required key %q; axllm fails with \"Key not found: %s\"", p.Key, p.Key),
				Evidence: fmt.Sprintf("%s: no %q (want a %s)", cfgPath, p.Key, p.Want), Fix: regen + " (or add the key by hand)"})
			continue
		}
		c.add(Finding{ID: "config-key-type", Severity: Fixable, Message: fmt.Sprintf("config.json key %q holds a %s, axllm reads a %s (\"type must be …\")", p.Key, strings.Fields(p.Got)[0], p.Want),
			Evidence: fmt.Sprintf("%s: %q = %s", cfgPath, p.Key, strings.TrimPrefix(p.Got, strings.Fields(p.Got)[0]+" ")),
			Fix:      fmt.Sprintf("write %q as a JSON %s (e.g. %s), or regenerate the file: %s", p.Key, p.Want, typeExample(p.Want), regen)})
	}
	if len(probs) == 0 && d.ConfigErr != "" {
		c.add(Finding{ID: "config-invalid", Severity: Fixable, Message: "config.json is not a usable ax-llm config", Evidence: d.ConfigErr, Fix: regen})
	}
}

func typeExample(t string) string {
	return map[string]string{"integer": "28, not \"28\"", "string": "\"Qwen3\"", "boolean": "true, not 1 or \"true\""}[t]
}

// checkCompiledFiles checks what a readable config names: layer files,
// the post model, the tokenizer and the embedding's size.
func (c *checker) checkCompiledFiles(d *axllm.DirInfo) {
	cfg := d.Config
	var missing []string
	for i := 0; i < cfg.AxmodelNum; i++ {
		if _, err := os.Stat(filepath.Join(c.dir, cfg.LayerFile(i))); err != nil {
			missing = append(missing, cfg.LayerFile(i))
		}
	}
	for _, f := range []string{cfg.FilenamePostAxmodel, cfg.FilenameTokensEmbed} {
		if _, err := os.Stat(filepath.Join(c.dir, f)); err != nil {
			missing = append(missing, f)
		}
	}
	if strings.Contains(cfg.URLTokenizerModel, "://") {
		c.add(Finding{ID: "tokenizer-url", Severity: Fixable, Message: "url_tokenizer_model is a URL; current axllm reads a local tokenizer file (HTTP is no longer supported)",
			Evidence: fmt.Sprintf("url_tokenizer_model = %q", cfg.URLTokenizerModel), Fix: "edgectl pulsar2 axllm-config " + quote(c.dir) + " --in-place"})
	} else if _, err := os.Stat(filepath.Join(c.dir, cfg.URLTokenizerModel)); err != nil {
		missing = append(missing, cfg.URLTokenizerModel)
	}
	if len(missing) > 0 {
		c.add(Finding{ID: "files-missing", Severity: Blocking, Message: "files config.json names are missing",
			Evidence: strings.Join(missing, ", "), Fix: "download them again (edgectl pull ORG/NAME), or rebuild with edgectl pulsar2 build"})
	}
	if d.Layout != nil && d.Layout.Layers != cfg.AxmodelNum {
		c.add(Finding{ID: "axmodel-num", Severity: Fixable, Message: "axmodel_num disagrees with the layer files",
			Evidence: fmt.Sprintf("axmodel_num = %d, %d files %s", cfg.AxmodelNum, d.Layout.Layers, d.Layout.Template),
			Fix:      fmt.Sprintf("set \"axmodel_num\": %d in config.json", d.Layout.Layers)})
	}
	if d.EmbedBytes > 0 {
		if want := axllm.EmbedBytes(cfg.TokensEmbedNum, cfg.TokensEmbedSize); d.EmbedBytes != want {
			fix := "rebuild with edgectl pulsar2 build (ax-llm#62: a tokens_embed_size mismatch fails silently)"
			if cfg.TokensEmbedSize > 0 && d.EmbedBytes%int64(2*cfg.TokensEmbedSize) == 0 {
				fix = fmt.Sprintf("set \"tokens_embed_num\": %d (the file holds that many rows of %d bf16 values)", d.EmbedBytes/int64(2*cfg.TokensEmbedSize), cfg.TokensEmbedSize)
			}
			c.add(Finding{ID: "embedding-size", Severity: Blocking, Message: "the embedding file is not tokens_embed_num × tokens_embed_size × 2 bytes",
				Evidence: fmt.Sprintf("%s is %d bytes, want %d × %d × 2 = %d", cfg.FilenameTokensEmbed, d.EmbedBytes, cfg.TokensEmbedNum, cfg.TokensEmbedSize, want), Fix: fix})
		}
	}
}

// Runtime log lines doctor --log recognizes.
var (
	// AXCL_RUNTIME / ENGINE / EXECUTE_FAIL (axera.md §9). Reported with
	// 0-byte or stub configs (axera.md §13, a third-party claim).
	engineExecFail = regexp.MustCompile(`(?i)0x8030070c`)
	emptyInput     = regexp.MustCompile(`parse error.*empty input`)
	keyNotFound    = regexp.MustCompile(`Key not found: (\w+)`)
)

// checkRuntimeLog reads an axllm/main_* log and ties the failure it shows
// to the directory's state.
func (c *checker) checkRuntimeLog(d *axllm.DirInfo) {
	f, err := os.Open(c.opts.Log)
	if err != nil {
		c.add(Finding{ID: "log-unreadable", Severity: Warning, Message: "the --log file cannot be read", Evidence: err.Error()})
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		ev := fmt.Sprintf("%s:%d: %s", c.opts.Log, n, line)
		switch {
		case engineExecFail.MatchString(line):
			stub := d.Config == nil
			msg := "the runtime failed with 0x8030070c (AXCL engine execute failure)"
			sev, fix := Warning, "check the board (axcl-smi), free NPU memory (stop other axllm processes, remove /tmp/axcl/*) and rebuild if it repeats"
			if stub {
				msg += ": this directory's config.json is a stub, the known cause"
				sev, fix = Fixable, "edgectl pulsar2 axllm-config "+quote(c.dir)+" --in-place"
			}
			c.add(Finding{ID: "runtime-0x8030070c", Severity: sev, Message: msg, Evidence: ev, Fix: fix})
			return
		case emptyInput.MatchString(line):
			c.add(Finding{ID: "runtime-empty-config", Severity: Fixable, Message: "the runtime could not parse an empty config.json",
				Evidence: ev, Fix: "edgectl pulsar2 axllm-config " + quote(c.dir) + " --in-place"})
			return
		case keyNotFound.MatchString(line):
			k := keyNotFound.FindStringSubmatch(line)[1]
			c.add(Finding{ID: "runtime-key-missing", Severity: Fixable, Message: fmt.Sprintf("the runtime stopped on the missing config key %q", k),
				Evidence: ev, Fix: "edgectl pulsar2 axllm-config " + quote(c.dir) + " --in-place"})
			return
		}
	}
}
