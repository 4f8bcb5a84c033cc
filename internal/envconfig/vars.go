package envconfig

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// DefaultPort is serve's port when EDGECTL_HOST names none: Ollama's, so
// Ollama clients find edgectl without configuration.
const DefaultPort = "11434"

// serve (and run --host). Precedence for each: a flag given on the command
// line, then the --config file, then the variable, then the flag's default.
var (
	Host = HostVar{define("EDGECTL_HOST", "serve", "127.0.0.1:11434",
		"serve's listen address, as --addr, and the server run --host, ps and rm (api.Client) talk to when set: HOST, HOST:PORT, :PORT or http(s)://HOST:PORT; a missing host is 127.0.0.1, a missing port 11434 (as OLLAMA_HOST)")}
	Models = newList("EDGECTL_MODELS", "serve", string(os.PathListSeparator),
		"serve's --models (also what ls lists and rm may delete): model directories or files, separated by : as in PATH")
	KeepAlive = newString("EDGECTL_KEEP_ALIVE", "serve", "5m",
		"serve's --keep-alive: idle time before a model is unloaded (seconds or a Go duration; -1 forever, 0 after each request)")
	Origins = newList("EDGECTL_ORIGINS", "serve", ",",
		"serve's --origins: browser origins allowed besides local pages, comma-separated, * wildcards")
	AllowedHosts = newList("EDGECTL_ALLOWED_HOSTS", "serve", ",",
		"serve's --allowed-hosts: Host names accepted without an API key besides loopback ones, comma-separated")
	APIKey = newString("EDGECTL_API_KEY", "serve", "",
		"serve's --api-key: every route but /health and the chat page at / requires Authorization: Bearer KEY (or x-api-key); run --host, ps and rm send it (as their --api-key)")
)

// prep.
var CacheDir = newString("EDGECTL_CACHE_DIR", "prep", "the user cache dir's edgectl/prep",
	"prep's step cache (as --cache-dir)")

// cpu engine: tuning and comparison switches, read once per model load
// (engine/cpu settings).
var (
	Mmap = newBool("EDGECTL_MMAP", "cpu engine",
		"1: serve weights from the file mapping instead of anonymous copies (lane key mmap overrides)")
	Head = newString("EDGECTL_HEAD", "cpu engine", "q4x for ternary models, else float",
		"LM head precision: q4x (4-bit blocks, top 32 re-scored from the float rows), q3x or q2x (3- or 2-bit blocks, top 48 or 192 re-scored), q4 (4-bit blocks), q8 (int8 per row) or float (lane key head overrides)")
	PureGo = newBool("EDGECTL_PUREGO", "cpu engine",
		"1: pure-Go kernels only, no assembly (to compare or to debug)")
	NoAVX512 = newBool("EDGECTL_NO_AVX512", "cpu engine",
		"1: amd64 kernels stop at AVX2 even where AVX-512 is present")
	NoDotProd = newBool("EDGECTL_NO_DOTPROD", "cpu engine",
		"1: arm64 kernels do not use the SDOT instruction")
	NativePacking = newBool("EDGECTL_NATIVE_PACKING", "cpu engine",
		"1: keep every ternary matrix in its file layout instead of repacking it at load")
	I2Plain = newBool("EDGECTL_I2_PLAIN", "cpu engine",
		"1: keep I2 rows plain instead of interleaved (to compare)")
)

