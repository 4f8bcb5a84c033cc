package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgectl/edgectl/internal/testmodel"
)

func TestEmbedJSONAndLines(t *testing.T) {
	code, out, errOut := runCmd(t, "", "--json", "embed", runFixture, "Once upon a time", "The cat sat.")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc embedDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
	}
	if doc.Pooling != "mean" || !doc.Normalized || len(doc.Embeddings) != 2 || doc.Tokens != doc.Embeddings[0].Tokens+doc.Embeddings[1].Tokens {
		t.Fatalf("%+v", doc)
	}
	for _, e := range doc.Embeddings {
		var n float64
		for _, x := range e.Embedding {
			n += float64(x) * float64(x)
		}
		if len(e.Embedding) != 128 || math.Abs(n-1) > 1e-5 {
			t.Fatalf("%q: %d components, |v|² %v", e.Text, len(e.Embedding), n)
		}
	}
	// Plain output: one line per text, --dimensions components each.
	code, out, errOut = runCmd(t, "", "embed", runFixture, "a", "b", "c", "--dimensions", "8")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || len(strings.Fields(lines[0])) != 8 {
		t.Fatalf("exit %d, %d lines (%q): %s", code, len(lines), out, errOut)
	}
	if code, _, errOut = runCmd(t, "", "embed", runFixture, "a", "--dimensions", "999"); code == 0 || !strings.Contains(errOut, "128") {
		t.Fatalf("--dimensions 999: exit %d: %s", code, errOut)
	}
}

func TestEmbedEncoderAndInspect(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "enc")
	if err := testmodel.WriteBert(dir, testmodel.BertSpec{Words: []string{"edge", "cat"}, Pooling: "cls", Normalize: true, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", "--json", "embed", dir, "edge cat")
	var doc embedDoc
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.Pooling != "cls" || doc.Embeddings[0].Tokens != 4 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	code, out, errOut = runCmd(t, "", "inspect", dir)
	if code != 0 || !strings.Contains(out, "embedding:    embeds only (an encoder: no generation); cls pooling, L2-normalised by its Normalize module") {
		t.Fatalf("inspect of an encoder: exit %d: %s %s", code, out, errOut)
	}
	// run on an encoder: it only embeds.
	if code, _, errOut = runCmd(t, "", "run", dir, "hi"); code == 0 || !strings.Contains(errOut, "only embeds") {
		t.Fatalf("run on an encoder: exit %d: %s", code, errOut)
	}
}
