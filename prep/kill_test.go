package prep

import (
	"github.com/edgectl/edgectl/internal/progress"
	"github.com/edgectl/edgectl/internal/testbin"
	"github.com/edgectl/edgectl/internal/testmodel"

	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A prep process SIGKILLed while the compiler runs leaves the finished
// steps in the cache; the next run skips them (the JSON events list them)
// and produces the same OUT/ as an uninterrupted run.
func TestKilledRunResumes(t *testing.T) {
	fakeBins(t)
	bin := testbin.Build(t, "github.com/edgectl/edgectl/prep/testdata/prepmain", "prepmain")
	tmp := t.TempDir()
	src := filepath.Join(tmp, "llama-tiny")
	writeLlama(t, src)
	o := ax650Opts(tmp, src)

	cmd := exec.Command(bin, o.Source, o.Target, o.Out, o.CacheDir, o.Image)
	cmd.Env = append(os.Environ(), "FAKE_PULSAR2_FAIL=hang")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the hung fake compiler dies with it
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	killed := false
	defer func() {
		if !killed {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
		}
	}()
	var before []string
	sc := bufio.NewScanner(stdout)
	deadline := time.AfterFunc(60*time.Second, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer deadline.Stop()
	for sc.Scan() {
		var e progress.Event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			t.Fatalf("not an event: %s", sc.Text())
		}
		if e.Event == "done" {
			before = append(before, e.Step)
		}
		if e.Event == "start" && e.Step == "pulsar2" {
			// The compiler is running (and hangs): kill -9 the whole run.
			time.Sleep(200 * time.Millisecond)
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			killed = true
			break
		}
	}
	if !killed {
		t.Fatalf("prep never reached the compiler; done: %v", before)
	}
	if strings.Join(before, ",") != "source,check,import,doctor,patch-config,layernorm,quant" {
		t.Fatalf("steps done before the kill: %v", before)
	}
	if _, err := os.Stat(o.Out); !os.IsNotExist(err) {
		t.Fatalf("a killed run left OUT behind: %v", err)
	}

	// Resume with the same binary (a development build keys its steps by
	// its own digest, so the test's own binary would start over).
	evs := runPrepmain(t, bin, o)
	if s := stepsWith(evs, "skip"); strings.Join(s, ",") != "check,import,doctor,patch-config,layernorm,quant" {
		t.Errorf("resumed run skipped %v", s)
	}
	if s := stepsWith(evs, "done"); strings.Join(s, ",") != "source,pulsar2,out" {
		t.Errorf("resumed run did %v", s)
	}

	// Same bytes as a run that was never interrupted.
	clean := o
	clean.Out, clean.CacheDir = filepath.Join(tmp, "clean", "OUT"), filepath.Join(tmp, "clean", "cache")
	runPrepmain(t, bin, clean)
	a, b := testmodel.ReadTree(t, o.Out), testmodel.ReadTree(t, clean.Out)
	if len(a) != len(b) {
		t.Fatalf("%d files vs %d", len(a), len(b))
	}
	for k, v := range a {
		if string(v) != string(b[k]) {
			t.Errorf("%s differs from an uninterrupted run", k)
		}
	}
}

// runPrepmain runs the prep binary to completion and returns its events.
func runPrepmain(t *testing.T, bin string, o Options) []progress.Event {
	t.Helper()
	out, err := exec.Command(bin, o.Source, o.Target, o.Out, o.CacheDir, o.Image).Output()
	if err != nil {
		t.Fatalf("prepmain: %v", err)
	}
	log := eventLog{}
	log.out.Write(out)
	return log.events(t)
}
