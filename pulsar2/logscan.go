package pulsar2

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Log lines that mark progress (axera.md §4.3).
var successMarkers = []struct {
	name string
	re   *regexp.Regexp
}{
	{"prepare", regexp.MustCompile(`prepare llm model done!`)},
	{"build", regexp.MustCompile(`build llm model done!`)},
	{"check", regexp.MustCompile(`check llm model done!`)},
	{"cos_sim", cosSim},
}

var cosSim = regexp.MustCompile(`cos_sim is:\s*([-+0-9.eE]+|nan)`)

// A known failure: a pattern, and what to tell the user.
type knownFailure struct {
	kind string
	re   *regexp.Regexp
	msg  string
	fix  string
}

// Order matters: the first match in a line wins, and the first failing line
// of the log is the one reported (later lines are usually consequences).
var knownFailures = []knownFailure{
	{FailTile, regexp.MustCompile(`TileFailException`),
		"pulsar2's tiler found no tiling for a layer (TileFailException)",
		"lower --kv-cache-len or --max-prefill (fewer/lower prefill groups), or try --chip AX650 with weight type s8; run `edgectl doctor MODEL_DIR` for shapes the NPU cannot tile"},
	{FailGroupN, regexp.MustCompile(`invalid groupN`),
		"pulsar2's tiler asserted \"invalid groupN\" on a weight (float weights it cannot group)",
		"rebuild with --relax-groupn (the shim makes get_group_info return (0, 0)), or build integer weights (-w s8 or s4, not bf16/fp16/fp32) so the tiler groups integers"},
	{FailGroupSize, regexp.MustCompile(`KeyError: ["']group_size["']`),
		"pulsar2 could not read group_size from the checkpoint's quantization_config (KeyError 'group_size')",
		"add \"group_size\": 128 (the GPTQ default) to quantization_config in config.json, or re-export the checkpoint with its quantize_config.json"},
	{FailFP32DType, regexp.MustCompile(`KeyError: .*(?i:fp32|float32)`),
		"pulsar2 has no table entry for an FP32 input dtype (KeyError in get_ifm_dtype)",
		"rebuild with --fp32-as-bf16 (the shim maps the FP32 lookup to BF16), or convert the checkpoint to bf16 first"},
	{FailLambert, regexp.MustCompile(`has no attribute '(?:LambertBackend|lambert\w*)'|No module named '[\w.]*backend\.lambert`),
		"this pulsar2 has no LAMBERT backend (LambertBackend / backend.lambert is missing)",
		"build with --chip AX650 (AX8850 boards run AX650 models); --alias-lambert maps LAMBERT to the AX8860 backend, which only Pulsar2 7.0+ has"},
	{FailOOM, regexp.MustCompile(`(?i)^\s*killed\s*$|MemoryError|std::bad_alloc|Cannot allocate memory|out of memory`),
		"the compiler ran out of memory",
		"give the container more RAM (32 GB for 0.6B-1.7B models, more for larger ones; ax-llm#62), add swap, or lower --parallel"},
	{FailArgs, regexp.MustCompile(`error: (?:unrecognized arguments|argument [^:]+: invalid choice|the following arguments are required)`),
		"pulsar2 rejected the command line",
		"this pulsar2 version takes different flags: pass --builder llm_build or llm_build2 to override the version detection, or use a matching --image"},
}

// logScanner classifies compiler log lines as they stream past.
type logScanner struct {
	lines    int
	markers  []string
	shim     []string
	failure  *knownFailure
	failLine string
	lastErr  string  // the last line that looks like an exception
	minCos   float64 // the lowest cos_sim pulsar2's check printed (valid when cosLine is set)
	cosLine  string
	tail     []string // ring of the last lines
}

const tailLines = 25

var exceptionLine = regexp.MustCompile(`^\s*(?:[\w.]+(?:Error|Exception)|AssertionError|KeyError)\b.*`)

func (s *logScanner) add(line string) {
	s.lines++
	if len(s.tail) == tailLines {
		copy(s.tail, s.tail[1:])
		s.tail = s.tail[:tailLines-1]
	}
	s.tail = append(s.tail, line)
	if strings.HasPrefix(line, ShimLogPrefix) {
		s.shim = append(s.shim, line)
		return
	}
	for _, m := range successMarkers {
		if m.re.MatchString(line) {
			s.markers = append(s.markers, m.name)
		}
	}
	if m := cosSim.FindStringSubmatch(line); m != nil {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil || math.IsNaN(v) {
			v = -1
		}
		if s.cosLine == "" || v < s.minCos {
			s.minCos, s.cosLine = v, line
		}
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

func (s *logScanner) has(marker string) bool {
	for _, m := range s.markers {
		if m == marker {
			return true
		}
	}
	return false
}
