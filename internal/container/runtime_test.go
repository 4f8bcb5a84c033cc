package container

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"
)

// fakeProgram writes an executable shell script called name into dir.
func fakeProgram(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLookupPicksTheRuntimeOnPath(t *testing.T) {
	dir := t.TempDir()
	fakeProgram(t, dir, "podman", "exit 0")
	t.Setenv("PATH", dir)
	if rt, err := Lookup(""); rt != "podman" || err != nil {
		t.Errorf("Lookup(\"\") with only podman on PATH = %q, %v", rt, err)
	}
	if rt, err := Lookup("podman"); rt != "podman" || err != nil {
		t.Errorf("Lookup(podman) = %q, %v", rt, err)
	}
	_, err := Lookup("docker")
	var nf *NotFoundError
	if !errors.As(err, &nf) || !reflect.DeepEqual(nf.Tried, []string{"docker"}) || err.Error() != "no container runtime: docker not found on PATH" {
		t.Errorf("Lookup(docker) without docker: %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := Lookup(""); err == nil || err.Error() != "no container runtime: docker or podman not found on PATH" {
		t.Errorf("Lookup(\"\") with neither: %v", err)
	}
	if _, err := Lookup("lxc"); !errors.Is(err, ErrUnknownRuntime) {
		t.Errorf("Lookup(lxc) = %v, want ErrUnknownRuntime", err)
	}
}

func TestRunArgvMountsUserAndName(t *testing.T) {
	r := Run{Runtime: "docker", Name: "edgectl-x-1", NoNetwork: true, UID: 1000, GID: 100, Image: "img:1",
		Mounts:  []Mount{{Host: "/in", Path: "/c/in", ReadOnly: true}, {Host: "/out", Path: "/c/out"}},
		Env:     []string{"A=1"},
		Command: []string{"tool", "--flag", "v"}}
	want := []string{"docker", "run", "--rm", "--name", "edgectl-x-1", "--network", "none", "-v", "/in:/c/in:ro", "-v", "/out:/c/out",
		"-e", "A=1", "--user", "1000:100", "-e", "HOME=/tmp", "img:1", "tool", "--flag", "v"}
	if got := r.Argv(); !reflect.DeepEqual(got, want) {
		t.Errorf("docker as uid 1000:\n got %q\nwant %q", got, want)
	}
	// Rootless podman maps the user itself; the bind mounts need SELinux
	// labels off.
	r.Runtime = "podman"
	want = []string{"podman", "run", "--rm", "--name", "edgectl-x-1", "--network", "none", "-v", "/in:/c/in:ro", "-v", "/out:/c/out",
		"-e", "A=1", "--security-opt", "label=disable", "img:1", "tool", "--flag", "v"}
	if got := r.Argv(); !reflect.DeepEqual(got, want) {
		t.Errorf("podman:\n got %q\nwant %q", got, want)
	}
	// A probe: no name, no mounts, no user.
	for _, rt := range []string{"docker", "podman"} {
		p := Run{Runtime: rt, Image: "img:1", Command: []string{"tool", "version"}}
		if got := p.Argv(); !reflect.DeepEqual(got, []string{rt, "run", "--rm", "img:1", "tool", "version"}) {
			t.Errorf("%s probe: %q", rt, got)
		}
	}
	// As root, docker keeps the image's user.
	r.Runtime, r.UID, r.GID = "docker", 0, 0
	for _, a := range r.Argv() {
		if a == "--user" || a == "HOME=/tmp" || a == "--security-opt" {
			t.Errorf("docker as root got %s: %q", a, r.Argv())
		}
	}
}

func TestNameIsFreshAndNamed(t *testing.T) {
	a, b := Name("edgectl-rknn"), Name("edgectl-rknn")
	re := regexp.MustCompile(`^edgectl-rknn-[0-9a-f]{12}$`)
	if !re.MatchString(a) || !re.MatchString(b) || a == b {
		t.Errorf("names %q %q", a, b)
	}
}

// The texts are what docker (24-27) and podman (4-5) print; the last
// three are a tool's own lines.
func TestRuntimeTroubleLines(t *testing.T) {
	const down, missing, neither = "daemon down", "image missing", "the tool's"
	for l, want := range map[string]string{
		"docker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?":                   down,
		"permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock":                        down,
		"Error: unable to connect to Podman socket: failed to connect":                                                                down,
		"Cannot connect to Podman. Please verify your connection to the Linux system":                                                 down,
		"Unable to find image 'rknn-toolkit2:2.3.2' locally":                                                                          missing,
		"Error response from daemon: No such image: pulsar2:5.2":                                                                      missing,
		"docker: Error response from daemon: pull access denied for pulsar2, repository does not exist or may require 'docker login'": missing,
		"Error: pulsar2:5.2: image not known":                                                                                         missing,
		"E RKNN: failed to load model":                                                                                                neither,
		"KeyError: 'group_size'":                                                                                                      neither,
		"I rknn-toolkit2 version: 2.3.2":                                                                                              neither,
	} {
		got := neither
		switch {
		case DaemonDown(l) && ImageMissing(l):
			got = "both"
		case DaemonDown(l):
			got = down
		case ImageMissing(l):
			got = missing
		}
		if got != want {
			t.Errorf("%q read as %s, want %s", l, got, want)
		}
	}
	for code, want := range map[int]bool{0: false, 1: false, 124: false, 125: true, 126: true, 127: true, 137: false} {
		if DidNotStart(code) != want {
			t.Errorf("DidNotStart(%d) = %v", code, !want)
		}
	}
}
