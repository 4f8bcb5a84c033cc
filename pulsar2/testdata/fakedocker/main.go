// Command fakedocker stands in for docker/podman in pulsar2's tests. It
// accepts the subset of `docker run` edgectl uses and runs the fake
// compiler (package fakecompiler, shared with the native fakepulsar2) with
// the container's mounts and environment.
//
// Environment:
//
//	FAKE_DOCKER_LOG      append each invocation's argv (JSON) to this file
//	FAKE_DOCKER_IMAGES   comma-separated images that exist (default pulsar2:5.2)
//	FAKE_PULSAR2_FAIL    tile | groupn | group_size | fp32 | oom | silent | hang
//	FAKE_PULSAR2_VERSION overrides the version (default: the image tag)
//	FAKE_PULSAR2_COS     the cos_sim the -c check prints (default 1.0)
//	FAKE_DOCKER_DAEMON   "down": every command fails as without a daemon
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/edgectl/edgectl/pulsar2/testdata/fakecompiler"
)

func main() {
	args := os.Args[1:]
	if p := os.Getenv("FAKE_DOCKER_LOG"); p != "" {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			b, _ := json.Marshal(append([]string{filepath.Base(os.Args[0])}, args...))
			f.Write(append(b, '\n'))
			f.Close()
		}
	}
	if len(args) == 0 {
		die(125, "docker: no command")
	}
	if os.Getenv("FAKE_DOCKER_DAEMON") == "down" {
		die(1, "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?")
	}
	switch args[0] {
	case "kill":
		fmt.Println(args[len(args)-1])
	case "image", "images":
		for _, im := range images() {
			fmt.Println(im)
		}
	case "run":
		run(args[1:])
	default:
		die(125, "docker: unknown command %q", args[0])
	}
}

func images() []string {
	s := os.Getenv("FAKE_DOCKER_IMAGES")
	if s == "" {
		s = "pulsar2:5.2"
	}
	return strings.Split(s, ",")
}

func die(code int, format string, a ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", a...)
	os.Exit(code)
}

type mount struct{ host, ctr string }

type container struct {
	mounts []mount
	env    map[string]string
	name   string
}

// hostPath maps a container path to the host through the bind mounts.
func (c *container) hostPath(p string) (string, bool) {
	for _, m := range c.mounts {
		if p == m.ctr || strings.HasPrefix(p, m.ctr+"/") {
			return filepath.Join(m.host, strings.TrimPrefix(p, m.ctr)), true
		}
	}
	return "", false
}

func run(args []string) {
	c := &container{env: map[string]string{}}
	i := 0
	for ; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		a := args[i]
		switch a {
		case "--rm", "-i", "-t", "-it", "--init":
		case "-v", "--volume", "-e", "--env", "--name", "--user", "-u", "-w", "--workdir", "--security-opt", "--net", "--network":
			if i+1 >= len(args) {
				die(125, "docker: flag needs an argument: %s", a)
			}
			i++
			v := args[i]
			switch a {
			case "-v", "--volume":
				parts := strings.Split(v, ":")
				if len(parts) < 2 || !filepath.IsAbs(parts[0]) {
					die(125, "docker: invalid volume spec %q", v)
				}
				if st, err := os.Stat(parts[0]); err != nil || !st.IsDir() {
					die(125, "docker: Error response from daemon: invalid mount config: bind source path does not exist: %s", parts[0])
				}
				c.mounts = append(c.mounts, mount{host: parts[0], ctr: parts[1]})
			case "-e", "--env":
				k, val, _ := strings.Cut(v, "=")
				c.env[k] = val
			case "--name":
				c.name = v
			}
		default:
			die(125, "unknown flag: %s\nSee 'docker run --help'.", a)
		}
	}
	if i >= len(args) {
		die(125, "docker: \"docker run\" requires at least 1 argument.")
	}
	image := args[i]
	found := false
	for _, im := range images() {
		if im == image {
			found = true
		}
	}
	if !found {
		fmt.Fprintf(os.Stderr, "Unable to find image '%s' locally\ndocker: Error response from daemon: pull access denied for %s, repository does not exist or may require 'docker login'.\n", image, strings.Split(image, ":")[0])
		os.Exit(125)
	}
	cmd := args[i+1:]
	if len(cmd) < 2 || cmd[0] != "pulsar2" {
		die(127, "fake image runs only pulsar2, got %q", cmd)
	}
	version := os.Getenv("FAKE_PULSAR2_VERSION")
	if version == "" {
		_, version, _ = strings.Cut(image, ":")
	}
	h := fakecompiler.Host{Env: func(k string) string { return c.env[k] }, Path: c.hostPath}
	if cmd[1] == "llm_build" || cmd[1] == "llm_build2" {
		if c.name == "" {
			die(3, "fake: edgectl must name the container so it can kill it")
		}
		if pp := c.env["PYTHONPATH"]; pp != "" {
			d, ok := c.hostPath(pp)
			if !ok {
				die(3, "fake: PYTHONPATH %s is not on a mount", pp)
			}
			if _, err := os.Stat(filepath.Join(d, "sitecustomize.py")); err != nil {
				die(3, "fake: PYTHONPATH %s has no sitecustomize.py", pp)
			}
			h.ShimDir = d
		}
	}
	fakecompiler.Main(h, version, cmd[1:])
}
