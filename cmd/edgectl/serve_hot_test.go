package main

import (
	"strings"
	"testing"

	"github.com/edgectl/edgectl/serve"
)

// TestServeHotTempPrecedence: /health's "hot" limit is 85 °C unless the
// config's hot_temp_c or --hot-temp (which wins) says otherwise; a limit
// that cannot be a temperature is a usage error naming both sources.
func TestServeHotTempPrecedence(t *testing.T) {
	clearServeEnv(t)
	const file = `{"hot_temp_c": 75}`
	cases := []struct {
		name   string
		config string
		flags  []string
		want   float64
	}{
		{"default", "", nil, serve.DefaultHotTempC},
		{"config", file, nil, 75},
		{"flag", "", []string{"--hot-temp", "70.5"}, 70.5},
		{"flag over config", file, []string{"--hot-temp", "90"}, 90},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := resolvedServe(t, c.config, c.flags...)
			if err != nil || s.HotTempC != c.want {
				t.Errorf("hot %g (%v), want %g", s.HotTempC, err, c.want)
			}
		})
	}
	for _, bad := range [][]string{{"--hot-temp", "0"}, {"--hot-temp", "-5"}, {"--hot-temp", "400"}} {
		_, err := resolvedServe(t, "", bad...)
		if exitCode(err) != exitUsage || !strings.Contains(err.Error(), "--hot-temp or hot_temp_c") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}
