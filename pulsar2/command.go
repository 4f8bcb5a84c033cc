package pulsar2

import (
	"fmt"
	"strconv"
	"strings"
)

// Paths inside the container.
const (
	ctrModel = "/edgectl/model"
	ctrOut   = "/edgectl/out"
	ctrShim  = "/edgectl/shim"
)

// containerArgs builds the runtime's argument list (after the runtime's own
// name) for one compiler run.
func (p *plan) containerArgs(rt, image, name, builder, outHost, shimHost string) []string {
	args := []string{"run", "--rm", "--name", name,
		"-v", p.mountRoot + ":" + ctrModel + ":ro",
		"-v", outHost + ":" + ctrOut,
	}
	if shimHost != "" {
		args = append(args, "-v", shimHost+":"+ctrShim+":ro", "-e", "PYTHONPATH="+ctrShim)
	}
	args = append(args, "-e", "FLOAT_MATMUL_USE_CONV_EU=1")
	switch {
	case rt == "podman":
		// Rootless podman maps the user to root in the container; SELinux
		// labels would otherwise block the bind mounts.
		args = append(args, "--security-opt", "label=disable")
	case p.uid > 0:
		// Docker runs as root: keep the output owned by the user.
		args = append(args, "--user", fmt.Sprintf("%d:%d", p.uid, p.gid), "-e", "HOME=/tmp")
	}
	args = append(args, image, "pulsar2")
	return append(args, p.pulsarArgs(builder)...)
}

// pulsarArgs are the compiler's flags (axera.md §4.1-§4.3).
func (p *plan) pulsarArgs(builder string) []string {
	itoa := strconv.Itoa
	a := []string{builder, "--input_path", p.inputPath, "--output_path", ctrOut, "--hidden_state_type", "bf16"}
	if builder == BuilderLLMBuild2 {
		// llm_build2: --prefill_len is the total prefill, stepped by
		// --prefill_step_size; --max_context replaces --kv_cache_len.
		a = append(a, "--max_context", itoa(p.kv+1), "--prefill_len", itoa(max(p.maxPrefill, p.prefill)), "--prefill_step_size", itoa(p.prefill))
	} else {
		a = append(a, "--kv_cache_len", itoa(p.kv), "--prefill_len", itoa(p.prefill))
		for _, g := range p.groups {
			a = append(a, "--last_kv_cache_len", itoa(g))
		}
	}
	a = append(a, "--chip", p.chip, "--parallel", itoa(p.parallel), "-w", p.weightType)
	if p.checkLevel > 0 {
		a = append(a, "-c", itoa(p.checkLevel))
	}
	return a
}

// ShellQuote renders argv as a copy-pasteable shell command.
func ShellQuote(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,%+@") == "" {
			out[i] = a
		} else {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}