// hub: huggingface_hub's own variables, read with that library's rules (hub
// applies them), so both tools share one cache and one login.
var (
	HFEndpoint   = newString("HF_ENDPOINT", "hub", "https://huggingface.co", "the Hub's URL (a mirror)")
	HFToken      = newString("HF_TOKEN", "hub", "the token file", "Hub access token (pull --token wins)")
	HFTokenOld   = newString("HUGGING_FACE_HUB_TOKEN", "hub", "", "older name of HF_TOKEN, read when HF_TOKEN is unset")
	HFTokenPath  = newString("HF_TOKEN_PATH", "hub", "$HF_HOME/token", "the token file")
	HFHome       = newString("HF_HOME", "hub", "$XDG_CACHE_HOME/huggingface", "huggingface_hub's home: token file and cache")
	HFHubCache   = newString("HF_HUB_CACHE", "hub", "$HF_HOME/hub", "the Hub cache (snapshots, blobs)")
	HFHubCacheV0 = newString("HUGGINGFACE_HUB_CACHE", "hub", "", "older name of HF_HUB_CACHE, read when HF_HUB_CACHE is unset")
	HFOffline    = newString("HF_HUB_OFFLINE", "hub", "off", "1, ON, YES or TRUE: never touch the network, answer from the cache")
	XDGCacheHome = newString("XDG_CACHE_HOME", "hub", "~/.cache", "where HF_HOME defaults to")
	Home         = newString("HOME", "hub", "", "the home directory a leading ~ stands for")
)

// terminal: whether output is for a person.
var (
	NoColor = newString("NO_COLOR", "terminal", "", "any value: no colour on any stream (progress bars still draw; see no-color.org)")
	CI      = newString("CI", "terminal", "", "any value: a CI run, no progress bars")
	Term    = newString("TERM", "terminal", "", "dumb: no colour and no progress bars")
)

// pulsar2: the native compiler's environment.
var PythonPath = newString("PYTHONPATH", "pulsar2", "",
	"kept after the shim directory when `pulsar2 build --pulsar2-bin` runs an installed compiler")

// rknn lane (engine/rknnrt).
var RKNNPython = newString("EDGECTL_RKNN_PYTHON", "rknn lane", "python3",
	"the Python that runs serve's rknn helper: one that imports rknnlite (rknn-toolkit-lite2) and numpy")

// tests.
var Failpoint = newString("EDGECTL_FAILPOINT", "tests", "",
	"NAME[:N],…: the process SIGKILLs itself the N-th time it reaches a named point (crash tests only)")

// HostVar is EDGECTL_HOST.
type HostVar struct{ Var }

// Get returns the listen address as HOST:PORT, or "" when unset (see
// ParseHost).
func (h HostVar) Get() (string, error) {
	u, err := h.URL()
	if u == nil || err != nil {
		return "", err
	}
	return u.Host, nil
}

// URL returns the address as a base URL for clients (http unless the
// variable says https), or nil when unset (see ParseHost).
func (h HostVar) URL() (*url.URL, error) {
	s := h.Value()
	if s == "" {
		return nil, nil
	}
	u, err := ParseHost(s)
	if err != nil {
		return nil, fmt.Errorf("%s=%w", h.Name, err)
	}
	return u, nil
}

// ParseHost reads an address in the forms OLLAMA_HOST takes: HOST,
// HOST:PORT, :PORT, with an optional http:// or https:// scheme and a
// trailing slash; a missing host is 127.0.0.1 and a missing port 11434.
// It is the one parser of EDGECTL_HOST, serve's listen address and the
// server address clients (run --host) are given. The URL has only Scheme
// ("http" when none is given) and Host (HOST:PORT).
func ParseHost(s string) (*url.URL, error) {
	s = strings.TrimSpace(s)
	bad := func(why string) error {
		return fmt.Errorf("%q: %s (want HOST, HOST:PORT, :PORT or http://HOST:PORT)", s, why)
	}
	t, scheme := s, "http"
	for _, sc := range []string{"http", "https"} {
		if p := sc + "://"; len(t) >= len(p) && strings.EqualFold(t[:len(p)], p) {
			t, scheme = t[len(p):], sc
		}
	}
	t = strings.TrimRight(t, "/")
	if strings.ContainsAny(t, "/?#@ ") {
		return nil, bad("not a host and port")
	}
	host, port := t, DefaultPort
	if hp, p, err := net.SplitHostPort(t); err == nil {
		host, port = hp, p
	} else if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
		host = t[1 : len(t)-1] // [::1] without a port
	} else if strings.Count(t, ":") > 1 {
		host = t // a bare IPv6 address
	} else if strings.Contains(t, ":") {
		return nil, bad(err.Error())
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return nil, bad("port must be a number from 0 to 65535")
	}
	return &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, port)}, nil
}
