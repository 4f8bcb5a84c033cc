package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/internal/atomicfile"
)

// A real `edgectl rm` killed with SIGKILL after it renamed what it deletes
// aside, and before it deleted it — of one revision, then of the whole
// repository — leaves no half-visible model: ls shows the revision (then
// the repository) gone and main (then nothing) whole, and the next rm
// removes the leftovers.
func TestRmSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	tc := newTinyCache(t)
	lsModels := func() []localModel {
		t.Helper()
		code, out, errOut := runCmd(t, "", "--json", "ls")
		var ls localModels
		if code != 0 || json.Unmarshal([]byte(out), &ls) != nil {
			t.Fatalf("ls: exit %d\n%s%s", code, out, errOut)
		}
		return ls.Models
	}
	temps := func(dir string) (n int) {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if _, ok := atomicfile.IsTemp(e.Name()); ok {
				n++
			}
		}
		return n
	}

	killed, code, errOut := edgectlRun(t, "rm.aside", "rm", tinyRepo+"@v1", "--yes", "--host", "127.0.0.1:1")
	if !killed {
		t.Fatalf("rm of v1 was not killed at rm.aside: exit %d, %s", code, errOut)
	}
	if ms := lsModels(); len(ms) != 1 || ms[0].Commit != tc.main || ms[0].Size != tc.fixture-111+tc.newGenConf {
		t.Fatalf("after the kill ls shows %+v: want main alone, whole", ms)
	}
	if temps(tc.repoDir()) != 1 {
		t.Fatalf("the renamed snapshot is not beside snapshots/ in %s", tc.repoDir())
	}

	killed, code, errOut = edgectlRun(t, "rm.aside", "rm", tinyRepo, "--yes", "--host", "127.0.0.1:1")
	if !killed {
		t.Fatalf("rm of the repository was not killed: exit %d, %s", code, errOut)
	}
	if ms := lsModels(); len(ms) != 0 {
		t.Fatalf("after the kill ls shows %+v", ms)
	}
	_, _, errOut = runCmd(t, "", "ls")
	if temps(tc.dir) != 1 || !strings.Contains(errOut, "interrupted edgectl rm") {
		t.Fatalf("no leftover reported in %s: %s", tc.dir, errOut)
	}

	// The next rm in the cache sweeps what the killed one left.
	other := filepath.Join(tc.dir, "models--acme--other", "snapshots", strings.Repeat("c", 40))
	os.MkdirAll(other, 0o755)
	if code, _, errOut := runCmd(t, "", "rm", "acme/other", "--yes", "--host", "127.0.0.1:1"); code != 0 {
		t.Fatalf("rm: exit %d, %s", code, errOut)
	}
	if ents, _ := os.ReadDir(tc.dir); len(ents) != 1 || ents[0].Name() != ".locks" {
		t.Errorf("cache root after the next rm: %v", ents)
	}
}
