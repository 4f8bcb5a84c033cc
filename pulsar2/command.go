package pulsar2

import (
	"strconv"
	"strings"

	"github.com/edgectl/edgectl/internal/container"
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
	r := container.Run{Runtime: rt, Name: name, Image: image, UID: p.uid, GID: p.gid,
		Mounts: []container.Mount{{Host: p.mountRoot, Path: ctrModel, ReadOnly: true}, {Host: outHost, Path: ctrOut}}}
	if shimHost != "" {
		r.Mounts = append(r.Mounts, container.Mount{Host: shimHost, Path: ctrShim, ReadOnly: true})
		r.Env = append(r.Env, "PYTHONPATH="+ctrShim)
	}
	r.Env = append(r.Env, "FLOAT_MATMUL_USE_CONV_EU=1")
	r.Command = append([]string{"pulsar2"}, p.pulsarArgs(builder)...)
	return r.Argv()[1:]
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
