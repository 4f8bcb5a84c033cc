package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/internal/testmodel"
)

// Every spelling of the AX650 NPU, as the chip table (pulsar2/chips.go)
// accepts it.
var ax650Spellings = []string{"AX650", "ax650", "AX650N", "ax650n", "AX650A", "AX8850", "ax8850", "AX-M1", "ax-m1", "LLM-8850", "llm-8850"}

func TestPulsar2BuildTakesEveryChipName(t *testing.T) {
	withFakeDocker(t)
	model := tinyQwen(t)
	out := filepath.Join(t.TempDir(), "out")
	for _, chip := range append(ax650Spellings, "AX620E", "ax620e", "LAMBERT", "lambert") {
		want := "--chip AX650 "
		if up := strings.ToUpper(chip); up == "AX620E" || up == "LAMBERT" {
			want = "--chip " + up + " "
		}
		code, stdout, stderr := pulsar2CLI(t, "pulsar2", "build", model, "-o", out, "--image", "pulsar2:5.2", "--dry-run", "--chip", chip)
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("--chip %s: exit %d, stdout lacks %q: %q %q", chip, code, want, stdout, stderr)
		}
		if strings.EqualFold(chip, "AX-M1") && !strings.Contains(stderr, "AX-M1 card is an AX8850") {
			t.Errorf("--chip %s: no note that it builds for AX650: %q", chip, stderr)
		}
	}
	code, _, stderr := pulsar2CLI(t, "pulsar2", "build", model, "-o", out, "--image", "pulsar2:5.2", "--dry-run", "--chip", "AX9999")
	if code == 0 || !strings.Contains(stderr, `unknown --chip "AX9999"`) || !strings.Contains(stderr, "AX-M1") {
		t.Errorf("--chip AX9999: exit %d %q", code, stderr)
	}
}

func TestDoctorTakesEveryTargetName(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "llama")
	if err := testmodel.Write(dir, testmodel.Spec{}); err != nil {
		t.Fatal(err)
	}
	for _, target := range ax650Spellings {
		code, r := doctorJSON(t, dir, "--target", target)
		if r.Target != "ax650" || code == exitUsage {
			t.Errorf("--target %s: exit %d target %q", target, code, r.Target)
		}
	}
	for _, bad := range []string{"AX620E", "tpu"} {
		code, _, stderr := runCLI(t, "doctor", dir, "--target", bad)
		if code != exitUsage || !strings.Contains(stderr, "ax-m1") {
			t.Errorf("--target %s: exit %d %q", bad, code, stderr)
		}
	}
}

// prep resolves --target and --chip before touching anything: an invalid
// --format after them shows both were accepted as the ax650 target.
func TestPrepTakesEveryChipName(t *testing.T) {
	tmp := t.TempDir()
	for _, name := range ax650Spellings {
		for _, args := range [][]string{{"--target", name}, {"--target", "ax650", "--chip", name}} {
			argv := append([]string{"prep", "some/model", "-o", filepath.Join(tmp, "out"), "--cache-dir", filepath.Join(tmp, "cache"), "--format", "bogus"}, args...)
			code, _, stderr := runCLI(t, argv...)
			if code != exitUsage || !strings.Contains(stderr, `--format "bogus": this target takes s4, s8`) {
				t.Errorf("%v: exit %d %q", args, code, stderr)
			}
		}
	}
	code, _, stderr := runCLI(t, "prep", "some/model", "-o", filepath.Join(tmp, "out"), "--target", "ax650", "--chip", "AX9999")
	if code != exitUsage || !strings.Contains(stderr, `unknown --chip "AX9999"`) {
		t.Errorf("--chip AX9999: exit %d %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "prep", "some/model", "-o", filepath.Join(tmp, "out"), "--target", "AX620E")
	if code != exitUsage || !strings.Contains(stderr, "unknown --target") {
		t.Errorf("--target AX620E: exit %d %q", code, stderr)
	}
}
