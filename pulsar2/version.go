package pulsar2

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Builders: llm_build (Pulsar2 ≤ 5.x) and llm_build2 (6.0 and later), which
// drops --kv_cache_len/--last_kv_cache_len for --max_context and
// --prefill_step_size (axera.md §4.2).
const (
	BuilderLLMBuild  = "llm_build"
	BuilderLLMBuild2 = "llm_build2"
)

var versionLine = regexp.MustCompile(`(?m)^\s*version\s*:\s*v?([0-9][0-9A-Za-z.+_-]*)`)

// ParseVersion reads the version from `pulsar2 version` output
// ("version: 5.2\ncommit: …").
func ParseVersion(out string) (string, error) {
	m := versionLine.FindStringSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("no \"version:\" line in `pulsar2 version` output %q", firstLines(out, 3))
	}
	return m[1], nil
}

// versionParts splits "5.2-patch1" into numbers [5 2 1]-ish for ordering;
// only leading numeric fields count.
func versionParts(v string) []int {
	var out []int
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r < '0' || r > '9' }) {
		n, err := strconv.Atoi(f)
		if err != nil {
			break
		}
		out = append(out, n)
	}
	return out
}

// CompareVersions orders two pulsar2 versions numerically.
func CompareVersions(a, b string) int {
	pa, pb := versionParts(a), versionParts(b)
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y int
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// BuilderFor picks the llm builder a pulsar2 version has.
func BuilderFor(version string) string {
	if p := versionParts(version); len(p) > 0 && p[0] >= 6 {
		return BuilderLLMBuild2
	}
	return BuilderLLMBuild
}

// newestImage picks the highest-versioned "pulsar2:<version>" from an
// image listing (one repo:tag per line).
func newestImage(listing string) string {
	var tags []string
	for _, l := range strings.Split(listing, "\n") {
		l = strings.TrimSpace(l)
		repo, tag, ok := strings.Cut(l, ":")
		if !ok || (repo != "pulsar2" && !strings.HasSuffix(repo, "/pulsar2")) || len(versionParts(tag)) == 0 {
			continue
		}
		tags = append(tags, l)
	}
	if len(tags) == 0 {
		return ""
	}
	sort.SliceStable(tags, func(i, j int) bool {
		_, ti, _ := strings.Cut(tags[i], ":")
		_, tj, _ := strings.Cut(tags[j], ":")
		return CompareVersions(ti, tj) > 0
	})
	return tags[0]
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " / ")
}
