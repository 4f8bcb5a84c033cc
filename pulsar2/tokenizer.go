package pulsar2

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/edgectl/edgectl/format/hfconfig"
	"github.com/edgectl/edgectl/format/tokjson"
	"github.com/edgectl/edgectl/internal/atomicfile"
)

// tokenizerFiles are copied into OUT/tokenizer/ with the HF config.json and
// generation_config.json: axllm reads sliding_window/layer_types from
// <dir>/*tokenizer*/config.json, and the serve lane renders chat templates
// from these files.
var tokenizerFiles = []string{
	"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
	"vocab.json", "merges.txt", "tokenizer.model", "chat_template.jinja", "chat_template.json",
	"config.json", "generation_config.json",
}

// copyTokenizer copies the tokenizer files present in modelDir to dst and
// returns their names (preparePlan made sure axllm's own file is there).
func copyTokenizer(modelDir, dst string) ([]string, error) {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, err
	}
	var copied []string
	for _, name := range tokenizerFiles {
		src := filepath.Join(modelDir, name)
		if _, err := os.Stat(src); err != nil {
			continue
		}
		if err := copyFile(src, filepath.Join(dst, name)); err != nil {
			return copied, err
		}
		copied = append(copied, name)
	}
	return copied, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src) // follows HF cache symlinks
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := atomicfile.Create(dst, 0o644)
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := io.Copy(out.File, in); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Commit()
}

// TokenizerType maps a checkpoint to ax-llm's tokenizer_type (axera.md §8);
// doctor and build share it, so doctor warns about what build would refuse.
func TokenizerType(cfg *hfconfig.Config, modelName string) (string, error) {
	mt := strings.ToLower(cfg.ModelType)
	text := strings.ToLower(cfg.Text().ModelType)
	name := strings.ToLower(modelName)
	switch {
	case strings.HasPrefix(mt, "qwen3_vl") || strings.HasPrefix(mt, "qwen3vl"):
		return "Qwen3VL", nil
	case strings.HasPrefix(mt, "qwen3") || strings.HasPrefix(text, "qwen3"):
		return "Qwen3", nil
	case strings.HasPrefix(mt, "qwen2") || strings.HasPrefix(text, "qwen2"):
		return "Qwen2_5", nil
	case strings.Contains(name, "smollm"):
		return "SmolLM2", nil
	case mt == "llama" || text == "llama":
		return "LLaMA", nil
	}
	return "", inputErr(fmt.Sprintf("no ax-llm tokenizer_type known for model_type %q", cfg.ModelType),
		"pass --tokenizer-type (Qwen3, Qwen2_5, Qwen3VL, Gemma4VL, SmolLM2, LLaMA)")
}

// tokenizerTxtMagic starts the tokenizer file axllm reads (the MNN-LLM
// format: "430 <type>"; type 1 is tiktoken-style byte-level BPE).
const tokenizerTxtMagic = "430 "

// isTokenizerTxt reports whether path is an axllm tokenizer file.
func isTokenizerTxt(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, len(tokenizerTxtMagic))
	_, err = io.ReadFull(f, b)
	return err == nil && string(b) == tokenizerTxtMagic
}

// checkTokenizerExport reports whether WriteTokenizerTxt can export path.
func checkTokenizerExport(path string) error {
	tj, err := tokjson.Load(path)
	if err != nil {
		if os.IsNotExist(err) {
			return fmt.Errorf("%s: no tokenizer.json and no *_tokenizer.txt", filepath.Dir(path))
		}
		return err
	}
	if _, err = byteLevelTokens(tj); err != nil && isSentencePieceJSON(tj) {
		_, err = sentencePieces(tj)
	}
	return err
}

