package pathguard

import (
	"os"
	"path/filepath"
	"testing"
)

func TestInside(t *testing.T) {
	root := t.TempDir()
	out := t.TempDir()
	os.MkdirAll(filepath.Join(root, "m", "sub"), 0o755)
	os.Symlink(out, filepath.Join(root, "away"))            // a linked directory leading out
	os.Symlink(out, filepath.Join(root, "m", "link-model")) // a link itself: inside, as a link
	for p, ok := range map[string]bool{
		filepath.Join(root, "m"):                  true,
		filepath.Join(root, "m", "sub", "x"):      true,
		filepath.Join(root, "m", "link-model"):    true,
		filepath.Join(root, "away", "x"):          false,
		filepath.Join(root, "m", "..", "..", "x"): false,
		root: false,
		out:  false,
	} {
		if err := Inside(root, p); (err == nil) != ok {
			t.Errorf("Inside(root, %s) = %v, want inside %v", p, err, ok)
		}
	}
}
