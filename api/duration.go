package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Forever is the keep_alive of a model that never expires.
const Forever = time.Duration(math.MaxInt64)

// Duration is Ollama's keep_alive: a JSON number of seconds (floats allowed)
// or a Go duration string ("10m", "24h", "0"); any negative value means
// forever, 0 unloads right after the request. Unlike Ollama, a bare
// numeric string ("3600") is read as seconds too, as OLLAMA_KEEP_ALIVE is.
type Duration struct{ time.Duration }

// UnmarshalJSON implements the rules above.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := ParseKeepAlive(s)
		if err != nil {
			return err
		}
		d.Duration = v
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("keep_alive must be a number of seconds or a duration string like \"5m\", not %s", b)
	}
	d.Duration = seconds(f)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) {
	if d.Duration == Forever {
		return []byte(`"-1"`), nil
	}
	return json.Marshal(d.Duration.String())
}

// ParseKeepAlive reads a keep_alive string (also used for --keep-alive).
func ParseKeepAlive(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return seconds(f), nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("keep_alive %q: want seconds or a duration like \"5m\", \"24h\", \"-1\"", s)
	}
	if v < 0 {
		return Forever, nil
	}
	return v, nil
}

func seconds(f float64) time.Duration {
	if f < 0 {
		return Forever
	}
	if f*float64(time.Second) >= float64(math.MaxInt64) {
		return Forever
	}
	return time.Duration(f * float64(time.Second))
}
