package hub

import (
	"os"
	"path/filepath"
	"testing"
)

func TestConfigFromEnv(t *testing.T) {
	home := t.TempDir()
	hfHome := filepath.Join(home, "hf")
	os.MkdirAll(hfHome, 0o755)
	os.WriteFile(filepath.Join(hfHome, "token"), []byte("hf_from_file\n"), 0o600)
	tokenPath := filepath.Join(home, "elsewhere")
	os.WriteFile(tokenPath, []byte("  hf_from_token_path "), 0o600)

	cases := []struct {
		name string
		env  map[string]string
		want Config
	}{
		{"defaults", map[string]string{"HOME": home},
			Config{Endpoint: DefaultEndpoint, Home: filepath.Join(home, ".cache", "huggingface"), CacheDir: filepath.Join(home, ".cache", "huggingface", "hub")}},
		{"xdg", map[string]string{"HOME": home, "XDG_CACHE_HOME": "/x"},
			Config{Endpoint: DefaultEndpoint, Home: "/x/huggingface", CacheDir: "/x/huggingface/hub"}},
		{"hf_home and its token file", map[string]string{"HOME": home, "HF_HOME": hfHome, "HF_ENDPOINT": "http://mirror:8080/", "HF_HUB_OFFLINE": "yes"},
			Config{Endpoint: "http://mirror:8080", Home: hfHome, CacheDir: filepath.Join(hfHome, "hub"), Token: "hf_from_file", Offline: true}},
		{"HF_TOKEN wins over the file; HF_HUB_CACHE wins over HF_HOME", map[string]string{"HOME": home, "HF_HOME": hfHome, "HF_TOKEN": "hf_env", "HF_HUB_CACHE": "~/c", "HF_HUB_OFFLINE": "0"},
			Config{Endpoint: DefaultEndpoint, Home: hfHome, CacheDir: filepath.Join(home, "c"), Token: "hf_env"}},
		{"HF_TOKEN_PATH", map[string]string{"HOME": home, "HF_HOME": hfHome, "HF_TOKEN_PATH": tokenPath},
			Config{Endpoint: DefaultEndpoint, Home: hfHome, CacheDir: filepath.Join(hfHome, "hub"), Token: "hf_from_token_path"}},
	}
	for _, tc := range cases {
		got := configFrom(func(k string) string { return tc.env[k] })
		if got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

func TestNewClientRejectsBadEndpoint(t *testing.T) {
	if _, err := NewClient(Config{Endpoint: "huggingface.co", CacheDir: t.TempDir()}); err == nil {
		t.Error("an endpoint without a scheme was accepted")
	}
}
