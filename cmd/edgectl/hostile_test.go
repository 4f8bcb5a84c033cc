package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/internal/testmodel"
)

// Every model of the hostile corpus (testdata/hostile) goes through `run`:
// each ends in seconds with a clear error naming the problem (or, where the
// case says so, answers), with bounded memory, and no output carries a
// local file or the environment.
func TestRunHostileCorpus(t *testing.T) {
	t.Setenv("EDGECTL_HOSTILE_SECRET", testmodel.HostileSecret)
	cases, err := testmodel.HostileCases()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			dir, err := c.Materialize(root)
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"run", dir, "-n", "4", "--temperature", "0"}
			if c.Request.Prompt != "" {
				args = append(args, "--raw", c.Request.Prompt)
			} else {
				args = append(args, c.Request.Messages[0].Content)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out, errOut bytes.Buffer
			var code int
			start := time.Now()
			peak := testmodel.PeakHeap(func() {
				code = run(ctx, &cli.IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
			})
			took := time.Since(start)
			t.Logf("%s: exit %d in %v, peak heap +%d MiB: %s", c.What, code, took.Round(time.Millisecond), peak>>20, lastLine(errOut.String()))
			if took > 10*time.Second {
				t.Errorf("took %v; a hostile model must fail within seconds", took)
			}
			if peak > 512<<20 {
				t.Errorf("peak heap grew by %d MiB", peak>>20)
			}
			all := out.String() + errOut.String()
			if testmodel.Leaks(all) {
				t.Fatalf("output carries a local file or the environment:\n%s", all)
			}
			if c.Expect.OK {
				if code != 0 {
					t.Fatalf("exit %d, want an answer: %s", code, errOut.String())
				}
				return
			}
			if code == 0 {
				t.Fatalf("exit 0, want an error containing %q; output %q", c.Expect.Error, out.String())
			}
			// The case's name is in every path: match the rest.
			msg := strings.ReplaceAll(errOut.String(), c.Name, "CASE")
			if !strings.Contains(strings.ToLower(msg), strings.ToLower(c.Expect.Error)) {
				t.Errorf("error does not mention %q:\n%s", c.Expect.Error, msg)
			}
		})
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// inspect and doctor read every hostile model in bounded time and memory;
// doctor blocks (exit 4) each model no runtime can load: absurd config
// sizes, unusable tokenizers, shard indexes that leave the directory, and
// damaged safetensors.
func TestInspectDoctorHostileCorpus(t *testing.T) {
	cases, err := testmodel.HostileCases()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	unloadable := regexp.MustCompile(`^(cfg-(heads|negative|null|vocab|zero)|tok-(id|empty)|index-|st-(header|offsets))`)
	for _, c := range cases {
		dir, err := c.Materialize(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"inspect", "doctor"} {
			var out, errOut bytes.Buffer
			var code int
			start := time.Now()
			peak := testmodel.PeakHeap(func() {
				code = run(context.Background(), &cli.IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, []string{cmd, dir})
			})
			if took := time.Since(start); took > 10*time.Second || peak > 512<<20 {
				t.Errorf("%s %s: %v, peak heap +%d MiB", cmd, c.Name, took, peak>>20)
			}
			if testmodel.Leaks(out.String() + errOut.String()) {
				t.Errorf("%s %s: output carries a local file or the environment", cmd, c.Name)
			}
			switch {
			case code != 0 && code != 1 && code != 3 && code != 4:
				t.Errorf("%s %s: exit %d: %s", cmd, c.Name, code, errOut.String())
			case cmd == "doctor" && unloadable.MatchString(c.Name) && code != 4:
				t.Errorf("doctor %s: exit %d, want 4 (blocked):\n%s", c.Name, code, out.String())
			}
		}
	}
}
