package axcl

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
// prompt, and the shadow directory made for it ("" when none was needed).
func (m *Model) commandFor(system string) ([]string, string, error) {
	dir, shadow := m.dir, ""
	if m.sysVia == sysConfig && system != m.defaultSystem {
		var err error
		if shadow, err = shadowDir(m.dir, system); err != nil {
			return nil, "", err
		}
		dir = shadow
	}
	args := make([]string, len(m.opts.Command))
	for i, a := range m.opts.Command {
		args[i] = strings.ReplaceAll(a, "{dir}", dir)
		if m.sysVia == sysFlag && i > 0 && m.opts.Command[i-1] == "--system_prompt" {
			args[i] = system
		}
	}
	return args, shadow, nil
}

// shadowDir makes a directory that links every file of dir except
// config.json, which is a copy with system_prompt set: the runtime resolves
// the config's paths against the directory it is given, so the links keep
// them valid, and the model directory itself is never written.
func shadowDir(dir, system string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return "", err
	}
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(b, &cfg); err != nil {
		return "", fmt.Errorf("%s: %v", filepath.Join(dir, "config.json"), err)
	}
	sp, _ := json.Marshal(system)
	cfg["system_prompt"] = sp
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", err
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
			if e.Name() == "config.json" {
				continue
			}
			if err = os.Symlink(filepath.Join(abs, e.Name()), filepath.Join(shadow, e.Name())); err != nil {
				break
			}
		}
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(shadow, "config.json"), out, 0o644)
	}
	if err != nil {
		os.RemoveAll(shadow)
		return "", fmt.Errorf("per-model config for the system prompt in %s: %w", shadow, err)
	}
	return shadow, nil
}

// restart stops the runtime and starts it again holding system: the only
// way to change its system prompt, and the reset of builds without one.
func (m *Model) restart(ctx context.Context, system string) error {
	m.procMu.Lock()
	defer m.procMu.Unlock()
	if err := m.Alive(); err != nil {
		return err
	}
	m.opts.Logf("axcl: %s: restarting the runtime for a new conversation (system prompt %q)", m.info.Name, system)
	m.stopProcess()
	m.removeShadow()
	args, shadow, err := m.commandFor(system)
	if err != nil {
		m.markDead(err)
		return err
	}
	m.shadow = shadow
	if err := m.start(ctx, args); err != nil {
		m.markDead(err)
		return err
	}
	m.system, m.dirty = system, false
	return nil
}

func (m *Model) removeShadow() {
	if m.shadow != "" {
		os.RemoveAll(m.shadow)
		m.shadow = ""
	}
}
