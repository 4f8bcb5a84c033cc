package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestVersionAndGlobalFlags(t *testing.T) {
	code, out, _ := runCLI(t, "version", "--json")
	var v struct {
		Version   string `json:"version"`
		GoVersion string `json:"go_version"`
		Platform  string `json:"platform"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Version == "" || v.GoVersion == "" || !strings.Contains(v.Platform, "/") {
		t.Fatalf("version --json: exit %d %q", code, out)
	}
	code, out, _ = runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(out, "edgectl ") {
		t.Fatalf("version: %d %q", code, out)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{{"no-such-command"}, {"inspect"}, {"inspect", "a", "b"}, {"doctor", "--nope", "x"}, {"version", "extra"}} {
		code, out, stderr := runCLI(t, args...)
		if code != 2 || out != "" || !strings.HasPrefix(stderr, "edgectl: ") {
			t.Errorf("%v: exit %d stdout %q stderr %q", args, code, out, stderr)
		}
	}
}

func TestJSONErrorsAreMachineReadable(t *testing.T) {
	code, out, stderr := runCLI(t, "--json", "inspect", "/does/not/exist")
	var ev struct {
		Event    string `json:"event"`
		Error    string `json:"error"`
		ExitCode int    `json:"exit_code"`
	}
	if code != 1 || json.Unmarshal([]byte(out), &ev) != nil || ev.Event != "error" || ev.ExitCode != 1 || !strings.Contains(stderr, "/does/not/exist") {
		t.Fatalf("exit %d stdout %q stderr %q", code, out, stderr)
	}
}

func TestQuietSilencesLogs(t *testing.T) {
	dir := t.TempDir() + "/m"
	writeGemma(t, dir)
	code, out, stderr := runCLI(t, "patch", "config", dir, "--in-place", "--quiet")
	if code != 0 || out != "" || stderr != "" {
		t.Fatalf("--quiet: exit %d out %q err %q", code, out, stderr)
	}
}
