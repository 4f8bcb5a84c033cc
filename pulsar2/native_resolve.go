package pulsar2

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// loopFix is the way out of a pulsar2 that calls itself.
const loopFix = "point --pulsar2-bin at the compiler's own entry point (the pulsar2 console script in the Python environment that has the compiler, e.g. /opt/pulsar2/venv/bin/pulsar2), or make the wrapper exec that absolute path instead of `pulsar2`"

// ResolveNative finds the native compiler named by --pulsar2-bin (a path,
// or a name looked up on PATH) and returns its absolute path with symlinks
// resolved. It refuses the seed's symlink loop before anything runs: a
// chain of links that comes back on itself, or a wrapper script that runs
// `pulsar2` which PATH resolves back to the wrapper, would otherwise recurse
// until the machine runs out of processes.
func ResolveNative(bin string) (string, error) {
	path := bin
	if !strings.ContainsRune(bin, filepath.Separator) {
		lp, err := exec.LookPath(bin)
		if err != nil {
			return "", &BuildError{Kind: FailRuntime, Msg: fmt.Sprintf("--pulsar2-bin %s: not found on PATH", bin),
				Fix: "pass the compiler's full path, or build in the container image (drop --pulsar2-bin)"}
		}
		path = lp
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", &BuildError{Kind: FailRuntime, Msg: err.Error()}
	}
	chain, err := linkChain(abs)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if os.IsNotExist(err) {
			return "", &BuildError{Kind: FailRuntime, Msg: fmt.Sprintf("--pulsar2-bin %s: %s does not exist", bin, strings.Join(chain, " → ")),
				Fix: "pass the path of the installed pulsar2"}
		}
		// A loop through a directory link (EvalSymlinks reports ELOOP).
		return "", &BuildError{Kind: FailRuntime, Msg: fmt.Sprintf("--pulsar2-bin %s: %v (symlink loop)", bin, err), Fix: loopFix}
	}
	st, err := os.Stat(real)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return "", &BuildError{Kind: FailRuntime, Msg: fmt.Sprintf("--pulsar2-bin %s: %s is not an executable file", bin, real),
			Fix: "pass the path of the installed pulsar2 (chmod +x it if it is a script)"}
	}
	if line, n, ok := scriptCallsItself(real); ok {
		via := strings.Join(chain, " → ")
		if chain[len(chain)-1] != real {
			via += " → " + real
		}
		return "", &BuildError{Kind: FailRuntime, Line: line,
			Msg: fmt.Sprintf("--pulsar2-bin %s calls itself (%s): line %d of the script %s runs `pulsar2`, which resolves back to the script (a wrapper loop that would recurse until the machine runs out of processes)",
				bin, via, n, real),
			Fix: loopFix}
	}
	return real, nil
}

// linkChain follows path's own symlinks one hop at a time (so a loop can
// be shown link by link) and fails on a link seen twice.
func linkChain(path string) ([]string, error) {
	chain := []string{path}
	seen := map[string]bool{path: true}
	cur := path
	for {
		fi, err := os.Lstat(cur)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return chain, nil
		}
		t, err := os.Readlink(cur)
		if err != nil {
			return chain, nil
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(cur), t)
		}
		cur = filepath.Clean(t)
		chain = append(chain, cur)
		if seen[cur] || len(chain) > 40 {
			return nil, &BuildError{Kind: FailRuntime,
				Msg: fmt.Sprintf("--pulsar2-bin %s is a symlink loop: %s", path, strings.Join(chain, " → ")),
				Fix: loopFix}
		}
		seen[cur] = true
	}
}

// scriptCallsItself is a cheap check of a #! script: does a command
// position on some line name `pulsar2` (or a path) that resolves to the
// script itself? It returns that line and its number.
func scriptCallsItself(real string) (string, int, bool) {
	f, err := os.Open(real)
	if err != nil {
		return "", 0, false
	}
	defer f.Close()
	head := make([]byte, 2)
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, []byte("#!")) {
		return "", 0, false
	}
	f.Seek(0, io.SeekStart)
	sc := bufio.NewScanner(io.LimitReader(f, 64<<10))
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if n == 1 {
			continue
		}
		for _, c := range commandWords(line) {
			if c != "pulsar2" && !strings.HasSuffix(c, "/pulsar2") {
				continue
			}
			target := c
			if !strings.ContainsRune(c, '/') {
				lp, err := exec.LookPath(c)
				if err != nil {
					continue
				}
				target = lp
			}
			if r, err := filepath.EvalSymlinks(target); err == nil && r == real {
				return strings.TrimSpace(line), n, true
			}
		}
	}
	return "", 0, false
}

// commandWords returns the word in command position of each simple
// command on a shell line (after ; && || | ( and `exec`, `command`, `env`
// and VAR=value prefixes). Quotes are dropped; comments end the line.
func commandWords(line string) []string {
	if i := strings.Index(line, "#"); i >= 0 && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t') {
		line = line[:i]
	}
	line = strings.NewReplacer(`"`, "", `'`, "", "&&", ";", "||", ";", "|", ";", "(", ";", ")", ";", "`", ";", "$;", ";").Replace(line)
	var out []string
	for _, part := range strings.Split(line, ";") {
		for _, w := range strings.Fields(part) {
			switch w {
			case "exec", "command", "env", "nohup", "then", "do", "else", "{", "!", "time":
				continue
			}
			if strings.Contains(w, "=") || strings.HasPrefix(w, "-") {
				continue
			}
			out = append(out, w)
			break
		}
	}
	return out
}
