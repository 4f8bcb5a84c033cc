package axcl

import (
	"os/exec"
	"strings"
	"testing"
)

// The device binary links this lane, so the lane must not link the
// compiler driver (pulsar2) or its registry client: it reads compiled
// directories through format/axllm. Nor may the pipeline's doctor link the
// lane (cmd/edgectl wires doctor --device to CheckBoard). format/axllm
// itself stays inside format/ and internal/.
func TestImportsFlowDown(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	const mod = "github.com/edgectl/edgectl/"
	rules := map[string]func(dep string) bool{ // package → is dep forbidden
		mod + "engine/axcl": func(dep string) bool {
			if strings.Contains(dep, "go-containerregistry") {
				return true
			}
			for _, p := range []string{"pulsar2", "doctor", "prep", "hub", "patch", "quant", "sherry"} {
				if dep == mod+p || strings.HasPrefix(dep, mod+p+"/") {
					return true
				}
			}
			return false
		},
		mod + "doctor": func(dep string) bool { return dep == mod+"engine/axcl" },
		mod + "format/axllm": func(dep string) bool {
			return strings.HasPrefix(dep, mod) && !strings.HasPrefix(dep, mod+"format/") && !strings.HasPrefix(dep, mod+"internal/")
		},
	}
	args := []string{"list", "-e", "-f", `{{.ImportPath}} {{join .Deps " "}}`} // -e: a broken file elsewhere is not this test's failure
	for pkg := range rules {
		args = append(args, pkg)
	}
	out, err := exec.Command(goTool, args...).Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	seen := 0
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		forbidden := rules[f[0]]
		if forbidden == nil {
			t.Fatalf("go list answered for %q", f[0])
		}
		seen++
		for _, dep := range f[1:] {
			if forbidden(dep) {
				t.Errorf("%s imports %s (go list -deps %s)", f[0], dep, f[0])
			}
		}
	}
	if seen != len(rules) {
		t.Fatalf("go list answered for %d of %d packages:\n%s", seen, len(rules), out)
	}
}
