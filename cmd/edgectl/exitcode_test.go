package main

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/internal/pathguard"
)

// TestExitCodesMatchDocs: docs/exit-codes.md's table and exitTable list the
// same codes with the same meanings, in the same order.
func TestExitCodesMatchDocs(t *testing.T) {
	b, err := os.ReadFile("../../docs/exit-codes.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`^\| (\d+) \| (.+) \| [^|]+ \|$`)
	var docs []exitRow
	for _, line := range strings.Split(string(b), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			code, _ := strconv.Atoi(m[1])
			docs = append(docs, exitRow{code: code, meaning: m[2]})
		}
	}
	if len(docs) != len(exitTable) {
		t.Errorf("docs/exit-codes.md lists %d codes, exitTable %d", len(docs), len(exitTable))
	}
	for i := range min(len(docs), len(exitTable)) {
		d, g := docs[i], exitTable[i]
		if d.code != g.code || d.meaning != g.meaning {
			t.Errorf("row %d: docs say %d %q, exitTable %d %q", i, d.code, d.meaning, g.code, g.meaning)
		}
	}
	if signalCode(syscall.SIGINT) != exitSIGINT || signalCode(syscall.SIGTERM) != exitSIGTERM {
		t.Errorf("signal codes %d %d, table %d %d", signalCode(syscall.SIGINT), signalCode(syscall.SIGTERM), exitSIGINT, exitSIGTERM)
	}
}

// TestEveryKindHasOneCode: each errkind has exactly one row, codes are
// distinct, and an error of that kind, however wrapped, exits with it.
func TestEveryKindHasOneCode(t *testing.T) {
	codes := map[int]bool{}
	for _, r := range exitTable {
		if codes[r.code] {
			t.Errorf("code %d is listed twice", r.code)
		}
		codes[r.code] = true
	}
	for _, k := range errkind.All() {
		n := 0
		for _, r := range exitTable {
			if r.kind == k {
				n++
			}
		}
		if n != 1 {
			t.Errorf("kind %v has %d rows in exitTable, want 1", k, n)
		}
		err := fmt.Errorf("wrapped: %w", errkind.Errorf(k, "a %v failure", k))
		if got := exitCode(err); got != codeOfKind[k] || got == exitError && k != errkind.Input {
			t.Errorf("kind %v exits %d", k, got)
		}
	}
	if exitCode(nil) != exitOK || exitCode(errors.New("plain")) != exitError {
		t.Error("no error must exit 0 and an error without a kind 1")
	}
	// A library type that marks its errors: pathguard's refusals are usage.
	if exitCode(&pathguard.Error{Output: "a", Input: "b", Reason: "it is the input file"}) != exitUsage {
		t.Error("a pathguard refusal does not exit 2")
	}
}
