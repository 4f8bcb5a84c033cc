package tokenizer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dlclark/regexp2"
)

// matchTimeout bounds one match of a pre-tokenizer regex. regexp2
// backtracks: a pattern such as (a+)+$ from a hostile tokenizer.json takes
// exponential time on "aaaa…b" and would pin a core for good. Legitimate
// pre-tokenizer patterns match a word in microseconds. A variable so tests
// can shorten it.
var matchTimeout = time.Second

// ErrRegexTimeout is what a pre-tokenizer regex that ran past its match
// timeout returns (test with errors.Is).
var ErrRegexTimeout = errors.New("tokenizer regex match timed out")

// RegexTimeoutError says which regex of which tokenizer ran away, and on
// how long a piece of input — never the input itself.
type RegexTimeoutError struct {
	Source  string // the tokenizer file (or metadata) the pattern came from
	What    string // e.g. "pre_tokenizer Split regex"
	Pattern string
	Limit   time.Duration
	Runes   int // length of the piece being split
}

func (e *RegexTimeoutError) Error() string {
	p := e.Pattern
	if len(p) > 80 {
		p = p[:77] + "..."
	}
	return fmt.Sprintf("%s: %s %q took longer than %v on a %d-character piece of the input; the model's tokenizer is hostile or broken (replace it with the original tokenizer of the model)",
		e.Source, e.What, p, e.Limit, e.Runes)
}

func (e *RegexTimeoutError) Is(target error) bool { return target == ErrRegexTimeout }

// splitRegex is one pre-tokenizer split and where it came from.
type splitRegex struct {
	re   *regexp2.Regexp
	what string
}

func compileSplit(pattern, what string) (splitRegex, error) {
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return splitRegex{}, err
	}
	re.MatchTimeout = matchTimeout
	return splitRegex{re: re, what: what}, nil
}

// builtinSplit compiles one of the package's own patterns.
func builtinSplit(pattern, what string) splitRegex {
	sr, err := compileSplit(pattern, what)
	if err != nil {
		panic(err)
	}
	return sr
}

// ctxCheckEvery is how many matches (or merges) pass between looks at the
// context: often enough to stop within milliseconds, rarely enough to cost
// nothing.
const ctxCheckEvery = 256

// splitIsolated appends the regex matches of s and the gaps between them.
func (t *Tokenizer) splitIsolated(ctx context.Context, out []string, sr splitRegex, s string) ([]string, error) {
	runes := []rune(s)
	last := 0
	fail := func(err error) ([]string, error) {
		if ce := ctx.Err(); ce != nil {
			return nil, ce
		}
		// regexp2's only match error is the timeout; its text quotes the
		// whole input, which must not reach logs or API answers.
		return nil, &RegexTimeoutError{Source: t.source, What: sr.what, Pattern: sr.re.String(), Limit: sr.re.MatchTimeout, Runes: len(runes)}
	}
	m, err := sr.re.FindRunesMatch(runes)
	if err != nil {
		return fail(err)
	}
	for n := 1; m != nil; n++ {
		if m.Index > last {
			out = append(out, string(runes[last:m.Index]))
		}
		if m.Length > 0 {
			out = append(out, string(runes[m.Index:m.Index+m.Length]))
		}
		last = m.Index + m.Length
		if n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if m, err = sr.re.FindNextMatch(m); err != nil {
			return fail(err)
		}
	}
	if last < len(runes) {
		out = append(out, string(runes[last:]))
	}
	return out, nil
}
