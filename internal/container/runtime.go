// Package container is how edgectl runs a vendor tool in a one-shot
// container (docker or podman) or as a native process: finding the
// runtime, the `run` command line (bind mounts, the user mapped, a name so
// a stop can kill it), streaming the child's merged output as log lines
// under a timeout, and reading the runtime's own failures (daemon down,
// image missing, container not started) from its exit and output. What a
// tool's log means stays with the tool's package (pulsar2, rknn).
package container

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
)

// runtimes are the container runtimes edgectl drives, in the order Lookup
// tries them.
var runtimes = []string{"docker", "podman"}

// ErrUnknownRuntime is Lookup's answer for a runtime edgectl does not
// drive (bad input: the caller names its flag and the choices).
var ErrUnknownRuntime = errors.New("not a container runtime edgectl drives: use docker or podman")

// NotFoundError is Lookup's answer when no runtime it tried is on PATH.
type NotFoundError struct{ Tried []string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no container runtime: %s not found on PATH", strings.Join(e.Tried, " or "))
}

// Lookup picks the runtime: want when given (docker or podman), else the
// first of docker and podman on PATH.
func Lookup(want string) (string, error) {
	cands := runtimes
	if want != "" {
		if want != "docker" && want != "podman" {
			return "", ErrUnknownRuntime
		}
		cands = []string{want}
	}
	for _, c := range cands {
		if _, err := exec.LookPath(c); err == nil {
			return c, nil
		}
	}
	return "", &NotFoundError{Tried: cands}
}

// Mount is a bind mount: Host at Path in the container.
type Mount struct {
	Host, Path string
	ReadOnly   bool
}

// Run is one `RUNTIME run --rm` of a tool.
type Run struct {
	Runtime string // docker or podman
	// Name is the container's --name, so that a stop can kill it by name
	// (Process.Name): killing the runtime's CLI alone leaves it running.
	Name      string
	NoNetwork bool // --network none
	Mounts    []Mount
	Env       []string // NAME=VALUE
	// UID and GID are the user whose files the container writes: docker
	// (which runs as root) gets --user UID:GID and HOME=/tmp so that the
	// output stays the user's. 0 leaves the image's user; rootless podman
	// maps the user to root in the container by itself.
	UID, GID int
	Image    string
	Command  []string // the program in the image and its arguments
}

// Argv is the full command line, the runtime first.
func (r Run) Argv() []string {
	args := []string{r.Runtime, "run", "--rm"}
	if r.Name != "" {
		args = append(args, "--name", r.Name)
	}
	if r.NoNetwork {
		args = append(args, "--network", "none")
	}
	for _, m := range r.Mounts {
		v := m.Host + ":" + m.Path
		if m.ReadOnly {
			v += ":ro"
		}
		args = append(args, "-v", v)
	}
	for _, e := range r.Env {
		args = append(args, "-e", e)
	}
	switch {
	case r.Runtime == "podman" && len(r.Mounts) > 0:
		// Rootless podman maps the user to root in the container; SELinux
		// labels would otherwise block the bind mounts.
		args = append(args, "--security-opt", "label=disable")
	case r.Runtime != "podman" && r.UID > 0:
		args = append(args, "--user", fmt.Sprintf("%d:%d", r.UID, r.GID), "-e", "HOME=/tmp")
	}
	return append(append(args, r.Image), r.Command...)
}

// Name is a fresh container name: prefix, a dash and 12 random hex digits.
func Name(prefix string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// What docker and podman print when they cannot reach their daemon (or
// may not use it), and when they do not have the image (edgectl runs with
// no pull: --network none, or an image the user loads).
var (
	daemonDown   = regexp.MustCompile(`Cannot connect to the Docker daemon|permission denied while trying to connect|Is the docker daemon running|(?i:cannot|unable to) connect to Podman`)
	imageMissing = regexp.MustCompile(`Unable to find image|No such image|pull access denied|manifest unknown|image not known|repository does not exist`)
)

// DaemonDown says whether the runtime's output s shows it could not reach
// its daemon, which would otherwise look like the tool's own failure.
func DaemonDown(s string) bool { return daemonDown.MatchString(s) }

// ImageMissing says whether the runtime's output s shows it does not have
// the image.
func ImageMissing(s string) bool { return imageMissing.MatchString(s) }

// DidNotStart says whether a `RUNTIME run` exit status means the
// container never ran its command: 125 (the runtime's own error), 126
// (the command cannot be run) or 127 (no such command in the image).
func DidNotStart(code int) bool { return code == 125 || code == 126 || code == 127 }
