package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/internal/cli"
)

const runFixture = "../../testdata/models/tinystories-656k"

func runCmd(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	io := &cli.IO{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}
	code := run(context.Background(), io, args)
	return code, out.String(), errOut.String()
}

func TestRunOneShotGreedy(t *testing.T) {
	code, out, errOut := runCmd(t, "", "run", runFixture, "Once upon a time", "-n", "30", "--temperature", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if len(strings.Fields(out)) < 10 || !strings.Contains(out, " a ") {
		t.Errorf("output %q", out)
	}
	if !strings.Contains(errOut, "tok/s") || !strings.Contains(errOut, "time to first token") {
		t.Errorf("no timing on stderr: %q", errOut)
	}
	// Greedy is deterministic.
	_, again, _ := runCmd(t, "", "run", runFixture, "Once upon a time", "-n", "30", "--temperature", "0")
	if again != out {
		t.Errorf("greedy runs differ:\n%q\n%q", out, again)
	}
}

func TestRunJSON(t *testing.T) {
	code, out, errOut := runCmd(t, "", "--json", "run", runFixture, "Once upon a time", "-n", "8", "--seed", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var st runStats
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
	}
	if st.CompletionTokens != 8 || st.FinishReason != "length" || st.PromptTokens == 0 || st.Text == "" || st.DecodeTPS <= 0 {
		t.Errorf("%+v", st)
	}
}

func TestRunInteractiveReadsLines(t *testing.T) {
	code, out, errOut := runCmd(t, "Once upon a time\n\nThe dog\n/exit\nignored\n", "run", runFixture, "-n", "5", "--temperature", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := strings.Count(errOut, "prompt tokens"); n != 2 {
		t.Errorf("%d turns answered, want 2: %s", n, errOut)
	}
	if strings.Count(out, "\n") != 2 {
		t.Errorf("stdout %q", out)
	}
}

func TestRunErrors(t *testing.T) {
	if code, _, errOut := runCmd(t, "", "run", t.TempDir(), "hi"); code != exitError || !strings.Contains(errOut, "config.json") {
		t.Errorf("empty dir: exit %d, %s", code, errOut)
	}
	if code, _, _ := runCmd(t, "", "run"); code != exitUsage {
		t.Errorf("no args: exit %d", code)
	}
	if code, _, errOut := runCmd(t, "", "run", runFixture, "hi", "--temperature", "-2"); code != exitUsage {
		t.Errorf("bad temperature: exit %d %s", code, errOut)
	}
	if code, _, errOut := runCmd(t, "", "run", runFixture, strings.Repeat("Once upon a time ", 200), "--ctx", "64"); code != exitError || !strings.Contains(errOut, "context window") {
		t.Errorf("context: exit %d %s", code, errOut)
	}
}
