package hub

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/edgectl/edgectl/internal/envconfig"
)

// DefaultEndpoint is the public Hub.
const DefaultEndpoint = "https://huggingface.co"

// Config is where the Hub is and where its cache lives. FromEnv reads it the
// way huggingface_hub does, so both tools share one cache and one login.
type Config struct {
	Endpoint string // HF_ENDPOINT, without a trailing slash
	Token    string // HF_TOKEN, else the token file; empty means anonymous
	Home     string // HF_HOME
	CacheDir string // HF_HUB_CACHE (default $HF_HOME/hub)
	Offline  bool   // HF_HUB_OFFLINE: never touch the network, answer from the cache
}

// FromEnv builds a Config from the environment with huggingface_hub's
// defaults and precedence.
func FromEnv() Config {
	return configFrom(envconfig.Get)
}

func configFrom(getenv func(string) string) Config {
	c := Config{Endpoint: strings.TrimRight(getenv("HF_ENDPOINT"), "/")}
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}

	c.Home = expandHome(getenv("HF_HOME"), getenv)
	if c.Home == "" {
		xdg := getenv("XDG_CACHE_HOME")
		if xdg == "" {
			xdg = filepath.Join(homeDir(getenv), ".cache")
		}
		c.Home = filepath.Join(xdg, "huggingface")
	}

	c.CacheDir = expandHome(getenv("HF_HUB_CACHE"), getenv)
	if c.CacheDir == "" {
		c.CacheDir = expandHome(getenv("HUGGINGFACE_HUB_CACHE"), getenv) // older name, still honoured upstream
	}
	if c.CacheDir == "" {
		c.CacheDir = filepath.Join(c.Home, "hub")
	}

	c.Offline = truthy(getenv("HF_HUB_OFFLINE"))

	c.Token = strings.TrimSpace(getenv("HF_TOKEN"))
	if c.Token == "" {
		c.Token = strings.TrimSpace(getenv("HUGGING_FACE_HUB_TOKEN"))
	}
	if c.Token == "" {
		path := expandHome(getenv("HF_TOKEN_PATH"), getenv)
		if path == "" {
			path = filepath.Join(c.Home, "token")
		}
		if b, err := os.ReadFile(path); err == nil {
			c.Token = strings.TrimSpace(string(b))
		}
	}
	return c
}

// truthy mirrors huggingface_hub's _is_true: 1, ON, YES, TRUE in any case.
func truthy(v string) bool {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}

func homeDir(getenv func(string) string) string {
	if h := getenv("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// expandHome expands a leading ~ as Python's os.path.expanduser does.
func expandHome(p string, getenv func(string) string) string {
	if p == "~" {
		return homeDir(getenv)
	}
	if strings.HasPrefix(p, "~/") {
		return filepath.Join(homeDir(getenv), p[2:])
	}
	return p
}
