package rknn

import (
	"strings"
	"testing"
)

// TestLogScanKnownFailures: the texts rknn-toolkit2 prints (as reported in
// its issue tracker, and the SHARD write-up's "REGTASK Overflow (0xe010)")
// map to their failure kinds; the version and applied fuse rules are read;
// tqdm's \r redraws split into lines.
func TestLogScanKnownFailures(t *testing.T) {
	for line, kind := range map[string]string{
		"E RKNN: [01:23:24.972] REGTASK: The bit width of field value exceeds the limit, target: v2, offset: 0x5048, shift = 19, limit: 0x1fff, value: 0x6b90": FailRegtask,
		"E RKNN: REGTASK Overflow (0xe010)":                                                    FailRegtask,
		"E load_onnx: Unsupport onnx opset 19, need <= 12!":                                    FailOpset,
		"No lowering found for: /Einsum, node type = Einsum, use CustomOperatorLower instead.": FailOp,
		"TypeError: config() got an unexpected keyword argument 'disable_rules'":               FailConfig,
		"ModuleNotFoundError: No module named 'rknn'":                                          FailImage,
		"Killed": FailOOM,
		"E RKNN: [19:07:42.147] buffer overflow!!!": FailCompiler,
	} {
		sc := &logScanner{}
		sc.add("I rknn building ...")
		sc.add(line)
		if sc.failure == nil || sc.failure.kind != kind || sc.failLine != line {
			t.Errorf("%q: got %+v, want %s", line, sc.failure, kind)
		}
	}
	sc := &logScanner{}
	var lines []string
	scanLines(strings.NewReader("I rknn-toolkit2 version: 2.3.2+81f21f4d\nI Loading :  50%|█\rI Loading : 100%|██\r\nW build: Show op fuse match nodes:\nRule: fuse_transpose_reshape\nEDGECTL-RKNN: wrote /w/x.rknn"), sc,
		func(l string) { lines = append(lines, l) })
	if len(lines) != 6 || sc.version != "2.3.2+81f21f4d" || len(sc.fired) != 1 || sc.fired[0] != "fuse_transpose_reshape" || !sc.wrote || sc.failure != nil {
		t.Errorf("lines %q, scanner %+v", lines, sc)
	}
}
