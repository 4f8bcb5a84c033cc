package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/edgectl/edgectl/api"
)

// TestPsShowsWhatTheServerLoaded: an in-process serve over the Hub cache
// loads the real tinystories model; ps (table and --json, --host or
// EDGECTL_HOST) shows it with its lane, memory, context and expiry, and
// nothing once keep_alive 0 unloaded it.
func TestPsShowsWhatTheServerLoaded(t *testing.T) {
	tc := newTinyCache(t)
	url := tinyServer(t, tc.dir)

	code, out, errOut := runCmd(t, "", "ps", "--host", url)
	if code != 0 || out != "" || !strings.Contains(errOut, "no model is loaded on "+url) {
		t.Fatalf("ps before any load: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	loadOn(t, url, "tinystories-656k", nil)

	code, out, errOut = runCmd(t, "", "--json", "ps", "--host", url)
	var ps psOutput
	if code != 0 || json.Unmarshal([]byte(out), &ps) != nil {
		t.Fatalf("ps --json: exit %d\n%s%s", code, out, errOut)
	}
	if ps.Host != url || len(ps.Models) != 1 {
		t.Fatalf("ps --json %+v", ps)
	}
	m := ps.Models[0]
	if m.Name != "tinystories-656k:latest" || m.Lane != "cpu" || m.Size <= 0 || m.ContextLength <= 0 || m.SizeVRAM != 0 ||
		m.ExpiresAt.Before(time.Now()) || m.ExpiresAt.After(time.Now().Add(10*time.Minute)) || m.Details.Format != "safetensors" {
		t.Errorf("loaded model %+v: want tinystories on the cpu lane, in RAM, expiring within serve's default 5m", m)
	}
	// Ollama's wire shape: the keys its clients read.
	var raw struct {
		Models []map[string]any `json:"models"`
	}
	json.Unmarshal([]byte(out), &raw)
	for _, k := range []string{"name", "model", "size", "digest", "details", "expires_at", "size_vram", "context_length", "lane"} {
		if _, ok := raw.Models[0][k]; !ok {
			t.Errorf("ps --json lacks %q: %s", k, out)
		}
	}

	t.Setenv("EDGECTL_HOST", url)
	code, out, errOut = runCmd(t, "", "ps")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME") ||
		!strings.Contains(lines[1], "tinystories-656k:latest") || !strings.Contains(lines[1], " cpu ") || !strings.Contains(lines[1], "minutes from now") {
		t.Errorf("ps with EDGECTL_HOST: exit %d\n%s%s", code, out, errOut)
	}

	loadOn(t, url, "tinystories-656k", &api.Duration{})
	if code, out, _ := runCmd(t, "", "--json", "ps"); code != 0 || !strings.Contains(out, `"models": []`) {
		t.Errorf("ps after keep_alive 0: exit %d\n%s", code, out)
	}
}

func TestPsWithoutAServer(t *testing.T) {
	code, _, errOut := runCmd(t, "", "ps", "--host", "127.0.0.1:1")
	if code != exitError || !strings.Contains(errOut, "is edgectl serve") {
		t.Errorf("no server: exit %d, %s", code, errOut)
	}
	if code, _, errOut := runCmd(t, "", "ps", "--host", "box:http"); code != exitUsage {
		t.Errorf("bad --host: exit %d, %s", code, errOut)
	}
}