// byteLevelTokens returns every token's bytes in id order: added tokens as
// their text, vocabulary tokens decoded from the byte-level alphabet.
func byteLevelTokens(tj *tokjson.File) ([][]byte, error) {
	if tj.Model.Type != "BPE" || len(tj.Model.Vocab) == 0 {
		return nil, fmt.Errorf("%s: model type %q; the axllm tokenizer export handles byte-level BPE only", tj.Path, tj.Model.Type)
	}
	added := map[int]bool{}
	for _, a := range tj.AddedTokens {
		added[a.ID] = true
	}
	toks := tj.Tokens()
	out := make([][]byte, len(toks))
	for id, tok := range toks {
		if added[id] {
			out[id] = []byte(tok)
			continue
		}
		raw, ok := tokjson.ByteLevelDecode(tok)
		if !ok {
			return nil, fmt.Errorf("%s: token %q (id %d) is not byte-level BPE; the axllm tokenizer export handles byte-level BPE only", tj.Path, tok, id)
		}
		out[id] = raw
	}
	return out, nil
}

// WriteTokenizerTxt writes the axllm tokenizer file (url_tokenizer_model)
// for a tokenizer.json: "430 <type>", the counts of special, stop and
// prefix ids, the ids, then the vocabulary. Byte-level BPE is type 1, one
// base64 line per token id with the token's bytes (gaps in the id space are
// written as empty tokens); SentencePiece BPE is type 0 (tokenizer_sp.go).
func WriteTokenizerTxt(tokenizerJSONPath, dst string, stopIDs []int) error {
	tj, err := tokjson.Load(tokenizerJSONPath)
	if err != nil {
		return err
	}
	var pieces []spPiece
	toks, err := byteLevelTokens(tj)
	if err != nil && isSentencePieceJSON(tj) {
		pieces, err = sentencePieces(tj)
	}
	if err != nil {
		return err
	}
	var special []int
	seen := map[int]bool{}
	for _, a := range tj.AddedTokens {
		if a.ID >= 0 && !seen[a.ID] {
			seen[a.ID] = true
			special = append(special, a.ID)
		}
	}
	sort.Ints(special)
	out, err := atomicfile.Create(dst, 0o644)
	if err != nil {
		return err
	}
	defer out.Abort()
	w := bufio.NewWriterSize(out.File, 1<<20)
	typ := 1
	if pieces != nil {
		typ = tokenizerTypeSentencePiece
	}
	fmt.Fprintf(w, "%s%d\n%d %d 0\n", tokenizerTxtMagic, typ, len(special), len(stopIDs))
	for _, id := range append(special, stopIDs...) {
		w.WriteString(strconv.Itoa(id) + " ")
	}
	w.WriteByte('\n')
	if pieces != nil {
		writeSentencePieceVocab(w, pieces)
	} else {
		fmt.Fprintf(w, "%d\n", len(toks))
		for _, raw := range toks {
			w.WriteString(base64.StdEncoding.EncodeToString(raw))
			w.WriteByte('\n')
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return out.Commit()
}

// postConfigFrom derives post_config.json from the model's own sampling
// defaults; greedy models (do_sample false) get top-k 1.
func postConfigFrom(g *hfconfig.GenerationConfig) PostConfig {
	p := PostConfig{
		Temperature: 0.7, RepetitionPenalty: 1.0, PenaltyWindow: 30, TopP: 0.8, TopK: 20,
		EnableTemperature: true, EnableTopKSampling: true, EnableTopPSampling: true,
	}
	if g.Temperature != nil && *g.Temperature > 0 {
		p.Temperature = *g.Temperature
	}
	if g.TopP != nil {
		p.TopP = *g.TopP
		p.EnableTopPSampling = *g.TopP < 1
	}
	if g.TopK != nil {
		p.TopK = *g.TopK
		p.EnableTopKSampling = *g.TopK > 0
	}
	if g.RepetitionPenalty != nil && *g.RepetitionPenalty != 1 {
		p.RepetitionPenalty = *g.RepetitionPenalty
		p.EnableRepetitionPenalty = true
	}
	if g.DoSample != nil && !*g.DoSample {
		p.EnableTemperature, p.EnableTopPSampling = false, false
		p.EnableTopKSampling, p.TopK = true, 1
	}
	return p
}

// readAddBos is tokenizer_config.json's add_bos_token, nil when unset.
func readAddBos(modelDir string) *bool {
	tc, err := tokjson.LoadConfig(modelDir)
	if err != nil {
		return nil
	}
	return tc.AddBOS
}
