package axcl

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/edgectl/edgectl/format/axllm"
)

// How a system prompt reaches the runtime. `axllm run` reads it only from
// the model directory's config.json (`system_prompt`, "prepended when the
// conversation has none": AXERA-TECH/ax-llm docs/configuration.md); its run
// loop has /reset but no command to change it (the HTTP server's
// /api/reset takes one: docs/http_api.md). Legacy main_* binaries take
// `--system_prompt` (src/main.cpp). So a new system prompt means a restart.
type sysMode int

const (
	sysConfig sysMode = iota // a per-model copy of the directory with config.json rewritten
	sysFlag                  // the command's --system_prompt value replaced
	sysNone                  // neither: the system prompt leads the first user line
)

func systemMechanism(cmd []string) sysMode {
	for _, a := range cmd {
		if a == "--system_prompt" {
			return sysFlag
		}
	}
	for _, a := range cmd {
		if strings.Contains(a, "{dir}") {
			return sysConfig
		}
	}
	return sysNone
}

// commandFor is the runtime's command line holding system as its system
// prompt and post as its sampling (nil: the model's own post_config.json),
// and the directory made for them ("" when none was needed).
func (m *Model) commandFor(system string, post *axllm.PostConfig) ([]string, string, error) {
	dir, shadow := m.dir, ""
	var err error
	switch {
	case m.sysVia == sysConfig && (system != m.defaultSystem || post != nil):
		if shadow, err = shadowDir(m.dir, system, post); err != nil {
			return nil, "", err
		}
		dir = shadow
	case m.sysVia == sysFlag && post != nil:
		// main_* binaries take --post_config_path (ax-llm src/main.cpp).
		if shadow, err = os.MkdirTemp("", "edgectl-axcl-"); err != nil {
			return nil, "", fmt.Errorf("per-model post_config.json: %w", err)
		}
	}
	args := make([]string, 0, len(m.opts.Command)+2)
	postFlag := false
	for i, a := range m.opts.Command {
		a = strings.ReplaceAll(a, "{dir}", dir)
		if i > 0 && m.opts.Command[i-1] == "--system_prompt" && m.sysVia == sysFlag {
			a = system
		}
		if i > 0 && m.opts.Command[i-1] == "--post_config_path" && m.sysVia == sysFlag && post != nil {
			a, postFlag = filepath.Join(shadow, axllm.PostConfigName), true
		}
		args = append(args, a)
	}
	if m.sysVia == sysFlag && post != nil {
		path, err := writePost(shadow, post)
		if err != nil {
			os.RemoveAll(shadow)
			return nil, "", fmt.Errorf("per-model post_config.json in %s: %w", shadow, err)
		}
		if !postFlag {
			args = append(args, "--post_config_path", path)
		}
	}
	return args, shadow, nil
}

// shadowDir makes a directory that links every file of dir except
// config.json, which is a copy with system_prompt set (and, with post,
// post_config_path naming a post_config.json written there): the runtime
// resolves the config's paths against the directory it is given, so the
// links keep them valid, and the model directory itself is never written.
func shadowDir(dir, system string, post *axllm.PostConfig) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, axllm.ConfigName))
	if err != nil {
		return "", err
	}
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(b, &cfg); err != nil {
		return "", fmt.Errorf("%s: %v", filepath.Join(dir, axllm.ConfigName), err)
	}
	sp, _ := json.Marshal(system)
	cfg["system_prompt"] = sp
	if post != nil {
		cfg["post_config_path"] = json.RawMessage(`"` + axllm.PostConfigName + `"`)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	shadow, err := os.MkdirTemp("", "edgectl-axcl-")
	if err != nil {
		return "", fmt.Errorf("per-model config for the system prompt: %w", err)
	}
	ents, err := os.ReadDir(abs)
	if err == nil {
		for _, e := range ents {
			if e.Name() == axllm.ConfigName || (post != nil && e.Name() == axllm.PostConfigName) {
				continue
			}
			if err = os.Symlink(filepath.Join(abs, e.Name()), filepath.Join(shadow, e.Name())); err != nil {
				break
			}
		}
	}
	if err == nil {
		err = axllm.WriteJSON(filepath.Join(shadow, axllm.ConfigName), cfg)
	}
	if err == nil && post != nil {
		_, err = writePost(shadow, post)
	}
	if err != nil {
		os.RemoveAll(shadow)
		return "", fmt.Errorf("per-model config for the system prompt in %s: %w", shadow, err)
	}
	return shadow, nil
}

// restart stops the runtime and starts it again holding system and post:
// the only way to change its system prompt or sampling (both read at
// init), and the reset of builds without a reset command.
func (m *Model) restart(ctx context.Context, system string, post *axllm.PostConfig) error {
	m.procMu.Lock()
	defer m.procMu.Unlock()
	if err := m.Alive(); err != nil {
		return err
	}
	m.opts.Logf("axcl: %s: restarting the runtime for a new conversation (system prompt %q, sampling %s)", m.info.Name, system, postWords(post))
	m.stopProcess()
	m.removeShadow()
	args, shadow, err := m.commandFor(system, post)
	if err != nil {
		m.dead.Keep(err)
		return err
	}
	m.shadow = shadow
	if err := m.start(ctx, args); err != nil {
		m.dead.Keep(err)
		return err
	}
	m.system, m.samp.running, m.dirty = system, post, false
	return nil
}

func (m *Model) removeShadow() {
	if m.shadow != "" {
		os.RemoveAll(m.shadow)
		m.shadow = ""
	}
}
