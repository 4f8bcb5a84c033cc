package toolcall

import (
	"os"
	"path/filepath"
)

// templateDir holds real chat templates (format/chattemplate's fixtures,
// see their README for where each comes from).
const templateDir = "../../format/chattemplate/testdata/templates"

// templateFiles reads every template there, by file name.
func templateFiles() (map[string]string, error) {
	paths, err := filepath.Glob(filepath.Join(templateDir, "*.jinja"))
	if err != nil || len(paths) == 0 {
		return nil, os.ErrNotExist
	}
	out := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out[filepath.Base(p)] = string(b)
	}
	return out, nil
}
