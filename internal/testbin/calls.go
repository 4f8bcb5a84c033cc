package testbin

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// ReadJSONL reads the log a fake program writes, one JSON value of type T
// a line (its argv, or the call it answered); nil when the fake was never
// run and so wrote no file.
func ReadJSONL[T any](t testing.TB, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

// FlagValues is every value argv gives the flag name (`-v A -v B` → A, B),
// as a fake saw a command line.
func FlagValues(argv []string, name string) []string {
	var out []string
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] == name {
			out = append(out, argv[i+1])
		}
	}
	return out
}

// NoTemporaries fails t for each dot-file left in dir: internal/atomicfile
// names its temporaries (a half-written output, a work directory) so, and a
// run that finished or failed must leave none.
func NoTemporaries(t testing.TB, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary %s left in %s", e.Name(), dir)
		}
	}
}
