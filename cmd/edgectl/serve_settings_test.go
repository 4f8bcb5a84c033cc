package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/serve"
)

// serveEnv are the variables serve reads; each test starts with none set.
var serveEnv = []string{"EDGECTL_HOST", "EDGECTL_MODELS", "EDGECTL_KEEP_ALIVE", "EDGECTL_ORIGINS",
	"EDGECTL_ALLOWED_HOSTS", "EDGECTL_API_KEY"}

func clearServeEnv(t *testing.T) {
	for _, name := range serveEnv {
		t.Setenv(name, "")
	}
}

// resolvedServe parses args with the real serve command, reads config (a
// JSON text written to a file, "" for none) and returns what resolveServe
// makes of all sources.
func resolvedServe(t *testing.T, config string, args ...string) (serveSettings, error) {
	t.Helper()
	if config != "" {
		path := filepath.Join(t.TempDir(), "serve.json")
		if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", path)
	}
	var got serveSettings
	var gotErr error
	ran := false
	io := &cli.IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}
	cmd := newServeCmdWith(io, func(_ context.Context, _ *cli.IO, o *serveOptions) error {
		ran = true
		fc := &serve.FileConfig{}
		if o.Config != "" {
			c, err := serve.ReadConfig(o.Config)
			if err != nil {
				t.Fatal(err)
			}
			fc = c
		}
		got, gotErr = resolveServe(o, fc)
		return nil
	})
	cmd.SetArgs(args)
	cmd.SetOut(io.Out)
	cmd.SetErr(io.ErrOut)
	if err := cmd.Execute(); err != nil || !ran {
		t.Fatalf("serve %q: %v (ran %v)", args, err, ran)
	}
	return got, gotErr
}

