package depcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/edgectl/edgectl/"

// The rules, as docs/architecture.md states them. Packages are named
// relative to the module; only non-test imports count.
var (
	// pipeline is the workstation side in data-flow order: each package
	// may import format/*, internal/* and the ones before it.
	pipeline = []string{"hub", "patch", "sherry", "quant", "pulsar2", "rknn/onnxeval", "rknn", "doctor", "artifact", "prep", "prep/oci"}
	// device is the serving side in order: each package may import
	// format/*, internal/*, api and the ones before it, never the pipeline.
	device = []string{"engine", "engine/tokenizer", "engine/sample", "engine/grammar", "engine/toolcall", "engine/cpu", "engine/axcl", "engine/rknnrt", "engine/upstream", "serve", "bench"}
	// testSupport are imported by tests only (and may import anything).
	testSupport = []string{"internal/testbin", "internal/testmodel", "hub/hubtest"}
	// cliOnly is imported by cmd/ only.
	cliOnly = "internal/cli"
	// deviceNeverLinks are modules no device package links, even
	// indirectly: the OCI registry client belongs to pull and prep/oci.
	deviceNeverLinks = []string{"github.com/google/go-containerregistry"}
)

// platforms are where the imports are listed (build-tagged files differ):
// this machine, the device boards and a developer's Mac.
var platforms = [][2]string{{runtime.GOOS, runtime.GOARCH}, {"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "arm64"}}

// TestImportsFlowDown lists the module's import graph with the go tool and
// fails with every import that runs against the direction, each with its
// chain.
func TestImportsFlowDown(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH: the import rules are checked where one is installed")
	}
	g := graph{}
	seen := map[[2]string]bool{}
	for _, p := range platforms {
		if seen[p] {
			continue
		}
		seen[p] = true
		if err := g.list(goTool, p[0], p[1]); err != nil {
			t.Fatal(err)
		}
	}
	for _, names := range [][]string{pipeline, device, testSupport, {cliOnly}} {
		for _, n := range names {
			if _, ok := g[mod+n]; !ok {
				t.Errorf("the rules name %s, which go list does not know: update internal/depcheck and docs/architecture.md", n)
			}
		}
	}
	if v := g.violations(); len(v) > 0 {
		t.Errorf("%d imports run against the direction (rules: docs/architecture.md, \"Rules the depcheck test holds\"):\n\t%s",
			len(v), strings.Join(v, "\n\t"))
	}
}

// TestViolationsNamesEveryBrokenRule runs the checker over a made-up graph
// that breaks each rule once beside imports the rules allow: it must name
// exactly the broken ones, so TestImportsFlowDown passing means something.
func TestViolationsNamesEveryBrokenRule(t *testing.T) {
	g := graph{}
	path := func(p string) string { // module packages by their short names
		if strings.Contains(p, ".") {
			return p
		}
		return mod + p
	}
	edge := func(from string, to ...string) {
		g[path(from)] = g[path(from)]
		for _, d := range to {
			g[path(from)] = append(g[path(from)], path(d))
		}
	}
	// Allowed.
	edge("cmd/edgectl", "serve", "prep", "internal/cli", "engine/cpu")
	edge("format/axllm", "format/hfconfig", "internal/atomicfile", "example.com/reg")
	edge("internal/atomicfile")
	edge("format/hfconfig")
	edge("api", "internal/envconfig")
	edge("internal/envconfig")
	edge("prep", "patch", "artifact", "format/hfconfig")
	edge("artifact")
	edge("patch", "format/hfconfig")
	edge("serve", "api", "engine/axcl", "engine")
	edge("engine")
	edge("internal/testmodel", "format/hfconfig")
	edge("internal/cli", "internal/envconfig")
	// Broken.
	edge("format/gguf", "engine")              // format reaches up
	edge("hub", "patch")                       // pipeline order
	edge("engine/cpu", "quant", "engine/axcl") // device imports the pipeline; a later device package
	edge("quant")
	edge("pulsar2", "internal/cli")      // a library imports the CLI layer
	edge("doctor", "serve")              // the pipeline imports the device side
	edge("prep/oci", "internal/testbin") // a library imports test support
	edge("api", "format/gguf")           // api beyond internal/
	edge("newpkg", "engine")             // no rule yet
	edge("engine/axcl", "format/axllm")
	edge("example.com/reg", "github.com/google/go-containerregistry/pkg/v1")
	want := []string{
		"api → format/gguf", "doctor → serve", "engine/axcl → format/axllm → example.com/reg → github.com/google/go-containerregistry/pkg/v1",
		"engine/cpu → engine/axcl", "engine/cpu → engine/axcl → format/axllm → example.com/reg → github.com/google/go-containerregistry/pkg/v1",
		"engine/cpu → quant", "format/gguf → engine", "hub → patch", "newpkg", "prep/oci → internal/testbin", "pulsar2 → internal/cli",
		"serve → engine/axcl → format/axllm → example.com/reg → github.com/google/go-containerregistry/pkg/v1",
	}
	var got []string
	for _, v := range g.violations() {
		head, _, _ := strings.Cut(v, ":")
		got = append(got, head)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// graph maps each package go list reached (the module's, the standard
// library's and every dependency's) to its non-test imports.
type graph map[string][]string

// list adds the imports of every package in the module, and of their
// dependencies, as built for goos/goarch.
func (g graph) list(goTool, goos, goarch string) error {
	cmd := exec.Command(goTool, "list", "-deps", "-e", "-json=ImportPath,Imports,Error", mod+"...")
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go list for %s/%s: %v: %s", goos, goarch, err, stderr.String())
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var broken []string
	for {
		var p struct {
			ImportPath string
			Imports    []string
			Error      *struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("go list for %s/%s: %v", goos, goarch, err)
		}
		if p.Error != nil { // its imports are not known: the check would pass blind
			broken = append(broken, fmt.Sprintf("%s: %s", p.ImportPath, p.Error.Err))
		}
		for _, d := range p.Imports {
			if !slices.Contains(g[p.ImportPath], d) {
				g[p.ImportPath] = append(g[p.ImportPath], d)
			}
		}
		if _, ok := g[p.ImportPath]; !ok {
			g[p.ImportPath] = nil
		}
	}
	if len(broken) > 0 {
		return fmt.Errorf("go list for %s/%s could not read %d packages (fix the build first):\n\t%s", goos, goarch, len(broken), strings.Join(broken, "\n\t"))
	}
	return nil
}

// violations lists every import of a module package that breaks a rule,
// sorted, each as "CHAIN: the rule it breaks".
func (g graph) violations() []string {
	var out []string
	for pkg, imports := range g {
		rel, ok := strings.CutPrefix(pkg, mod)
		if !ok {
			continue
		}
		may, rule := layerOf(rel)
		if may == nil {
			out = append(out, rel+": no rule says what it may import; add it to internal/depcheck and docs/architecture.md")
			continue
		}
		for _, dep := range imports {
			d, ok := strings.CutPrefix(dep, mod)
			if !ok {
				continue
			}
			if why := forbidden(rel, d); why != "" {
				out = append(out, fmt.Sprintf("%s → %s: %s", rel, d, why))
			} else if !may(d) {
				out = append(out, fmt.Sprintf("%s → %s: %s", rel, d, rule))
			}
		}
		if slices.Contains(device, rel) {
			if chain := g.chainTo(pkg, linksNever); chain != nil {
				out = append(out, strings.Join(chain, " → ")+": no device package links "+strings.Join(deviceNeverLinks, ", ")+" (the device binary has no registry client)")
			}
		}
	}
	slices.Sort(out)
	return out
}

// forbidden is why no package outside cmd/ (or test support) may import
// dep, whatever its layer; "" when it may.
func forbidden(pkg, dep string) string {
	switch {
	case under(dep, "cmd"):
		return "nothing imports cmd/"
	case slices.Contains(testSupport, dep) && !slices.Contains(testSupport, pkg):
		return "only tests import " + strings.Join(testSupport, ", ")
	case dep == cliOnly && !under(pkg, "cmd"):
		return "libraries never import " + cliOnly + " (only cmd/ does: return errors marked with internal/errkind)"
	}
	return ""
}

// layerOf is what pkg may import besides the standard library and other
// modules, and the rule's words; nil when no rule covers pkg.
func layerOf(pkg string) (may func(dep string) bool, rule string) {
	lower := func(dep string) bool { return under(dep, "format") || under(dep, "internal") }
	if i := slices.Index(pipeline, pkg); i >= 0 {
		return func(dep string) bool { return lower(dep) || slices.Contains(pipeline[:i], dep) },
			"a pipeline package imports only format/*, internal/* and the pipeline packages before it (" + strings.Join(pipeline, " → ") + ")"
	}
	if i := slices.Index(device, pkg); i >= 0 {
		return func(dep string) bool { return lower(dep) || dep == "api" || slices.Contains(device[:i], dep) },
			"a device package imports only format/*, internal/*, api and the device packages before it (" + strings.Join(device, " → ") + "), never the pipeline"
	}
	switch {
	case under(pkg, "cmd"), pkg == cliOnly, slices.Contains(testSupport, pkg):
		return func(string) bool { return true }, ""
	case under(pkg, "format"), under(pkg, "internal"):
		return lower, "format/* and internal/* import only format/* and internal/*"
	case pkg == "api":
		return func(dep string) bool { return under(dep, "internal") }, "api imports only internal/*"
	}
	return nil, ""
}

// under reports whether pkg is dir or inside it.
func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// linksNever reports whether a package belongs to a module the device
// side never links.
func linksNever(pkg string) bool {
	for _, m := range deviceNeverLinks {
		if under(pkg, m) {
			return true
		}
	}
	return false
}

// chainTo is the shortest import chain from pkg to a package match
// accepts (module packages shortened), or nil.
func (g graph) chainTo(pkg string, match func(string) bool) []string {
	from := map[string]string{pkg: ""}
	queue := []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if match(p) {
			var chain []string
			for q := p; q != ""; q = from[q] {
				chain = append(chain, strings.TrimPrefix(q, mod))
			}
			slices.Reverse(chain)
			return chain
		}
		deps := slices.Clone(g[p])
		slices.Sort(deps) // the same chain every run
		for _, d := range deps {
			if _, ok := from[d]; !ok {
				from[d] = p
				queue = append(queue, d)
			}
		}
	}
	return nil
}
