// Package chat renders a model's chat template (Jinja, from
// tokenizer_config.json or chat_template.jinja) into the prompt text the
// model was trained on. It uses github.com/nikolalohinski/gonja/v2, a
// maintained pure-Go Jinja2 implementation, configured as transformers
// configures jinja2 (trim_blocks, lstrip_blocks, raise_exception).
package chat

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nikolalohinski/gonja/v2"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"

	"github.com/edgectl/edgectl/engine"
)

// Template is a parsed chat template; safe for concurrent Render calls.
type Template struct {
	src string
	t   *exec.Template
}

// Parse compiles a Jinja chat template.
func Parse(src string) (*Template, error) {
	cfg := config.New()
	// transformers renders with trim_blocks and lstrip_blocks.
	cfg.TrimBlocks = true
	cfg.LeftStripBlocks = true
	cfg.KeepTrailingNewline = false
	loader, err := loaders.NewFileSystemLoader("")
	if err != nil {
		return nil, err
	}
	shifted, err := loaders.NewShiftedLoader("chat_template", bytes.NewReader([]byte(src)), loader)
	if err != nil {
		return nil, err
	}
	t, err := exec.NewTemplate("chat_template", cfg, shifted, gonja.DefaultEnvironment)
	if err != nil {
		return nil, fmt.Errorf("parse chat template: %w", err)
	}
	return &Template{src: src, t: t}, nil
}

// Source is the template text.
func (t *Template) Source() string { return t.src }

// Vars are the extra variables templates read.
type Vars struct {
	BOSToken, EOSToken  string
	AddGenerationPrompt bool
	// Extra holds anything else (enable_thinking, tools, …).
	Extra map[string]any
}

// errRaised carries raise_exception's message out of the renderer.
type errRaised struct{ msg string }

func (e errRaised) Error() string { return "chat template: " + e.msg }

// Render produces the prompt for messages.
func (t *Template) Render(msgs []engine.Message, v Vars) (string, error) {
	list := make([]any, len(msgs))
	for i, m := range msgs {
		list[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	var raised *errRaised
	data := map[string]any{
		"messages":              list,
		"add_generation_prompt": v.AddGenerationPrompt,
		"bos_token":             v.BOSToken,
		"eos_token":             v.EOSToken,
		"raise_exception": func(msg string) (string, error) {
			raised = &errRaised{msg}
			return "", *raised
		},
		"strftime_now": func(format string) string { return strftime(time.Now(), format) },
	}
	for k, val := range v.Extra {
		data[k] = val
	}
	ctx := gonja.DefaultContext.Inherit()
	ctx.Update(exec.NewContext(data))
	out, err := t.t.ExecuteToString(ctx)
	if raised != nil {
		return "", *raised
	}
	if err != nil {
		return "", fmt.Errorf("render chat template: %w", err)
	}
	return out, nil
}

// strftime supports the directives chat templates use for dates.
func strftime(t time.Time, f string) string {
	r := strings.NewReplacer("%Y", "2006", "%m", "01", "%d", "02", "%B", "January", "%b", "Jan", "%H", "15", "%M", "04", "%S", "05", "%A", "Monday", "%a", "Mon")
	return t.Format(r.Replace(f))
}

// ErrNoTemplate means the model ships no chat template.
var ErrNoTemplate = errors.New("model has no chat template (tokenizer_config.json chat_template or chat_template.jinja)")
