package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine/upstream"
)

// FileConfig is the --config file (JSON). Flags given on the command line
// override it; it overrides the environment (EDGECTL_HOST, EDGECTL_MODELS,
// …; see docs/environment.md).
type FileConfig struct {
	Models       []string `json:"models,omitempty"`
	Addr         string   `json:"addr,omitempty"`
	APIKey       string   `json:"api_key,omitempty"`
	Origins      []string `json:"origins,omitempty"`
	AllowedHosts []string `json:"allowed_hosts,omitempty"`

	KeepAlive *api.Duration         `json:"keep_alive,omitempty"`
	MaxQueue  int                   `json:"max_queue,omitempty"`
	Watchdog  string                `json:"watchdog,omitempty"`
	HotTempC  *float64              `json:"hot_temp_c,omitempty"` // /health's "hot" limit (°C)
	Lanes     map[string]LaneConfig `json:"lanes,omitempty"`
	Axcl      AxclConfig            `json:"axcl"`
	Upstreams []upstream.Config     `json:"upstreams,omitempty"`
}

// AxclConfig configures the vendor-runtime lane (see engine/axcl.Options).
type AxclConfig struct {
	Command      []string `json:"command,omitempty"`
	Env          []string `json:"env,omitempty"`
	SMI          []string `json:"smi,omitempty"`
	ResetCommand string   `json:"reset_command,omitempty"`
	QuitCommand  string   `json:"quit_command,omitempty"`
	StartTimeout string   `json:"start_timeout,omitempty"`
	Device       int      `json:"device,omitempty"`
}

// DefaultLanes are the lane limits without a config: the NPU lane is
// bounded by the AX650's 7040 MiB CMM pool and runs one request at a time;
// the CPU lane keeps at most three models, like Ollama.
func DefaultLanes() map[string]LaneConfig {
	return map[string]LaneConfig{
		LaneCPU:  {Parallel: 1, MaxLoaded: 3},
		LaneAxcl: {BudgetMB: 7040, Parallel: 1},
	}
}

// ReadConfig reads a --config file strictly: an unknown key is a typo.
func ReadConfig(path string) (*FileConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c FileConfig
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		var se *json.SyntaxError
		if ok := asSyntax(err, &se); ok {
			return nil, fmt.Errorf("%s: invalid JSON at byte %d: %v", path, se.Offset, err)
		}
		return nil, fmt.Errorf("%s: %v (see docs/serve.md for the config keys)", path, err)
	}
	for i, u := range c.Upstreams {
		if u.Name == "" {
			return nil, fmt.Errorf("%s: upstreams[%d] has no name", path, i)
		}
		if u.URL == "" && len(u.Command) == 0 {
			return nil, fmt.Errorf("%s: upstream %q needs url or command", path, u.Name)
		}
	}
	if c.Watchdog != "" {
		if _, err := time.ParseDuration(c.Watchdog); err != nil {
			return nil, fmt.Errorf("%s: watchdog %q: %v", path, c.Watchdog, err)
		}
	}
	if c.Axcl.StartTimeout != "" {
		if _, err := time.ParseDuration(c.Axcl.StartTimeout); err != nil {
			return nil, fmt.Errorf("%s: axcl.start_timeout %q: %v", path, c.Axcl.StartTimeout, err)
		}
	}
	return &c, nil
}

func asSyntax(err error, se **json.SyntaxError) bool {
	s, ok := err.(*json.SyntaxError)
	if ok {
		*se = s
	}
	return ok
}

// ParseSize reads a byte count for --max-body: a number of bytes, or one
// with a unit (KiB, MiB, GiB; K, M, G, KB, MB, GB read as binary too).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	}
	mult := map[string]float64{"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
		"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}[unit]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || v <= 0 || v*mult > 1<<40 {
		return 0, fmt.Errorf("size %q: want a positive number of bytes up to 1 TiB, optionally with KiB, MiB or GiB (e.g. 8MiB)", s)
	}
	return int64(v * mult), nil
}
