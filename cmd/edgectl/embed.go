package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
	"github.com/edgectl/edgectl/internal/cli"
)

func init() { register(newEmbedCmd) }

type embedOptions struct {
	Model      string
	Texts      []string
	Dimensions int
	Normalize  bool
	Truncate   bool
	Context    int
	Threads    int
}

func newEmbedCmd(io *cli.IO) *cobra.Command {
	opts := &embedOptions{}
	cmd := &cobra.Command{
		Use:   "embed MODEL TEXT…",
		Short: "Embed texts with a model on the CPU: one vector per text",
		Long: `Embed loads MODEL (a checkpoint directory, a .gguf or a .h1b file, or a Hub id
ORG/NAME[@REV]) into edgectl's CPU engine and prints one embedding per TEXT,
each computed alone: a BERT-family encoder's (all-MiniLM-L6-v2, bge-small,
e5-small), or a decoder's final-norm hidden states. Vectors are pooled as
the model's files say (sentence-transformers' modules.json and
1_Pooling/config.json, a GGUF's pooling_type; mean otherwise) and
L2-normalised as the OpenAI and Ollama APIs return them (--normalize=false:
as the model's own modules leave them). A text longer than the model's
context is an error unless --truncate.

Output: one line per text, its components separated by spaces; --json: a
document with the model, the pooling, each vector and its token count.`,
		Example: `  edgectl embed sentence-transformers/all-MiniLM-L6-v2 "a cat" "a dog" --json
  edgectl embed ./bge-small "query: edge inference" --dimensions 128`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Model, opts.Texts = args[0], args[1:]
			return runEmbed(cmd.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Dimensions, "dimensions", 0, "keep the first N components, renormalised (0: all)")
	f.BoolVar(&opts.Normalize, "normalize", true, "L2-normalise each vector (false: as the model's own modules leave it)")
	f.BoolVar(&opts.Truncate, "truncate", false, "cut texts longer than the context to it instead of failing")
	f.IntVar(&opts.Context, "ctx", 0, "context in tokens (0: the model's own)")
	f.IntVar(&opts.Threads, "threads", 0, "CPU threads (0: all cores)")
	return cmd
}

// embedDoc is the --json document.
type embedDoc struct {
	Model      string        `json:"model"`
	Pooling    string        `json:"pooling"`
	Normalized bool          `json:"normalized"`
	Embeddings []embedVector `json:"embeddings"`
	Tokens     int           `json:"prompt_tokens"`
	Millis     float64       `json:"duration_ms"`
}

type embedVector struct {
	Text      string    `json:"text"`
	Tokens    int       `json:"tokens"`
	Embedding []float32 `json:"embedding"`
}

func runEmbed(ctx context.Context, io *cli.IO, opts *embedOptions) error {
	if opts.Dimensions < 0 {
		return usagef("--dimensions must be ≥ 0 (got %d)", opts.Dimensions)
	}
	if opts.Context < 0 {
		return usagef("--ctx must be ≥ 0 (got %d)", opts.Context)
	}
	path, err := resolveModel(ctx, io, opts.Model)
	if err != nil {
		return err
	}
	m, err := cpu.New().Load(ctx, path, engine.LoadOptions{ContextLength: opts.Context, Threads: opts.Threads})
	if err != nil {
		return err
	}
	defer m.Close()
	info := m.Info()
	emb, ok := m.(engine.Embedder)
	if !ok || !info.Embeds {
		return fmt.Errorf("%s cannot embed on the CPU engine", opts.Model)
	}
	if opts.Dimensions > info.EmbedLength {
		return usagef("--dimensions %d: %s's embeddings have %d components", opts.Dimensions, opts.Model, info.EmbedLength)
	}
	req := engine.EmbedRequest{Truncate: opts.Truncate}
	for _, t := range opts.Texts {
		req.Inputs = append(req.Inputs, engine.EmbedInput{Text: t})
	}
	res, err := emb.Embed(ctx, req)
	if err != nil {
		return err
	}
	doc := embedDoc{Model: opts.Model, Pooling: info.Pooling, Normalized: opts.Normalize || info.EmbedNormalized,
		Tokens: res.PromptTokens, Millis: float64(res.Duration) / float64(time.Millisecond)}
	for i, v := range res.Embeddings {
		if opts.Normalize || opts.Dimensions > 0 {
			if v, err = engine.TruncateDims(v, opts.Dimensions); err != nil {
				return err
			}
			doc.Normalized = true
		}
		doc.Embeddings = append(doc.Embeddings, embedVector{Text: opts.Texts[i], Tokens: res.Tokens[i], Embedding: v})
	}
	io.Logf("embedded %d texts (%d tokens) with %s (%s pooling, %d dimensions) in %s", len(res.Embeddings), res.PromptTokens,
		opts.Model, info.Pooling, len(doc.Embeddings[0].Embedding), res.Duration.Round(time.Millisecond))
	if io.JSON {
		return io.WriteJSON(doc)
	}
	for _, e := range doc.Embeddings {
		parts := make([]string, len(e.Embedding))
		for i, x := range e.Embedding {
			parts[i] = strconv.FormatFloat(float64(x), 'g', -1, 32)
		}
		io.Printf("%s\n", strings.Join(parts, " "))
	}
	return nil
}

// embeddingLine is inspect's line about embedding with a model.
func embeddingLine(e *cpu.EmbeddingSpec) string {
	s := e.Pooling + " pooling"
	if e.Normalize {
		s += ", L2-normalised by its Normalize module"
	}
	if e.EmbedOnly {
		s = "embeds only (an encoder: no generation); " + s
	} else {
		s = "embeds (final-norm hidden states); " + s
	}
	if e.Problem != "" {
		s += "; cannot embed: " + e.Problem
	}
	return s
}
