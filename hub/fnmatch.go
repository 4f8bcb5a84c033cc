package hub

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// pattern is one --include/--exclude glob with Python fnmatch semantics, as
// huggingface_hub's allow_patterns/ignore_patterns use them: `*` matches any
// run of characters including `/`, `?` one character, `[seq]`/`[!seq]` a set,
// and a pattern ending in `/` means everything under that directory.
type pattern struct {
	src string
	re  *regexp.Regexp
}

func compilePatterns(globs []string) ([]pattern, error) {
	var out []pattern
	for _, g := range globs {
		src := g
		if strings.HasSuffix(g, "/") {
			g += "*" // huggingface_hub's _add_wildcard_to_directories
		}
		re, err := regexp.Compile(fnmatchRegexp(g))
		if err != nil {
			return nil, fmt.Errorf("bad pattern %q: %w", src, err)
		}
		out = append(out, pattern{src: src, re: re})
	}
	return out, nil
}

func (p pattern) match(name string) bool { return p.re.MatchString(name) }

// literal reports whether the pattern names one file (no glob characters).
func (p pattern) literal() bool {
	return !strings.ContainsAny(p.src, "*?[") && !strings.HasSuffix(p.src, "/")
}

// fnmatchRegexp is Python's fnmatch.translate: the whole name must match.
func fnmatchRegexp(pat string) string {
	var b strings.Builder
	b.WriteString(`(?s)\A`)
	for i := 0; i < len(pat); {
		c := pat[i]
		i++
		switch c {
		case '*':
			for i < len(pat) && pat[i] == '*' {
				i++
			}
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		case '[':
			j := i
			if j < len(pat) && pat[j] == '!' {
				j++
			}
			if j < len(pat) && pat[j] == ']' {
				j++
			}
			for j < len(pat) && pat[j] != ']' {
				j++
			}
			if j >= len(pat) {
				b.WriteString(`\[`) // no closing bracket: a literal '['
				continue
			}
			set := pat[i:j]
			i = j + 1
			var s strings.Builder
			s.WriteByte('[')
			if strings.HasPrefix(set, "!") {
				s.WriteByte('^')
				set = set[1:]
			} else if strings.HasPrefix(set, "^") {
				s.WriteByte('\\')
			}
			for k := 0; k < len(set); k++ {
				ch := set[k]
				if ch == '\\' || ch == '[' || ch == ']' {
					s.WriteByte('\\')
				}
				s.WriteByte(ch)
			}
			s.WriteByte(']')
			b.WriteString(s.String())
		default:
			_, n := utf8.DecodeRuneInString(pat[i-1:]) // keep multi-byte names whole
			b.WriteString(regexp.QuoteMeta(pat[i-1 : i-1+n]))
			i += n - 1
		}
	}
	b.WriteString(`\z`)
	return b.String()
}

// filter keeps the names huggingface_hub's filter_repo_objects would keep:
// matched by some include (or no includes given) and by no exclude.
func filter(names []string, include, exclude []pattern) []string {
	var out []string
	for _, n := range names {
		if len(include) > 0 && !anyMatch(include, n) {
			continue
		}
		if anyMatch(exclude, n) {
			continue
		}
		out = append(out, n)
	}
	return out
}

func anyMatch(ps []pattern, name string) bool {
	for _, p := range ps {
		if p.match(name) {
			return true
		}
	}
	return false
}
