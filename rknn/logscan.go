package rknn

import (
	"regexp"
	"slices"
	"strings"
)

// A known rknn-toolkit2 failure: a pattern, and what to tell the user.
type knownFailure struct {
	kind string
	re   *regexp.Regexp
	msg  string
	fix  string
}

// knownFailures is the one table of rknn-toolkit2 log lines edgectl
// explains. Order matters: the first match in a line wins, and the first
// failing line of a log is the one reported (later lines are usually its
// consequences). The texts are those the toolkit prints (docs/rknn.md
// cites where each was seen).
var knownFailures = []knownFailure{
	{FailRegtask, regexp.MustCompile(`REGTASK(?:: The bit width of field value exceeds the limit| Overflow)|\b0xe010\b`),
		"a vector operation is over the NPU's per-operation scratchpad (REGTASK Overflow, 0xe010)",
		"re-shard with a smaller --sram-kb (edgectl rknn shard MODEL.onnx -o OUT2 --sram-kb 16) so every tile fits; if the log shows a fuse rule firing, add --barrier both"},
	{FailOpset, regexp.MustCompile(`Unsupport(?:ed)? onnx opset \d+`),
		"the shard's ONNX opset is newer than this rknn-toolkit2 reads",
		"export the encoder at opset 12 (torch.onnx.export(..., opset_version=12)) and shard it again, or use a newer rknn-toolkit2"},
	{FailOp, regexp.MustCompile(`No lowering found for: |may not yet support|(?i:unsupport(?:ed)? (?:op|operator)\b)`),
		"rknn-toolkit2 cannot compile an operator of the shard",
		"edgectl rknn shard writes only the operators docs/rknn.md lists; use a newer rknn-toolkit2, or report the operator the log names"},
	{FailConfig, regexp.MustCompile(`unexpected keyword argument '(?:disable_rules|float_dtype|optimization_level)'`),
		"this rknn-toolkit2's rknn.config() does not take an option the manifest's build config sets",
		"use rknn-toolkit2 2.x (it takes disable_rules and float_dtype), or re-shard with --barrier pill, which needs no disable_rules"},
	{FailImage, regexp.MustCompile(`No module named '?rknn`),
		"the Python that ran the build has no rknn-toolkit2 (import rknn.api failed)",
		"install it (pip install rknn_toolkit2-*.whl from Rockchip's rknn-toolkit2 releases) in the image or Python you name"},
	{FailOOM, regexp.MustCompile(`(?i)^\s*killed\s*$|MemoryError|std::bad_alloc|Cannot allocate memory|out of memory`),
		"rknn-toolkit2 ran out of memory",
		"give the container (or machine) more RAM or swap, or cut smaller shards"},
	{FailCompiler, regexp.MustCompile(`buffer overflow!!!`),
		"rknn-toolkit2's compiler overflowed an internal buffer",
		"re-shard with a smaller --sram-kb (smaller tiles), or try another rknn-toolkit2 version"},
}

// fuseRule is the line rknn-toolkit2 prints under "Show op fuse match
// nodes:" for each rewrite it applied.
var fuseRule = regexp.MustCompile(`^\s*Rule:\s*(\w+)`)

// toolkitVersion is the version line the toolkit prints when it starts
// ("I rknn-toolkit2 version: 2.3.2").
var toolkitVersion = regexp.MustCompile(`rknn-toolkit2? version:\s*(\S+)`)

// exceptionLine is a Python exception or an "E …" toolkit error line.
var exceptionLine = regexp.MustCompile(`^\s*(?:[\w.]+(?:Error|Exception)\b|E [\w ]*:|E RKNN:)`)

// logScanner classifies toolkit log lines as they stream past.
type logScanner struct {
	failure  *knownFailure
	failLine string
	fired    []string // fuse rules the toolkit applied
	version  string   // from the toolkit's own version line
	lastErr  string
	wrote    bool // the build script's success line
	tail     []string
}

const tailLines = 25

// doneMark starts the build script's success line.
const doneMark = "EDGECTL-RKNN: wrote "

func (s *logScanner) add(line string) {
	if len(s.tail) == tailLines {
		s.tail = append(s.tail[:0], s.tail[1:]...)
	}
	s.tail = append(s.tail, line)
	if strings.HasPrefix(line, doneMark) {
		s.wrote = true
	}
	if m := fuseRule.FindStringSubmatch(line); m != nil && !slices.Contains(s.fired, m[1]) {
		s.fired = append(s.fired, m[1])
	}
	if m := toolkitVersion.FindStringSubmatch(line); m != nil && s.version == "" {
		s.version = m[1]
	}
	if s.failure == nil {
		for i := range knownFailures {
			if knownFailures[i].re.MatchString(line) {
				s.failure, s.failLine = &knownFailures[i], line
				break
			}
		}
	}
	if exceptionLine.MatchString(line) {
		s.lastErr = line
	}
}
