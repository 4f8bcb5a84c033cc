package main

import (
	"bytes"
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/edgectl/edgectl/internal/cli"
)

// numericFlag is one numeric flag of one command, found by walking the
// command tree: a flag added tomorrow is in this table by itself.
type numericFlag struct {
	path []string // command words, e.g. ["quant", "pack"]
	flag *pflag.Flag
}

func numericFlags(c *cobra.Command, path []string) []numericFlag {
	var out []numericFlag
	seen := map[string]bool{}
	add := func(f *pflag.Flag) {
		if !seen[f.Name] && numericTypes[f.Value.Type()] || isRanged(f) && !seen[f.Name] {
			seen[f.Name] = true
			out = append(out, numericFlag{path, f})
		}
	}
	c.LocalFlags().VisitAll(add)
	for _, sub := range c.Commands() {
		out = append(out, numericFlags(sub, append(append([]string{}, path...), sub.Name()))...)
	}
	return out
}

func isRanged(f *pflag.Flag) bool { _, ok := f.Value.(*rangedValue); return ok }

// Every numeric flag of every command, given NaN, ±Inf, −1, 0 and huge
// values: what its range refuses is a usage error (exit 2) on one line
// naming the flag, never a panic; what it allows is accepted by the flag.
func TestNumericFlagsRefuseWhatTheirRangeRefuses(t *testing.T) {
	root := newRootCmd(&cli.IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	flags := numericFlags(root, nil)
	if len(flags) < 20 {
		t.Fatalf("found only %d numeric flags: is the walk broken?", len(flags))
	}
	values := []string{"NaN", "Inf", "-Inf", "-1", "0", "1e300", "9223372036854775807"}
	for _, nf := range flags {
		if !isRanged(nf.flag) {
			t.Errorf("%s --%s (%s) is not range-checked", strings.Join(nf.path, " "), nf.flag.Name, nf.flag.Value.Type())
			continue
		}
		r := rangeOf(nf.flag)
		if !strings.Contains(nf.flag.Usage, r.String()) {
			t.Errorf("--%s: help %q does not state the range %s", nf.flag.Name, nf.flag.Usage, r)
		}
		for _, v := range values {
			if nf.flag.Value.Type() == "duration" && v != "NaN" && v != "Inf" {
				v += "s"
			}
			name := strings.Join(nf.path, " ") + " --" + nf.flag.Name + "=" + v
			if fresh := flagByName(newRootCmd(&cli.IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}), nf.path, nf.flag.Name); fresh.Value.Set(v) == nil {
				// Accepted: the range must allow it (and it must be a number).
				x, err := numberOf(fresh.Value)
				if err != nil || !r.allows(x) {
					t.Errorf("%s: accepted, but %s does not allow %v", name, r, x)
				}
				continue
			}
			var out, errOut bytes.Buffer
			args := append(append([]string{}, nf.path...), "--"+nf.flag.Name+"="+v)
			code := run(context.Background(), &cli.IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
			msg := errOut.String()
			if code != exitUsage {
				t.Errorf("%s: exit %d, want %d: %s", name, code, exitUsage, msg)
			}
			if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "--"+nf.flag.Name) || len(msg) > 300 {
				t.Errorf("%s: want one line naming the flag, got %q", name, msg)
			}
		}
	}
}

func flagByName(root *cobra.Command, path []string, name string) *pflag.Flag {
	c := root
	for _, w := range path {
		for _, sub := range c.Commands() {
			if sub.Name() == w {
				c = sub
				break
			}
		}
	}
	return c.Flags().Lookup(name)
}

// The cases the hostile pass found, by hand: each exits 2 naming the
// flag and the range, before any work.
func TestNumericFlagsHostilePass(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "MODEL", "--temperature", "NaN", "hi"}, "--temperature"},
		{[]string{"run", "MODEL", "--threads", "10000000", "hi"}, "--threads"},
		{[]string{"run", "MODEL", "--ctx", "-5", "hi"}, "--ctx"},
		{[]string{"run", "MODEL", "--top-p", "0", "hi"}, "(0, 1]"},
		{[]string{"run", "MODEL", "--top-p", "1.5", "hi"}, "--top-p"},
		{[]string{"run", "MODEL", "--repeat-penalty", "-Inf", "hi"}, "infinite"},
		{[]string{"quant", "pack", "IN", "-o", "x.gguf", "--format", "f16", "--threads", "-1"}, "--threads"},
		{[]string{"patch", "layernorm", "DIR", "--fill", "NaN"}, "--fill"},
		{[]string{"serve", "--watchdog", "-1s"}, "--watchdog"},
	} {
		code, _, stderr := runCLI(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d: %q; want exit 2, one line with %q", c.args, code, stderr, c.want)
		}
	}
	// The ceiling of --threads is stated with this machine's CPU count.
	if r := numericRanges["threads"]; !strings.Contains(r.String(), strconv.Itoa(int(maxThreads()))) || r.allows(math.Inf(1)) {
		t.Errorf("--threads range %s", r)
	}
}
