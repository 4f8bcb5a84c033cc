package testmodel

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/edgectl/edgectl/format/safetensors"
)

// HostileCase is one model of the hostile-model corpus (testdata/hostile/
// NAME/case.json): a real fixture model with one hostile change — a chat
// template that reads files or never ends, a config whose sizes would
// exhaust memory, a tokenizer regex that never returns, a shard index that
// points outside the model. run and serve are tested against every case.
type HostileCase struct {
	Name string `json:"-"`
	What string `json:"what"`
	// Base is a fixture under testdata/models whose files are copied.
	Base string `json:"base"`
	// Merge applies a JSON merge patch (RFC 7396) to the named JSON files.
	Merge map[string]json.RawMessage `json:"merge,omitempty"`
	// Files replaces or adds whole files.
	Files map[string]HostileFile `json:"files,omitempty"`
	// Setup creates special files, relative to the model directory.
	Setup []struct {
		FIFO string `json:"fifo,omitempty"`
	} `json:"setup,omitempty"`
	// NaN sets every element of these F32 tensors to NaN.
	NaN     []string       `json:"nan,omitempty"`
	Request HostileRequest `json:"request"`
	Expect  struct {
		// OK: the model must load and answer.
		OK bool `json:"ok,omitempty"`
		// Error must appear (case-insensitively) in the error.
		Error string `json:"error,omitempty"`
	} `json:"expect"`
}

// HostileRequest is what a client sends the hostile model.
type HostileRequest struct {
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages,omitempty"`
	Prompt string `json:"prompt,omitempty"`
}

// HostileFile is the content of a replaced file: text, a JSON value, hex
// bytes, or a safetensors file with this header and no data.
type HostileFile struct {
	Text              *string         `json:"text,omitempty"`
	JSON              json.RawMessage `json:"json,omitempty"`
	Hex               string          `json:"hex,omitempty"`
	SafetensorsHeader json.RawMessage `json:"safetensors_header,omitempty"`
}

// RepoRoot is the repository's root directory (tests run in their
// package's directory, at various depths).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// HostileCases reads the corpus, sorted by name.
func HostileCases() ([]HostileCase, error) {
	root := filepath.Join(RepoRoot(), "testdata", "hostile")
	es, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var cs []HostileCase
	for _, e := range es {
		if !e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, e.Name(), "case.json"))
		if err != nil {
			return nil, err
		}
		var c HostileCase
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("%s/case.json: %w", e.Name(), err)
		}
		c.Name = e.Name()
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	return cs, nil
}

// Materialize writes the case's model into root/NAME/NAME (so that "../x"
// in a case stays inside root, and serve names the model NAME) and returns
// that directory.
func (c HostileCase) Materialize(root string) (string, error) {
	dir := filepath.Join(root, c.Name, c.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	base := filepath.Join(RepoRoot(), "testdata", "models", c.Base)
	es, err := os.ReadDir(base)
	if err != nil {
		return "", err
	}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(base, e.Name()))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			return "", err
		}
	}
	for name, patch := range c.Merge {
		p := filepath.Join(dir, name)
		var doc any
		if b, err := os.ReadFile(p); err == nil {
			if err := json.Unmarshal(b, &doc); err != nil {
				return "", fmt.Errorf("%s: %w", p, err)
			}
		}
		var pv any
		if err := json.Unmarshal(patch, &pv); err != nil {
			return "", err
		}
		out, err := json.MarshalIndent(mergePatch(doc, pv), "", " ")
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(p, out, 0o644); err != nil {
			return "", err
		}
	}
	for name, f := range c.Files {
		b, err := f.bytes()
		if err != nil {
			return "", fmt.Errorf("%s %s: %w", c.Name, name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return "", err
		}
	}
	for _, s := range c.Setup {
		if s.FIFO != "" {
			if err := syscall.Mkfifo(filepath.Join(dir, s.FIFO), 0o644); err != nil {
				return "", fmt.Errorf("mkfifo %s: %w", s.FIFO, err)
			}
		}
	}
	if len(c.NaN) > 0 {
		if err := fillNaN(filepath.Join(dir, "model.safetensors"), c.NaN); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func (f HostileFile) bytes() ([]byte, error) {
	switch {
	case f.Text != nil:
		return []byte(*f.Text), nil
	case f.JSON != nil:
		return f.JSON, nil
	case f.Hex != "":
		return hex.DecodeString(f.Hex)
	case f.SafetensorsHeader != nil:
		var b bytes.Buffer
		binary.Write(&b, binary.LittleEndian, uint64(len(f.SafetensorsHeader)))
		b.Write(f.SafetensorsHeader)
		return b.Bytes(), nil
	}
	return nil, fmt.Errorf("empty file spec")
}

// mergePatch is RFC 7396: objects merge key by key, null deletes, anything
// else replaces.
func mergePatch(doc, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	d, ok := doc.(map[string]any)
	if !ok {
		d = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(d, k)
			continue
		}
		d[k] = mergePatch(d[k], v)
	}
	return d
}

// fillNaN overwrites the named F32 tensors' data with NaN, in place.
func fillNaN(path string, names []string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	h, err := safetensors.ReadHeader(f, st.Size(), path)
	if err != nil {
		return err
	}
	nan := make([]byte, 4)
	binary.LittleEndian.PutUint32(nan, math.Float32bits(float32(math.NaN())))
	for _, n := range names {
		t, ok := h.Tensor(n)
		if !ok || t.DType != safetensors.F32 {
			return fmt.Errorf("%s: no F32 tensor %s", path, n)
		}
		data := bytes.Repeat(nan, int(t.Size()/4))
		if _, err := f.WriteAt(data, h.DataStart()+t.Begin); err != nil {
			return err
		}
	}
	return nil
}

// PeakHeap runs f and returns the most heap memory (live and unswept
// objects) seen while it ran, above what was in use before, sampled every
// few milliseconds: a hostile input that allocates gigabytes shows here
// even when the allocation is freed before f returns.
func PeakHeap(f func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	base := read()
	var peak atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			if v := read(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(done)
	<-stopped
	if p := peak.Load(); p > base {
		return p - base
	}
	return 0
}

// HostileSecret is put in the environment of the hostile-corpus tests: a
// template or file that reaches /proc/self/environ must not get it into
// any output.
const HostileSecret = "hf_hostileCorpusSecretToken0123456789"

// Leaks reports whether out carries the secret or the start of
// /etc/passwd.
func Leaks(out string) bool {
	passwd, _ := os.ReadFile("/etc/passwd")
	return strings.Contains(out, HostileSecret) || (len(passwd) > 32 && strings.Contains(out, string(passwd[:32])))
}
