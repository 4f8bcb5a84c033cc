package main

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/testmodel"
)

// prepDebris lists what prep must not leave behind in its cache and beside
// OUT: edgectl temporaries, any other hidden entry, and cache entries
// without their step record (a step that did not finish).
func prepDebris(t *testing.T, cache, outParent string) (found []string, bytes int64) {
	t.Helper()
	for _, dir := range []string{filepath.Join(cache, "steps"), filepath.Join(cache, "filehash"), outParent} {
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			p := filepath.Join(dir, e.Name())
			_, tmp := atomicfile.IsTemp(e.Name())
			unfinished := dir == filepath.Join(cache, "steps") && e.IsDir() && !exists(filepath.Join(p, "step.json"))
			if tmp || strings.HasPrefix(e.Name(), ".") || unfinished {
				found = append(found, p)
				bytes += treeBytes(p)
			}
		}
	}
	return found, bytes
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func treeBytes(p string) (n int64) {
	filepath.Walk(p, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// A real `edgectl prep --force` killed with SIGKILL at several moments —
// while importing, with a step written but not committed, in the middle of
// quantizing, while replacing cache entries, with OUT half built, and with
// the old OUT set aside — leaves temporaries; the next run removes every
// one of them, succeeds, and writes the same bytes as an uninterrupted run
// (prep is reproducible, so the digests must match).
func TestPrepSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary many times")
	}
	tmp := t.TempDir()
	src := filepath.Join(tmp, "llama-kill")
	if err := testmodel.Write(src, testmodel.Spec{Hidden: 256, FFN: 512, Layers: 4, Vocab: 2048, Shards: 3}); err != nil {
		t.Fatal(err)
	}
	tok, err := os.ReadFile(filepath.Join(prepFixture, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "tokenizer.json"), tok, 0o644); err != nil {
		t.Fatal(err)
	}
	prepArgs := func(out, cache string, more ...string) []string {
		return append([]string{"prep", src, "--target", "gguf", "-o", out, "--cache-dir", cache}, more...)
	}

	// The reference: one uninterrupted run in a fresh cache.
	ref := filepath.Join(tmp, "ref", "OUT")
	if killed, code, stderr := edgectlRun(t, "", prepArgs(ref, filepath.Join(tmp, "ref", "cache"))...); killed || code != 0 {
		t.Fatalf("reference run: exit %d: %s", code, stderr)
	}
	want := testmodel.TreeDigests(t, ref)

	work := filepath.Join(tmp, "work")
	out, cache := filepath.Join(work, "OUT"), filepath.Join(work, "cache")
	if killed, code, stderr := edgectlRun(t, "", prepArgs(out, cache)...); killed || code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	check := func(moment string) {
		t.Helper()
		got := testmodel.TreeDigests(t, out)
		if len(got) != len(want) {
			t.Errorf("after %s: OUT has %d files, an uninterrupted run %d", moment, len(got), len(want))
		}
		for name, sum := range want {
			if got[name] != sum {
				t.Errorf("after %s: %s differs from an uninterrupted run's", moment, name)
			}
		}
		if left, n := prepDebris(t, cache, work); len(left) > 0 {
			t.Errorf("after %s and a rerun: %d bytes left in %v", moment, n, left)
		}
	}

	moments := []struct{ failpoint, what string }{
		{"prep.import:2", "import, one file copied"},
		{"prep.step:1", "the check step done, not recorded"},
		{"prep.step:2", "the import written, not committed"},
		{"quant.tensor:5", "quantizing, the GGUF half written"},
		{"prep.step:3", "the GGUF written, not committed"},
		{"prep.replace:3", "the old quant entry set aside"},
		{"prep.out:1", "OUT half built"},
		{"prep.swap:1", "OUT replaced, the old one not yet removed"},
	}
	var leftTotal int64
	for i, m := range moments {
		killed, code, stderr := edgectlRun(t, m.failpoint, prepArgs(out, cache, "--force")...)
		if !killed {
			t.Fatalf("%s: not killed (exit %d): %s", m.failpoint, code, stderr)
		}
		_, n := prepDebris(t, cache, work)
		leftTotal += n
		t.Logf("kill -9 at %s (%s): %d bytes of temporaries", m.failpoint, m.what, n)
		// The next run: with --force half of the time, as in the report
		// (9 killed `prep --force`), plain the other half.
		more := []string{}
		if i%2 == 0 {
			more = append(more, "--force")
		}
		if killed, code, stderr := edgectlRun(t, "", prepArgs(out, cache, more...)...); killed || code != 0 {
			t.Fatalf("run after the kill at %s: exit %d: %s", m.failpoint, code, stderr)
		}
		check("a kill at " + m.failpoint)
	}
	if leftTotal == 0 {
		t.Fatal("no kill left a temporary: the test did not exercise the cleanup")
	}

	// And at moments no failpoint chose: SIGKILL after a random delay.
	rng := rand.New(rand.NewPCG(15, 9))
	for range 3 {
		cmd := exec.Command(edgectlBin(t), prepArgs(out, cache, "--force")...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if killed, code, stderr := edgectlRun(t, "", prepArgs(out, cache)...); killed || code != 0 {
			t.Fatalf("run after a random kill: exit %d: %s", code, stderr)
		}
		check("a random kill")
	}
}
