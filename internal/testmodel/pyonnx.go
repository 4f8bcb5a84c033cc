package testmodel

import (
	"os/exec"
	"sync"
)

// PythonONNXHint is how to get the independent ONNX checker tests use.
const PythonONNXHint = "python3-onnx is not installed: run scripts/install-onnx-check.sh (make onnx-check) to install Debian's python3-onnx"

var pyOnce struct {
	sync.Once
	path string
}

// PythonONNX is a python3 that imports Debian's python3-onnx (the
// independent checker: onnx.checker, onnx.load), or "" when none does.
// PATH's python3 comes first, then /usr/bin/python3 (a pyenv python
// earlier on PATH does not see Debian's packages).
func PythonONNX() string {
	pyOnce.Do(func() {
		for _, py := range []string{"python3", "/usr/bin/python3"} {
			if p, err := exec.LookPath(py); err == nil && exec.Command(p, "-c", "import onnx").Run() == nil {
				pyOnce.path = p
				return
			}
		}
	})
	return pyOnce.path
}
