package hub

import "testing"

// Expectations follow Python's fnmatch.fnmatch on POSIX, which
// huggingface_hub's allow_patterns/ignore_patterns use.
func TestFnmatch(t *testing.T) {
	cases := []struct {
		pat, name string
		want      bool
	}{
		{"*.json", "config.json", true},
		{"*.json", "tokenizer/sub/tokenizer.json", true}, // * crosses '/'
		{"*.json", "config.jsonl", false},
		{"model-?????-of-*.safetensors", "model-00001-of-00004.safetensors", true},
		{"model-?????-of-*.safetensors", "model-1-of-4.safetensors", false},
		{"onnx/", "onnx/model.onnx", true}, // a directory means everything under it
		{"onnx/", "onnx", false},
		{"[!o]*", "onnx/model.onnx", false},
		{"[!o]*", "config.json", true},
		{"[a-c]onfig.json", "config.json", true},
		{"[]]x", "]x", true},
		{"[x", "[x", true}, // an unclosed set is a literal '['
		{"a.b", "axb", false},
		{"Config.json", "config.json", false}, // case-sensitive on POSIX
		{"ß*.txt", "ßig.txt", true},
		{"*", "", true},
		{"*.bin", "weights/x.bin\n", false},
	}
	for _, tc := range cases {
		ps, err := compilePatterns([]string{tc.pat})
		if err != nil {
			t.Fatalf("%q: %v", tc.pat, err)
		}
		if got := ps[0].match(tc.name); got != tc.want {
			t.Errorf("fnmatch(%q, %q) = %v, want %v", tc.name, tc.pat, got, tc.want)
		}
	}
}

func TestFilterIncludeExclude(t *testing.T) {
	names := []string{"config.json", "model.safetensors", "onnx/model.onnx", "pytorch_model.bin"}
	inc, _ := compilePatterns([]string{"*.json", "*.safetensors", "onnx/"})
	exc, _ := compilePatterns([]string{"onnx/*"})
	got := filter(names, inc, exc)
	if len(got) != 2 || got[0] != "config.json" || got[1] != "model.safetensors" {
		t.Errorf("filter = %v", got)
	}
	if got := filter(names, nil, nil); len(got) != 4 {
		t.Errorf("no patterns keeps everything: %v", got)
	}
}
