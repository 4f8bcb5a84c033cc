package toolcall

import (
	"os"
	"slices"
	"testing"
)

func TestBuiltinTools(t *testing.T) {
	src, err := os.ReadFile("../../format/chattemplate/testdata/templates/meta-llama-Llama-3.1-8B-Instruct.jinja")
	if err != nil {
		t.Fatal(err)
	}
	llama := string(src)
	defs := []byte(`[{"type":"function","function":{"name":"brave_search","parameters":{"type":"object","properties":{"query":{"type":"string"}}}}},
	 {"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{"zone":{"type":"string"}}}}},
	 {"type":"function","function":{"name":"wolfram_alpha","parameters":{"type":"object","properties":{"expr":{"type":"string"}}}}},
	 {"type":"function","function":{"name":"python","parameters":{"type":"object","properties":{"code":{"type":"string"}}}}}]`)
	for _, c := range []struct {
		what string
		f    Format
		tmpl string
		want []string
	}{
		{"llama 3.1", Llama, llama, []string{"brave_search", "python"}}, // wolfram_alpha lacks `query`
		{"no python tag in the template", Llama, "<|start_header_id|>{{ tools }}", nil},
		{"another family", Hermes, llama, nil},
	} {
		if got := BuiltinTools(c.f, c.tmpl, defs); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.what, got, c.want)
		}
	}
	if got := BuiltinTools(Llama, llama, []byte(`{"not":"an array"}`)); got != nil {
		t.Errorf("malformed tools: %q", got)
	}
}