func TestServeSettingsPrecedence(t *testing.T) {
	const file = `{"models":["/file/m"],"addr":"127.0.0.2:2000","api_key":"file-key","keep_alive":"10m",
		"origins":["https://file.example"],"allowed_hosts":["file.lan"],"max_queue":7,"watchdog":"9s"}`
	type want struct {
		models         []string
		addr, key      string
		keepAlive      time.Duration
		origins, hosts []string
		maxQueue       int
		watchdog       time.Duration
	}
	defaults := want{addr: "127.0.0.1:11434", keepAlive: 5 * time.Minute, maxQueue: 64, watchdog: 120 * time.Second}
	fromEnv := want{models: []string{"/env/a", "/env/b"}, addr: "127.0.0.3:3000", key: "env-key", keepAlive: serve.KeepAliveNone,
		origins: []string{"https://env.example"}, hosts: []string{"env.lan", "env2.lan"}, maxQueue: 64, watchdog: 120 * time.Second}
	fromFile := want{models: []string{"/file/m"}, addr: "127.0.0.2:2000", key: "file-key", keepAlive: 10 * time.Minute,
		origins: []string{"https://file.example"}, hosts: []string{"file.lan"}, maxQueue: 7, watchdog: 9 * time.Second}
	flags := []string{"--models", "/flag/m", "--addr", "127.0.0.4:4000", "--api-key", "flag-key", "--keep-alive", "-1",
		"--origins", "https://flag.example", "--allowed-hosts", "flag.lan", "--max-queue", "3", "--watchdog", "2s"}
	fromFlags := want{models: []string{"/flag/m"}, addr: "127.0.0.4:4000", key: "flag-key", keepAlive: api.Forever,
		origins: []string{"https://flag.example"}, hosts: []string{"flag.lan"}, maxQueue: 3, watchdog: 2 * time.Second}

	setEnv := func(t *testing.T) {
		t.Setenv("EDGECTL_MODELS", "/env/a"+string(os.PathListSeparator)+"/env/b")
		t.Setenv("EDGECTL_HOST", "http://127.0.0.3:3000/")
		t.Setenv("EDGECTL_API_KEY", "env-key")
		t.Setenv("EDGECTL_KEEP_ALIVE", "0")
		t.Setenv("EDGECTL_ORIGINS", "https://env.example")
		t.Setenv("EDGECTL_ALLOWED_HOSTS", "env.lan, env2.lan")
	}
	cases := []struct {
		name   string
		env    bool
		config string
		flags  []string
		want   want
	}{
		{"defaults", false, "", nil, defaults},
		{"environment alone", true, "", nil, fromEnv},
		{"config alone", false, file, nil, fromFile},
		{"flags alone", false, "", flags, fromFlags},
		{"config over environment", true, file, nil, fromFile},
		{"flags over environment", true, "", flags, fromFlags},
		{"flags over config", false, file, flags, fromFlags},
		{"flags over config over environment", true, file, flags, fromFlags},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clearServeEnv(t)
			if c.env {
				setEnv(t)
			}
			s, err := resolvedServe(t, c.config, c.flags...)
			if err != nil {
				t.Fatal(err)
			}
			got := want{s.Models, s.Addr, s.APIKey, s.KeepAlive, s.Origins, s.AllowedHosts, s.MaxQueue, s.Watchdog}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// TestServeFlagsBeatConfigLanes: budgets and --ctx given as flags win over
// the config file's lanes (the file once replaced them), and the file's
// lanes win over the flags' defaults.
func TestServeFlagsBeatConfigLanes(t *testing.T) {
	clearServeEnv(t)
	const file = `{"lanes":{"cpu":{"budget_mb":4096,"ctx":512,"threads":2},"axcl":{"budget_mb":3000,"parallel":1}}}`
	cases := []struct {
		name        string
		config      string
		flags       []string
		cpu, npu    int64
		cpuMax, ctx int
		threads     int
	}{
		{"defaults", "", nil, 0, 7040, 3, 0, 0},
		{"flags alone", "", []string{"--cpu-budget-mb", "100", "--npu-budget-mb", "200", "--ctx", "256"}, 100, 200, 0, 256, 0},
		{"config alone", file, nil, 4096, 3000, 0, 512, 2},
		{"flags over config", file, []string{"--cpu-budget-mb", "100", "--npu-budget-mb", "200", "--ctx", "256"}, 100, 200, 0, 256, 2},
		{"one flag over config", file, []string{"--npu-budget-mb", "200"}, 4096, 200, 0, 512, 2},
		{"--cpu-budget-mb 0 over config", file, []string{"--cpu-budget-mb", "0"}, 0, 3000, 3, 512, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := resolvedServe(t, c.config, c.flags...)
			if err != nil {
				t.Fatal(err)
			}
			cpu, npu := s.Lanes[serve.LaneCPU], s.Lanes[serve.LaneAxcl]
			if cpu.BudgetMB != c.cpu || npu.BudgetMB != c.npu || cpu.MaxLoaded != c.cpuMax || cpu.Context != c.ctx || cpu.Threads != c.threads {
				t.Errorf("cpu lane %+v, axcl lane %+v; want cpu budget %d max_loaded %d ctx %d threads %d, axcl budget %d",
					cpu, npu, c.cpu, c.cpuMax, c.ctx, c.threads, c.npu)
			}
		})
	}
}

// TestServeEnvironmentErrorsNameTheVariable: a bad value in the environment
// is a usage error (exit 2) that says which variable holds it.
func TestServeEnvironmentErrorsNameTheVariable(t *testing.T) {
	for name, value := range map[string]string{
		"EDGECTL_HOST":       "box:port",
		"EDGECTL_KEEP_ALIVE": "soon",
	} {
		t.Run(name, func(t *testing.T) {
			clearServeEnv(t)
			t.Setenv(name, value)
			_, err := resolvedServe(t, "")
			if exitCode(err) != exitUsage || !strings.Contains(err.Error(), name) {
				t.Fatalf("%s=%q: %v (exit %d); want exit 2 naming the variable", name, value, err, exitCode(err))
			}
			// A flag given on the command line wins, so the bad value is not used.
			flag := map[string]string{"EDGECTL_HOST": "--addr=127.0.0.1:1", "EDGECTL_KEEP_ALIVE": "--keep-alive=1m"}[name]
			if _, err := resolvedServe(t, "", flag); err != nil {
				t.Fatalf("%s=%q with %s: %v; want the flag to win", name, value, flag, err)
			}
		})
	}
	// A non-loopback EDGECTL_HOST needs a key like a non-loopback --addr.
	clearServeEnv(t)
	t.Setenv("EDGECTL_HOST", "0.0.0.0")
	if _, err := resolvedServe(t, ""); exitCode(err) != exitUsage {
		t.Fatalf("EDGECTL_HOST=0.0.0.0 without a key: %v; want exit 2", err)
	}
	t.Setenv("EDGECTL_API_KEY", "k")
	if s, err := resolvedServe(t, ""); err != nil || s.Addr != "0.0.0.0:11434" {
		t.Fatalf("EDGECTL_HOST=0.0.0.0 with EDGECTL_API_KEY: %+v, %v", s, err)
	}
}

// TestServeRunsFromTheEnvironmentAlone: with no flags, EDGECTL_HOST,
// EDGECTL_MODELS and EDGECTL_API_KEY reach the running server.
func TestServeRunsFromTheEnvironmentAlone(t *testing.T) {
	clearServeEnv(t)
	t.Setenv("EDGECTL_HOST", "http://127.0.0.1:0")
	t.Setenv("EDGECTL_MODELS", "../../testdata/models")
	t.Setenv("EDGECTL_API_KEY", "env-key")
	ev := serveJSON(t)
	if !strings.HasPrefix(ev.URL, "http://127.0.0.1:") || !ev.Auth || len(ev.Models) == 0 {
		t.Fatalf("listening event %+v", ev.listening)
	}
	for key, want := range map[string]int{"": http.StatusUnauthorized, "env-key": http.StatusOK} {
		req, _ := http.NewRequest(http.MethodGet, ev.URL+"/v1/models", nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("/v1/models with key %q: %d, want %d", key, resp.StatusCode, want)
		}
	}
	if code := ev.Stop(); code != 0 {
		t.Errorf("exit %d: %s", code, ev.ErrOut)
	}
}
